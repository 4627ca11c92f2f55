/**
 * createDb(config): the store for SQLite (embedded default) or PostgreSQL (DATABASE_URL).
 */
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import SQLite from 'better-sqlite3';
import pg from 'pg';
import { Kysely, PostgresDialect } from 'kysely';
import type { Config } from '../config.js';
import { ImmediateSqliteDialect, sqlDialect, type Db, type DriverName, type SqlDialect } from './dialect.js';
import type { Database } from './types.js';

export interface Store {
  readonly db: Db;
  readonly dialect: SqlDialect;
  readonly driver: DriverName;
  destroy(): Promise<void>;
}

/** Executor: the database or an open transaction; repositories take one so services can compose. */
export type Executor = Db;

export function sqlitePath(config: Pick<Config, 'dataDir'>): string {
  return join(config.dataDir, 'wallet.sqlite');
}

export function createStore(config: Pick<Config, 'databaseUrl' | 'dataDir' | 'dbPoolSize'>): Store {
  if (config.databaseUrl !== null) {
    // int8 (ids, counts, millisecond timestamps) as JS numbers: all stay far below 2^53.
    // NUMERIC stays a string, so amounts are never squeezed through a float.
    const types = {
      getTypeParser: (oid: number, format?: 'text' | 'binary') =>
        oid === 20 ? (v: string) => Number(v) : pg.types.getTypeParser(oid, format),
    };
    const pool = new pg.Pool({
      connectionString: config.databaseUrl,
      max: config.dbPoolSize,
      types: types as pg.CustomTypesConfig,
      application_name: 'wallet-service',
    });
    // An idle client that errors (server restart) must not crash the process.
    pool.on('error', () => undefined);
    const db = new Kysely<Database>({ dialect: new PostgresDialect({ pool }) });
    return { db, dialect: sqlDialect('postgres'), driver: 'postgres', destroy: () => db.destroy() };
  }
  mkdirSync(config.dataDir, { recursive: true });
  const file = sqlitePath(config);
  const sqlite = new SQLite(file);
  sqlite.pragma('journal_mode = WAL');
  sqlite.pragma('synchronous = NORMAL');
  sqlite.pragma('foreign_keys = ON');
  sqlite.pragma('busy_timeout = 10000');
  const db = new Kysely<Database>({ dialect: new ImmediateSqliteDialect({ database: sqlite }) });
  return { db, dialect: sqlDialect('sqlite'), driver: 'sqlite', destroy: () => db.destroy() };
}
