/**
 * `transactions.stuck_reason`: the node's words when every endpoint refused a pending transfer's
 * re-send for a reason other than its fee (docs/transactions.md, "Several providers: the finality
 * rule"): the transfer is `stuck` at once with that reason, and `transaction.stuck` is emitted once
 * (the column is null until then, which is what makes the event once).
 *
 * Additive: a nullable column; a previous version ignores it.
 */
import type { Kysely } from 'kysely';
import type { SqlDialect } from '../dialect.js';

export async function up(db: Kysely<any>, _d: SqlDialect): Promise<void> {
  await db.schema.alterTable('transactions').addColumn('stuck_reason', 'text').execute();
}
