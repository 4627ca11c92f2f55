/**
 * PostgreSQL named prepared statements.
 *
 * Kysely's driver sends each query as an unnamed statement, so PostgreSQL parses and plans it
 * every time; on transfer creation planning took more of the server's time than executing
 * (pg_stat_statements with track_planning; BENCHMARKS.md, "Transfer create, one hot wallet"). node-postgres
 * prepares a statement once per connection when the query carries a `name`, and PostgreSQL then
 * keeps its plan (a generic plan after five executions when that is no worse than planning each
 * time).
 *
 * `useNamedStatements(pool)` makes every pool connection send a query text as a named statement
 * from its second use on (texts used once, like DDL, stay unnamed), at most MAX_NAMED texts per
 * process: texts that vary with their data (an `in (…)` list of each length) cannot fill a
 * connection with prepared statements past that. `preferNamed(sql)` names a hot text from its
 * first use (the templates of src/db/prepared.ts, the rate-limit counter's upsert).
 */
import type pg from 'pg';
import { wrapClientQuery } from './pool-query.js';

const MAX_NAMED = 500;
/** Texts seen once and not named yet (forgotten when it grows past MAX_SEEN). */
const MAX_SEEN = 5_000;
const names = new Map<string, string>();
const seen = new Set<string>();

export function preferNamed(sql: string): void {
  if (names.has(sql) || names.size >= MAX_NAMED) return;
  names.set(sql, `wallet_${names.size + 1}`);
}

/** The statement name for `sql`, naming it on its second use while there is room. */
function nameFor(sql: string): string | undefined {
  const name = names.get(sql);
  if (name !== undefined || names.size >= MAX_NAMED) return name;
  if (!seen.has(sql)) {
    if (seen.size >= MAX_SEEN) seen.clear();
    seen.add(sql);
    return undefined;
  }
  seen.delete(sql);
  preferNamed(sql);
  return names.get(sql);
}

export function useNamedStatements(pool: pg.Pool): void {
  wrapClientQuery(pool, (query) => (...args: unknown[]) => {
    const [text, values] = args;
    if (args.length === 2 && typeof text === 'string' && Array.isArray(values)) {
      const name = nameFor(text);
      if (name) return query({ name, text, values });
    }
    return query(...args);
  });
}
