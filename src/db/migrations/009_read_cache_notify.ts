/**
 * PostgreSQL: every write to a table the read cache keeps rows of announces itself.
 *
 * A statement-level trigger on each such table sends `NOTIFY wallet_cache, '<table>'`. PostgreSQL
 * delivers it when the writing transaction commits (and only then), to every listening process,
 * whoever wrote: the service, another instance, the CLI or an operator's psql session. Each
 * process's read cache (src/db/read-cache.ts) drops what it holds from that table on receipt.
 * Rows deleted by a foreign key's ON DELETE CASCADE fire the child table's trigger too.
 *
 * The list is the union of the tables named by `prepare(..., { cache })` in the repositories;
 * test/db/read-cache.pg.test.ts fails if a cached query reads a table without the trigger.
 */
import { sql, type Kysely } from 'kysely';
import type { SqlDialect } from '../dialect.js';

export const NOTIFYING_TABLES = ['access_tokens', 'users', 'wallets', 'networks', 'wallet_tokens', 'wallet_balances'] as const;

export async function up(db: Kysely<any>, d: SqlDialect): Promise<void> {
  if (d.driver !== 'postgres') return;
  await sql`
    CREATE OR REPLACE FUNCTION wallet_cache_notify() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      PERFORM pg_notify('wallet_cache', TG_TABLE_NAME);
      RETURN NULL;
    END $$`.execute(db);
  for (const table of NOTIFYING_TABLES) {
    await sql`CREATE TRIGGER ${sql.id(`${table}_cache_notify`)} AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON ${sql.id(table)} FOR EACH STATEMENT EXECUTE FUNCTION wallet_cache_notify()`.execute(
      db,
    );
  }
}
