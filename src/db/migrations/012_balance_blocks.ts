/**
 * The block each cached balance was read at (`wallet_balances.block_number`).
 *
 * Two refreshes of one wallet may race (the watcher after a block, the balance route on a stale
 * cache): each reads the chain, then stores what it read. Stored in the wrong order, the older
 * reading overwrote the newer one and `balance.updated` went backwards. A reading is now taken
 * at a named block and stored only if no reading of a later block is stored
 * (src/modules/wallets/balances.service.ts); the event carries that block.
 *
 * Additive (docs/operating.md, "Upgrades"): a nullable column. A previous version still running
 * during a rolling restart leaves it as it is (it never reads it); a row without a block takes
 * the next reading, whatever its block.
 */
import type { Kysely } from 'kysely';
import type { SqlDialect } from '../dialect.js';

export async function up(db: Kysely<any>, d: SqlDialect): Promise<void> {
  await db.schema.alterTable('wallet_balances').addColumn('block_number', d.bigintType).execute();
}
