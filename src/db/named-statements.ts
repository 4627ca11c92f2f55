/**
 * PostgreSQL named prepared statements for the queries every request runs.
 *
 * Kysely's driver sends each query as an unnamed statement, so PostgreSQL parses and plans it
 * every time. node-postgres prepares a statement once per connection when the query carries a
 * `name`. `preferNamed(sql)` registers the SQL of a hot query (the templates of
 * src/db/prepared.ts, the rate-limit counter's upsert); `useNamedStatements(pool)` makes every
 * pool connection send those as named statements. Only registered texts are named (at most
 * MAX_NAMED), so the set of statements a connection keeps prepared stays small and fixed.
 */
import type pg from 'pg';

const MAX_NAMED = 200;
const names = new Map<string, string>();

export function preferNamed(sql: string): void {
  if (names.has(sql) || names.size >= MAX_NAMED) return;
  names.set(sql, `wallet_${names.size + 1}`);
}

type Query = (...args: unknown[]) => unknown;

export function useNamedStatements(pool: pg.Pool): void {
  pool.on('connect', (client) => {
    const query = client.query.bind(client) as Query;
    (client as unknown as { query: Query }).query = (...args: unknown[]) => {
      const [text, values] = args;
      if (args.length === 2 && typeof text === 'string' && Array.isArray(values)) {
        const name = names.get(text);
        if (name) return query({ name, text, values });
      }
      return query(...args);
    };
  });
}
