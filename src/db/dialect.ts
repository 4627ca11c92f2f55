/**
 * Everything that differs between SQLite and PostgreSQL lives here, so business code never
 * asks which database it is on.
 *
 * Locking. PostgreSQL runs many connections (and possibly many service processes) at once, so
 * a service that must serialise work on one row takes `SELECT ... FOR UPDATE` inside its
 * transaction, and a queue claims rows with `FOR UPDATE SKIP LOCKED`. SQLite has one writer:
 * the driver (group-commit.ts) gives the single connection to one holder at a time for a whole
 * transaction, and every group of transactions opens with `BEGIN IMMEDIATE`, which takes the
 * database's write lock at the start, so two processes can never interleave a read-then-write.
 * On SQLite the row-lock helpers are therefore no-ops: the transaction itself is the lock.
 */
import { PostgresAdapter, sql, type SelectQueryBuilder, type Kysely } from 'kysely';
import type { AnyKysely, Database } from './types.js';

export type DriverName = 'sqlite' | 'postgres';

export interface SqlDialect {
  readonly driver: DriverName;
  /** Row lock for a read-modify-write inside a transaction. */
  forUpdate<DB, TB extends keyof DB, O>(qb: SelectQueryBuilder<DB, TB, O>): SelectQueryBuilder<DB, TB, O>;
  /** Queue claim: lock rows no other worker holds, skipping those that are held. */
  forUpdateSkipLocked<DB, TB extends keyof DB, O>(qb: SelectQueryBuilder<DB, TB, O>): SelectQueryBuilder<DB, TB, O>;
  /** Column type of an exact base-unit amount. */
  readonly amountType: 'numeric(78, 0)' | 'text';
  /** Column type of an auto-incremented primary key. */
  readonly idType: 'bigserial' | 'integer';
  /** Integer type wide enough for millisecond timestamps and block numbers. */
  readonly bigintType: 'bigint' | 'integer';
}

const POSTGRES: SqlDialect = {
  driver: 'postgres',
  forUpdate: (qb) => qb.forUpdate(),
  forUpdateSkipLocked: (qb) => qb.forUpdate().skipLocked(),
  amountType: 'numeric(78, 0)',
  idType: 'bigserial',
  bigintType: 'bigint',
};

const SQLITE: SqlDialect = {
  driver: 'sqlite',
  forUpdate: (qb) => qb,
  forUpdateSkipLocked: (qb) => qb,
  amountType: 'text',
  idType: 'integer',
  bigintType: 'integer',
};

export function sqlDialect(driver: DriverName): SqlDialect {
  return driver === 'postgres' ? POSTGRES : SQLITE;
}

/** The dialect of an executor (the database or an open transaction), read from its adapter. */
export function dialectOf(db: AnyKysely): SqlDialect {
  return db.getExecutor().adapter instanceof PostgresAdapter ? POSTGRES : SQLITE;
}

export type Db = Kysely<Database>;

/** The channel on which committed outbox events are announced to every process (PostgreSQL). */
export const OUTBOX_CHANNEL = 'wallet_outbox';
/** Writes to the tables the read cache keeps (migration 009's triggers; src/db/read-cache.ts). */
export const CACHE_CHANNEL = 'wallet_cache';

/**
 * Announces new outbox work from inside a transaction. On PostgreSQL a NOTIFY issued in a
 * transaction is delivered when (and only if) it commits, to every listening process. SQLite has
 * one process; its in-process signal is enough (see modules/events/outbox.ts).
 */
export async function notifyOutbox(db: AnyKysely): Promise<void> {
  if (dialectOf(db).driver === 'postgres') {
    await sql`select pg_notify(${OUTBOX_CHANNEL}, '')`.execute(db);
  }
}
