/**
 * A payout reserves what it has not sent yet (docs/money-out.md, "Payouts",
 * "Approvals"): while it awaits approval or is being sent, each item with neither a transaction
 * nor a refusal reserves its amount and the maximum fee of one item quoted at the create,
 * against the wallet's balance, as a held transfer reserves its own.
 *
 * - `payouts.item_fee_reserved`: that maximum fee (wei). The payouts created before have `0`:
 *   their unsent items reserve their amounts only.
 * - `payout_items_unsent_idx`: the wallet's unsent items, read with every create of the wallet
 *   (src/modules/transactions/transactions.repository.ts, `outgoingRows`); partial, so the items
 *   already sent or refused, almost all of them, are not in it. Its key names the two columns
 *   the condition reads as well: SQLite without statistics otherwise takes `transaction_id IS
 *   NULL` on the unique `payout_items_transaction_idx` for one row, and reads every unsent or
 *   refused item of every wallet.
 *
 * Additive: a column with a default and an index; a previous version ignores both.
 */
import { sql, type Kysely } from 'kysely';
import type { SqlDialect } from '../dialect.js';

export async function up(db: Kysely<any>, d: SqlDialect): Promise<void> {
  await db.schema
    .alterTable('payouts')
    .addColumn('item_fee_reserved', d.amountType, (c) => c.notNull().defaultTo('0'))
    .execute();
  await db.schema
    .createIndex('payout_items_unsent_idx')
    .on('payout_items')
    .columns(['wallet_id', 'transaction_id', 'error'])
    .where(sql.ref('transaction_id'), 'is', null)
    .where(sql.ref('error'), 'is', null)
    .execute();
}
