/**
 * Exchange rates for price charges (docs/prices.md).
 *
 * - `rates`: the manual rates (`rate:set`), one per network, token symbol and currency;
 *   `network_id` 0 is a rate for every network (a network's own rate wins over it). `value` is
 *   the decimal string as set (the currency's units for one whole token).
 * - `networks.price_feeds`: the Chainlink feeds a NETWORKS_FILE entry (or the devnet's start)
 *   names, a JSON object `{"ETH/USD": address}`; a preset's own feeds are read from the preset.
 *
 * Additive: a new table and a nullable column; a previous version ignores both.
 */
import type { Kysely } from 'kysely';
import type { SqlDialect } from '../dialect.js';

export async function up(db: Kysely<any>, d: SqlDialect): Promise<void> {
  const ts = d.bigintType;
  await db.schema
    .createTable('rates')
    .addColumn('id', d.idType, (c) => c.primaryKey())
    .addColumn('network_id', ts, (c) => c.notNull())
    .addColumn('symbol', 'varchar(20)', (c) => c.notNull())
    .addColumn('currency', 'varchar(3)', (c) => c.notNull())
    .addColumn('value', 'varchar(80)', (c) => c.notNull())
    .addColumn('created_at', ts, (c) => c.notNull())
    .addColumn('updated_at', ts, (c) => c.notNull())
    .execute();
  await db.schema.createIndex('rates_pair_idx').unique().on('rates').columns(['network_id', 'symbol', 'currency']).execute();
  await db.schema.alterTable('networks').addColumn('price_feeds', 'text').execute();
}
