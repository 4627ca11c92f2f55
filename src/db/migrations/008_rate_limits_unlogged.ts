/**
 * The rate-limit counters' table on PostgreSQL, UNLOGGED.
 *
 * rate-limiter-flexible keeps one row per (key, window) and updates it on every request. In a
 * logged table each of those updates is a commit that waits for the WAL to reach the disk, which
 * capped an authenticated route near the machine's fsync rate (BENCHMARKS.md, "GET balance").
 * An UNLOGGED table writes no WAL: its commits do not wait. What it gives up is acceptable for
 * counters that live two minutes: after a crash of PostgreSQL the table comes back empty (every
 * window restarts), and a standby does not have it (after a failover the windows restart too).
 *
 * Same columns as the table rate-limiter-flexible would create (`key`, `points`, `expire`); a
 * table it already created is switched to UNLOGGED. SQLite has no such table (memory counters).
 */
import { sql, type Kysely } from 'kysely';
import type { SqlDialect } from '../dialect.js';

export async function up(db: Kysely<any>, d: SqlDialect): Promise<void> {
  if (d.driver !== 'postgres') return;
  await sql`CREATE UNLOGGED TABLE IF NOT EXISTS rate_limits (key varchar(255) PRIMARY KEY, points integer NOT NULL DEFAULT 0, expire bigint)`.execute(
    db,
  );
  await sql`ALTER TABLE rate_limits SET UNLOGGED`.execute(db);
}
