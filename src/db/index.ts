/**
 * createDb(config): the store for SQLite (embedded default) or PostgreSQL (DATABASE_URL).
 */
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import SQLite from 'better-sqlite3';
import pg from 'pg';
import { Kysely, PostgresDialect } from 'kysely';
import type { Config } from '../config.js';
import { CACHE_CHANNEL, OUTBOX_CHANNEL, sqlDialect, type Db, type DriverName, type SqlDialect } from './dialect.js';
import { registerTableVersions, sqliteDataVersion, TableVersions } from './read-cache.js';
import { listenerGate, trackPoolWrites } from './read-cache-postgres.js';
import { useNamedStatements } from './named-statements.js';
import { GroupCommitSqliteDialect } from './group-commit.js';
import { walSyncer } from './wal-sync.js';
import { listenPostgres } from './listen-postgres.js';
import type { Database } from './types.js';
import { ARRAY_ROWS_MARK } from './prepared.js';
import { coalesceWrites, enablePipelining } from './pipelined.js';

export interface Store {
  readonly db: Db;
  readonly dialect: SqlDialect;
  readonly driver: DriverName;
  /**
   * Calls `fn` when another process commits outbox work (PostgreSQL LISTEN on a connection of
   * its own, reconnecting after a drop); a no-op on SQLite. Returns the unsubscribe.
   */
  listenOutbox(fn: () => void, onError: (err: unknown) => void): () => Promise<void>;
  destroy(): Promise<void>;
}

/** Executor: the database or an open transaction; repositories take one so services can compose. */
export type Executor = Db;

/** A hook a service runs inside the transaction that makes its effect, with the result. */
export type InTransaction<T> = (trx: Executor, result: T) => Promise<void>;

export function sqlitePath(config: Pick<Config, 'dataDir'>): string {
  return join(config.dataDir, 'wallet.sqlite');
}

/**
 * Kysely's SQLite driver prepares every query again; preparing is a measurable share of a
 * request's CPU (measured on the balance route). Prepared statements are reusable, and the
 * single connection is used by one query at a time, so the instance keeps the last `max`
 * distinct statements (least recently used dropped first). A query that begins with
 * `ARRAY_ROWS_MARK` gets a statement in raw mode: its rows are arrays (prepared.ts, `executeArrays`).
 */
function cacheStatements(sqlite: SQLite.Database, max: number, versions: TableVersions): void {
  const prepare = sqlite.prepare.bind(sqlite);
  const cache = new Map<string, SQLite.Statement>();
  sqlite.prepare = ((source: string) => {
    // Kysely's driver runs the statement right after preparing it (src/db/read-cache.ts).
    versions.noteStatement(source);
    let stmt = cache.get(source);
    if (stmt) {
      cache.delete(source);
    } else {
      stmt = prepare(source);
      if (source.startsWith(ARRAY_ROWS_MARK)) stmt.raw(true);
      if (cache.size >= max) cache.delete(cache.keys().next().value!);
    }
    cache.set(source, stmt);
    return stmt;
  }) as SQLite.Database['prepare'];
}

/** PostgreSQL: a pool in pipeline mode, its read cache fed by this process's commits and the others' NOTIFY. */
function postgresStore(url: string, poolSize: number): Store {
  // int8 (ids, counts, millisecond timestamps) as JS numbers: all stay far below 2^53.
  // NUMERIC stays a string, so amounts are never squeezed through a float.
  const types = {
    getTypeParser: (oid: number, format?: 'text' | 'binary') =>
      oid === 20 ? (v: string) => Number(v) : (pg.types.getTypeParser(oid, format) as (v: string) => unknown),
  };
  const pool = new pg.Pool({
    connectionString: url,
    max: poolSize,
    types: types as pg.CustomTypesConfig,
    application_name: 'wallet-service',
    // Statements issued together on one connection are sent together (src/db/pipelined.ts);
    // one at a time, as everywhere else, they go as before.
    pipeline: true,
  });
  // An idle client that errors (server restart) must not crash the process.
  pool.on('error', () => undefined);
  const dialect = new PostgresDialect({ pool });
  const db = new Kysely<Database>({ dialect });
  enablePipelining(db, dialect);
  coalesceWrites(pool);
  // The read cache: this process's writes stamped at commit, other processes' by NOTIFY.
  const gate = listenerGate();
  const versions = new TableVersions(gate.gate);
  trackPoolWrites(pool, versions);
  useNamedStatements(pool);
  registerTableVersions(db, versions);
  const unlistenCache = listenPostgres(url, CACHE_CHANNEL, {
    notify: (table) => versions.stamp(table === '' ? 'all' : [table]),
    onError: () => undefined,
    up: () => gate.up(versions),
    down: gate.down,
  });
  return {
    db,
    dialect: sqlDialect('postgres'),
    driver: 'postgres',
    listenOutbox: (fn, onError) => listenPostgres(url, OUTBOX_CHANNEL, { notify: () => fn(), onError }),
    destroy: async () => {
      await unlistenCache();
      await db.destroy();
    },
  };
}

export function createStore(config: Pick<Config, 'databaseUrl' | 'dataDir' | 'dbPoolSize'>): Store {
  if (config.databaseUrl !== null) return postgresStore(config.databaseUrl, config.dbPoolSize);
  mkdirSync(config.dataDir, { recursive: true });
  const file = sqlitePath(config);
  const sqlite = new SQLite(file);
  sqlite.pragma('journal_mode = WAL');
  // NORMAL, with the WAL synced by the group-commit driver before any transaction is answered
  // (wal-sync.ts): the durability of FULL, whose fsync at every COMMIT held the event loop's
  // thread. NORMAL alone may lose the last commits on a power cut, and a lost commit here is a
  // recorded, signed transaction, a nonce or an idempotent response the client already has.
  sqlite.pragma('synchronous = NORMAL');
  sqlite.pragma('foreign_keys = ON');
  sqlite.pragma('busy_timeout = 10000');
  const dataVersion = sqlite.prepare('PRAGMA data_version').pluck();
  const versions = new TableVersions(sqliteDataVersion(() => dataVersion.get() as number));
  cacheStatements(sqlite, 512, versions);
  const db = new Kysely<Database>({ dialect: new GroupCommitSqliteDialect({ database: sqlite, syncWal: walSyncer(`${file}-wal`) }) });
  registerTableVersions(db, versions);
  return { db, dialect: sqlDialect('sqlite'), driver: 'sqlite', listenOutbox: () => async () => undefined, destroy: () => db.destroy() };
}
