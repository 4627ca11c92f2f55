/**
 * Permanent deposit addresses (docs/deposit-addresses.md).
 *
 * - `deposit_addresses`: one row per address a wallet hands out for good, under a `reference`
 *   unique per wallet (and an optional `label`). Its address is a `sub_wallets` row (keyless or
 *   keyed, as a charge's); `charge_id` is the row of `charges` (status `deposit`, never listed as
 *   a charge) through which the chain follower watches the address and the charge worker sweeps
 *   it, with the charges' own machinery.
 * - `transactions.deposit_address_id`: a receipt to one of them carries it (and its
 *   `reference` in `transactions.reference`).
 *
 * Additive: a new table, a nullable column and its index; a previous version ignores them (it
 * would show the backing charges, status `deposit`, in its charge list).
 */
import type { Kysely } from 'kysely';
import type { SqlDialect } from '../dialect.js';

export async function up(db: Kysely<any>, d: SqlDialect): Promise<void> {
  const ts = d.bigintType;
  await db.schema
    .createTable('deposit_addresses')
    .addColumn('id', d.idType, (c) => c.primaryKey())
    .addColumn('wallet_id', ts, (c) => c.notNull().references('wallets.id').onDelete('cascade'))
    .addColumn('reference', 'varchar(128)', (c) => c.notNull())
    .addColumn('label', 'varchar(255)')
    .addColumn('sub_wallet_id', ts, (c) => c.notNull())
    .addColumn('charge_id', ts, (c) => c.notNull().references('charges.id').onDelete('cascade'))
    .addColumn('created_at', ts, (c) => c.notNull())
    .execute();
  await db.schema
    .createIndex('deposit_addresses_reference_idx')
    .unique()
    .on('deposit_addresses')
    .columns(['wallet_id', 'reference'])
    .execute();
  await db.schema.createIndex('deposit_addresses_charge_idx').unique().on('deposit_addresses').column('charge_id').execute();
  await db.schema.alterTable('transactions').addColumn('deposit_address_id', ts).execute();
  await db.schema.createIndex('transactions_deposit_address_idx').on('transactions').columns(['deposit_address_id', 'id']).execute();
}
