/**
 * A wallet's next nonce in a table of its own (`wallet_nonces`), out of `wallets`.
 *
 * Every transfer moved `wallets.next_nonce`, so every transfer was a write to `wallets`: the read
 * cache (src/db/read-cache.ts) forgot every wallet row it held, in every process (on PostgreSQL
 * the `wallets` trigger NOTIFY fires at each such commit), and the next request of any wallet
 * read its guard row and its keys from the database again (BENCHMARKS.md, "Transfer create, one hot wallet").
 * The nonce is not part of what those rows answer. The wallet's row lock is unchanged: transfer
 * creation still locks the `wallets` row (`lockWalletForCreate`) and reads the nonce under it.
 *
 * Additive, as every migration (docs/operating.md, "Upgrades"): `wallets.next_nonce` stays, no
 * longer read or written by this version, so an instance of the previous version keeps working
 * during a rolling restart and after a rollback. Either version's nonce is only a starting point:
 * allocation takes the larger of it and the node's pending count and skips every nonce a pending
 * transfer holds (src/chain/nonce.ts), so a stale copy in the other place never hands out a
 * nonce twice.
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
}
