/**
 * Why a transfer or a payout was held for a person's approval, kept on its row from the moment it
 * is held (written by the insert that records it, in the create's transaction), and afterwards
 * for its history (docs/transactions.md, "Held for approval"; docs/money-out.md, "Approvals").
 *
 * - `transactions.held_rule`: `approval_above` (the amount was over the token's approval
 *   threshold) or `contract_call` (a call whose effect the policy cannot read, to a contract not
 *   on the allowlist, on a wallet with a policy); null for a row never held, and for rows held
 *   before this migration.
 * - `transactions.held_limit`, `held_symbol`, `held_decimals`: for `approval_above`, the
 *   threshold in the token's base units and the token it was set for, as they were at the hold
 *   (a contract call's threshold may be the token its calldata moves, not the row's own); null
 *   otherwise.
 * - `payouts.held_limit`: the `approval_above` of the payout's token that its total was over;
 *   null for a payout never held, and for those held before this migration.
 *
 * Additive: nullable columns; a previous version ignores them.
 */
import type { Kysely } from 'kysely';
import type { SqlDialect } from '../dialect.js';

export async function up(db: Kysely<any>, d: SqlDialect): Promise<void> {
  await db.schema.alterTable('transactions').addColumn('held_rule', 'text').execute();
  await db.schema.alterTable('transactions').addColumn('held_limit', d.amountType).execute();
  await db.schema.alterTable('transactions').addColumn('held_symbol', 'text').execute();
  await db.schema.alterTable('transactions').addColumn('held_decimals', 'integer').execute();
  await db.schema.alterTable('payouts').addColumn('held_limit', d.amountType).execute();
}
