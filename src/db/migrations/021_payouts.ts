/**
 * Payouts (docs/money-out.md, "Payouts").
 *
 * - `payouts`: one row per payout: its wallet and token, the total in base units, the fee level
 *   its items are sent at, and its decision state (`state`: `approval` while a person must
 *   approve it, `sending` once its items may go out, `rejected` / `expired` when they never
 *   will). Its status (processing, completed, ...) is read from its items, never stored twice.
 * - `payout_items`: the items in order (`seq`), each with its reference (unique per wallet when
 *   given), and once its turn came either its transaction (`transaction_id`) or the reason it
 *   was refused (`error`).
 * - `transactions.payout_id`, `transactions.reference`: an item's transaction carries both.
 *
 * Additive: new tables and nullable columns; a previous version ignores them.
 */
import type { Kysely } from 'kysely';
import type { SqlDialect } from '../dialect.js';

export async function up(db: Kysely<any>, d: SqlDialect): Promise<void> {
  const ts = d.bigintType;
  await db.schema
    .createTable('payouts')
    .addColumn('id', d.idType, (c) => c.primaryKey())
    .addColumn('wallet_id', ts, (c) => c.notNull().references('wallets.id').onDelete('cascade'))
    .addColumn('token_id', ts, (c) => c.notNull())
    .addColumn('total', d.amountType, (c) => c.notNull())
    .addColumn('fee_level', 'varchar(10)')
    .addColumn('state', 'varchar(10)', (c) => c.notNull())
    .addColumn('created_at', ts, (c) => c.notNull())
    .addColumn('updated_at', ts, (c) => c.notNull())
    .execute();
  await db.schema.createIndex('payouts_wallet_idx').on('payouts').columns(['wallet_id', 'id']).execute();
  await db.schema.createIndex('payouts_state_idx').on('payouts').columns(['state', 'id']).execute();

  await db.schema
    .createTable('payout_items')
    .addColumn('id', d.idType, (c) => c.primaryKey())
    .addColumn('payout_id', ts, (c) => c.notNull().references('payouts.id').onDelete('cascade'))
    .addColumn('wallet_id', ts, (c) => c.notNull())
    .addColumn('seq', 'integer', (c) => c.notNull())
    .addColumn('address', 'varchar(42)', (c) => c.notNull())
    .addColumn('amount', d.amountType, (c) => c.notNull())
    .addColumn('reference', 'varchar(255)')
    .addColumn('transaction_id', ts)
    .addColumn('error', 'varchar(300)')
    .addColumn('refused_at', ts)
    .execute();
  await db.schema.createIndex('payout_items_order_idx').unique().on('payout_items').columns(['payout_id', 'seq']).execute();
  await db.schema.createIndex('payout_items_reference_idx').unique().on('payout_items').columns(['wallet_id', 'reference']).execute();
  await db.schema.createIndex('payout_items_transaction_idx').unique().on('payout_items').column('transaction_id').execute();

  await db.schema.alterTable('transactions').addColumn('payout_id', ts).execute();
  await db.schema.alterTable('transactions').addColumn('reference', 'varchar(255)').execute();
}
