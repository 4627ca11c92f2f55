/**
 * Refunds (docs/money-out.md, "Refunds").
 *
 * - `refunds`: one row per refund of a charge, in the charge's token and base units. `address`
 *   is set when it is known: at create, or when the payer claims it (`claim_expires_at` is then
 *   the end of the claim's life, null for a refund created with an address).
 * - `transactions.refund_id`: the refund a transfer pays (unique: one transfer per refund). A
 *   refund's status is read from its transfer (pending, confirmed, failed), never stored twice.
 *
 * Additive: a new table, a nullable column and its index; a previous version ignores them.
 */
import type { Kysely } from 'kysely';
import type { SqlDialect } from '../dialect.js';

export async function up(db: Kysely<any>, d: SqlDialect): Promise<void> {
  const ts = d.bigintType;
  await db.schema
    .createTable('refunds')
    .addColumn('id', d.idType, (c) => c.primaryKey())
    .addColumn('uuid', 'varchar(36)', (c) => c.notNull().unique())
    .addColumn('charge_id', ts, (c) => c.notNull().references('charges.id').onDelete('cascade'))
    .addColumn('wallet_id', ts, (c) => c.notNull())
    .addColumn('token_id', ts, (c) => c.notNull())
    .addColumn('amount', d.amountType, (c) => c.notNull())
    .addColumn('address', 'varchar(42)')
    .addColumn('reason', 'varchar(500)')
    .addColumn('claim_expires_at', ts)
    .addColumn('created_at', ts, (c) => c.notNull())
    .addColumn('updated_at', ts, (c) => c.notNull())
    .execute();
  await db.schema.createIndex('refunds_charge_idx').on('refunds').columns(['charge_id', 'id']).execute();
  await db.schema.alterTable('transactions').addColumn('refund_id', ts).execute();
  await db.schema.createIndex('transactions_refund_idx').unique().on('transactions').column('refund_id').execute();
}
