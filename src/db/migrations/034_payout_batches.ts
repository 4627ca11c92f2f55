/**
 * Batched payouts (docs/money-out.md, "Batched payouts"): a payout's ERC-20 items sent together
 * in one call of the network's Sweeper. That call is an ordinary contract transaction of the
 * wallet (the batch: nonce, signed versions, fee); each item sent in it keeps its own
 * `transfer` row, which names the batch (`batch_tx_id`) and its 0-based place in the call
 * (`batch_index`). An item's row has no nonce and nothing signed: the chain follower decides the
 * batch, and the item rows follow it (payouts.batches.ts).
 *
 * Additive (docs/operating.md, "Upgrades"): a previous version never writes item rows and never
 * reads the new columns.
 */
import type { Kysely } from 'kysely';
import type { SqlDialect } from '../dialect.js';

export async function up(db: Kysely<any>, _d: SqlDialect): Promise<void> {
  await db.schema.alterTable('transactions').addColumn('batch_tx_id', 'bigint').execute();
  await db.schema.alterTable('transactions').addColumn('batch_index', 'integer').execute();
  await db.schema.createIndex('transactions_batch_idx').on('transactions').columns(['batch_tx_id', 'batch_index']).execute();
}
