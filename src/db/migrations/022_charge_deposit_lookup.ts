/**
 * An index on `charges.sub_wallet_id`: with more open charges than a block's log query can filter
 * on, the chain follower looks a block's recipients up by address (`sub_wallets.address`, already
 * indexed) and from there their charge (src/modules/charges/charges.chain-sync.ts, "Watched").
 *
 * Additive: an index only; a previous version does not notice it.
 */
import type { Kysely } from 'kysely';
import type { SqlDialect } from '../dialect.js';

export async function up(db: Kysely<any>, _d: SqlDialect): Promise<void> {
  await db.schema.createIndex('charges_sub_wallet_idx').on('charges').column('sub_wallet_id').execute();
}
