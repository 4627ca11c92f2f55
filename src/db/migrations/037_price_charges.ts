/**
 * Price charges (docs/prices.md): a charge priced in a currency, payable in any of the tokens
 * quoted at its creation.
 *
 * - `charges.price_amount`, `charges.price_currency`: the price (a decimal string of at most 2
 *   places, and `USD`, `EUR` or `GBP`); NULL for a charge made with `amount` and `token`.
 * - `charges.quote_tokens`: the quoted tokens as the chain follower matches payments against
 *   them, JSON `[{"token_id", "contract"}]` (a copy of the quotes' tokens, fixed at creation like
 *   them: every block reads it with the watched addresses, without a join per quote).
 * - `charges.paid_fraction`: the counted payments, each divided by its token's quote, as an
 *   18-place fixed-point amount (1 is 10^18); the settlement writes it with `paid_amount`.
 * - `charge_quotes`: a price charge's quotes, in order (`position` 0 is the charge's `token_id`
 *   and `amount`): the token, the amount of it that pays the price, and the rate it was read at.
 * - `charge_payments.token_id`: the token a payment was made in (the charge's own before this
 *   migration, which it writes into the rows already there).
 *
 * Additive: a new table and nullable columns; a previous version ignores them.
 */
import { sql, type Kysely } from 'kysely';
import type { SqlDialect } from '../dialect.js';

export async function up(db: Kysely<any>, d: SqlDialect): Promise<void> {
  const ts = d.bigintType;
  await db.schema.alterTable('charges').addColumn('price_amount', 'varchar(40)').execute();
  await db.schema.alterTable('charges').addColumn('price_currency', 'varchar(3)').execute();
  await db.schema.alterTable('charges').addColumn('quote_tokens', 'text').execute();
  await db.schema.alterTable('charges').addColumn('paid_fraction', d.amountType).execute();
  await db.schema
    .createTable('charge_quotes')
    .addColumn('id', d.idType, (c) => c.primaryKey())
    .addColumn('charge_id', ts, (c) => c.notNull())
    .addColumn('position', 'integer', (c) => c.notNull())
    .addColumn('token_id', ts, (c) => c.notNull())
    .addColumn('amount', d.amountType, (c) => c.notNull())
    .addColumn('rate', 'varchar(80)', (c) => c.notNull())
    .addColumn('rate_source', 'varchar(20)', (c) => c.notNull())
    .addColumn('rate_at', ts, (c) => c.notNull())
    .execute();
  await db.schema.createIndex('charge_quotes_charge_idx').unique().on('charge_quotes').columns(['charge_id', 'position']).execute();
  await db.schema.alterTable('charge_payments').addColumn('token_id', ts).execute();
  await sql`UPDATE charge_payments SET token_id = (SELECT c.token_id FROM charges c WHERE c.id = charge_payments.charge_id)`.execute(db);
}
