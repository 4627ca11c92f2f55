/**
 * Exact read caching on SQLite: a query's rows are kept until a table they come from is written.
 *
 * Every authenticated request reads the same few rows (the bearer token and its user, the wallet
 * of a `{wallet}` route, the wallet's tokens with their cached balances), and on SQLite running
 * those statements was the largest share of a request's CPU (BENCHMARKS.md, "GET balance").
 * A cache is only acceptable here if it is never stale, so it is driven by the writes
 * themselves, not by a time to live:
 *
 * - Every statement this process runs passes through the store's `prepare` (src/db/index.ts),
 *   which calls `noteStatement` with its SQL just before it runs. An INSERT or UPDATE stamps its
 *   table with a new tick; anything else that may write (DELETE, whose foreign keys cascade,
 *   REPLACE, DDL, anything not recognised) stamps every table. Plain SELECTs and transaction
 *   control stamp nothing. A write inside a transaction that is rolled back still stamps
 *   (a needless miss, never a stale hit).
 * - Other processes on the same file (the CLI adding a network, say; SQLite runs one service
 *   process, docs/operating.md) are seen through `PRAGMA data_version`, which changes whenever
 *   another connection commits; any change drops everything. Reading it costs as much as a small
 *   query (it opens a read transaction on the WAL), so it is read again only when
 *   at least DATA_VERSION_CHECK_MS has passed since the last time: another process's commit is
 *   seen within that millisecond. This process's own writes are seen at once.
 * - An entry remembers the tick taken before its query ran; it is served while no table it
 *   reads has a later stamp. Rows are frozen, so a caller cannot alter what the next one gets.
 *
 * Only the store's own handle is cached: reads inside a transaction (another Kysely instance)
 * always go to the database. PostgreSQL has no such cache: other processes write the same
 * tables, and nothing short of a query tells this one at once (a logout must be seen by every
 * process on its very next request).
 */
import type { AnyKysely } from './types.js';

/** How long a reading of PRAGMA data_version is trusted (another process's commit is seen after it). */
export const DATA_VERSION_CHECK_MS = 1;

const LEADING_COMMENTS = /^(\s*\/\*[^]*?\*\/)+/;
const READ_ONLY = /^\s*(select|begin|commit|rollback|savepoint|release|end)\b/i;
const INSERT_OR_UPDATE = /^\s*(?:insert\s+into|update)\s+"?([a-z_][a-z0-9_]*)"?/i;
const WRITE_WORD = /\b(insert|update|delete|replace|create|alter|drop)\b/i;

/** Which tables a statement may change: none, some, or every table (`'all'`). */
export function writtenTables(source: string): readonly string[] | 'all' {
  const sql = source.replace(LEADING_COMMENTS, '');
  if (READ_ONLY.test(sql)) return [];
  if (/^\s*with\b/i.test(sql)) return withStatementTables(sql);
  const m = INSERT_OR_UPDATE.exec(sql);
  return m ? [m[1]!.toLowerCase()] : 'all';
}

/**
 * What the cache learns from outside this process before each read: `refresh(versions)` may
 * stamp every table (`versions.stampAll()`) and answers whether cached rows may be served now.
 */
export type ExternalChanges = (versions: TableVersions) => boolean;

/** A WITH statement: the tables its INSERT and UPDATE parts name; any other write: every table. */
function withStatementTables(sql: string): readonly string[] | 'all' {
  if (!WRITE_WORD.test(sql)) return [];
  if (/\b(delete|replace|create|alter|drop)\b/i.test(sql)) return 'all';
  const tables = new Set<string>();
  for (const m of sql.matchAll(/\b(?:insert\s+into|update)\s+"?([a-z_][a-z0-9_]*)"?/gi)) {
    const t = m[1]!.toLowerCase();
    if (t !== 'set') tables.add(t); // `ON CONFLICT … DO UPDATE SET`
  }
  return tables.size > 0 ? [...tables] : 'all';
}

export class TableVersions {
  private tick = 1;
  /** Tick of the last write that may have touched every table. */
  private allAt = 0;
  private readonly stamps = new Map<string, number>();
  private readonly effects = new Map<string, readonly string[] | 'all'>();

  constructor(private readonly refresh: ExternalChanges) {}

  /** The tables a statement may change (remembered by SQL text). */
  effectOf(sql: string): readonly string[] | 'all' {
    let effect = this.effects.get(sql);
    if (effect === undefined) {
      effect = writtenTables(sql);
      if (this.effects.size < 4096) this.effects.set(sql, effect);
    }
    return effect;
  }

  /** SQLite: called with each statement's SQL just before it runs (one connection, in order). */
  noteStatement(sql: string): void {
    this.stamp(this.effectOf(sql));
  }

  stamp(effect: Iterable<string> | 'all'): void {
    if (effect === 'all') this.stampAll();
    else for (const table of effect) this.stamps.set(table, ++this.tick);
  }

  stampAll(): void {
    this.allAt = ++this.tick;
  }

  /** The tick to remember for a read about to run, or null when the cache must not be used now. */
  now(): number | null {
    return this.refresh(this) ? this.tick : null;
  }

  /** Whether rows read at tick `at` from `tables` are still what the tables hold. */
  unchangedSince(at: number, tables: readonly string[]): boolean {
    if (this.allAt > at) return false;
    for (const t of tables) if ((this.stamps.get(t) ?? 0) > at) return false;
    return true;
  }
}

/**
 * SQLite: other connections' commits through PRAGMA data_version (`read`), read again only once
 * DATA_VERSION_CHECK_MS has passed since the last reading.
 */
export function sqliteDataVersion(read: () => number): ExternalChanges {
  let seen = read();
  let checkedAt = performance.now();
  return (versions) => {
    const t = performance.now();
    if (t - checkedAt < DATA_VERSION_CHECK_MS) return true;
    checkedAt = t;
    const v = read();
    if (v !== seen) {
      seen = v;
      versions.stampAll();
    }
    return true;
  };
}

const registry = new WeakMap<AnyKysely, TableVersions>();

export function registerTableVersions(db: AnyKysely, versions: TableVersions): void {
  registry.set(db, versions);
}

/** The versions of the store's own handle; undefined for a transaction or PostgreSQL. */
export function tableVersionsOf(db: AnyKysely): TableVersions | undefined {
  return registry.get(db);
}

interface Entry<R> {
  at: number;
  rows: readonly R[];
}

/** Rows of one query by argument list, at most `max` entries (the oldest go first). */
export class ReadCache<R> {
  private readonly entries = new Map<string, Entry<R>>();

  constructor(
    private readonly tables: readonly string[],
    private readonly max: number,
  ) {}

  async read(versions: TableVersions, key: string, run: () => Promise<R[]>): Promise<readonly R[]> {
    const at = versions.now();
    if (at === null) return run();
    const hit = this.entries.get(key);
    if (hit && versions.unchangedSince(hit.at, this.tables)) return hit.rows;
    const rows = Object.freeze((await run()).map((r) => Object.freeze(r)));
    // Kept only if nothing was written while the query waited for the connection and ran.
    if (versions.unchangedSince(at, this.tables)) {
      this.entries.delete(key);
      if (this.entries.size >= this.max) this.entries.delete(this.entries.keys().next().value!);
      this.entries.set(key, { at, rows });
    }
    return rows;
  }
}
