/**
 * A wallet's next nonce in a table of its own (`wallet_nonces`), out of `wallets`.
 *
 * Every transfer moved `wallets.next_nonce`, so every transfer was a write to `wallets`: the read
 * cache (src/db/read-cache.ts) forgot every wallet row it held, in every process (on PostgreSQL
 * the `wallets` trigger NOTIFY fires at each such commit), and the next request of any wallet
 * read its guard row and its keys from the database again (BENCHMARKS.md, "Transfer creation").
 * The nonce is not part of what those rows answer. The wallet's row lock is unchanged: transfer
 * creation still locks the `wallets` row (`lockWalletForCreate`) and reads the nonce under it.
 */
import { sql, type Kysely } from 'kysely';
import type { SqlDialect } from '../dialect.js';

export async function up(db: Kysely<any>, d: SqlDialect): Promise<void> {
  await db.schema
    .createTable('wallet_nonces')
    .addColumn('wallet_id', d.bigintType, (c) => c.primaryKey().references('wallets.id').onDelete('cascade'))
    .addColumn('next_nonce', d.bigintType)
    .execute();
  await sql`INSERT INTO wallet_nonces (wallet_id, next_nonce) SELECT id, next_nonce FROM wallets WHERE next_nonce IS NOT NULL`.execute(db);
  await db.schema.alterTable('wallets').dropColumn('next_nonce').execute();
}
