/**
 * A contract call to one of the wallet's token contracts is policed as that token (docs/money-out.md,
 * "Contract calls: policed by what they do"; src/modules/policies/token-calls.ts): its row keeps what the
 * policy decoded from its calldata, so the token's daily limit counts it and later creates
 * reserve what it takes from the balance.
 *
 * - `transactions.call_token_id`: the wallet token the call moves or approves; null for every
 *   other row.
 * - `transactions.call_amount`: the amount the policy counted (a transfer's, or an approval's
 *   allowance), toward the token's daily limit.
 * - `transactions.call_spend`: what the call takes from the wallet's own token balance (a
 *   `transfer`, or a `transferFrom` from the wallet; 0 for an approval), reserved while the call
 *   reserves its fee.
 * - `transactions_call_token_idx`: the daily limit's read of those rows; partial, as almost no
 *   row is a token call.
 *
 * Additive: nullable columns and a partial index; a previous version ignores them.
 */
import { sql, type Kysely } from 'kysely';
import type { SqlDialect } from '../dialect.js';

export async function up(db: Kysely<any>, d: SqlDialect): Promise<void> {
  await db.schema.alterTable('transactions').addColumn('call_token_id', 'integer').execute();
  await db.schema.alterTable('transactions').addColumn('call_amount', d.amountType).execute();
  await db.schema.alterTable('transactions').addColumn('call_spend', d.amountType).execute();
  await db.schema
    .createIndex('transactions_call_token_idx')
    .on('transactions')
    .columns(['wallet_id', 'call_token_id', 'created_at'])
    .where(sql.ref('call_token_id'), 'is not', null)
    .execute();
}
