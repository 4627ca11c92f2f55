/**
 * Approvals (docs/money-out.md, "Approvals").
 *
 * - `transactions.status` takes `awaiting_approval` (17 characters) and `failure_reason`
 *   `rejected_by_approver` (20): PostgreSQL widens both columns to varchar(32) (a catalogue
 *   change, no rewrite); SQLite does not enforce the length.
 * - `transactions.requested_fees`: the create's fee choice (`{"level":"high"}` or the explicit
 *   fees in wei), kept while the transfer awaits approval so the approval signs with what was
 *   asked for, quoted again at that time; null on every other row.
 *
 * Additive. A previous version does not know `awaiting_approval` rows and reserves nothing for
 * them: finish a rolling upgrade before setting `approval_above` (docs/money-out.md).
 */
import type { Kysely } from 'kysely';
import type { SqlDialect } from '../dialect.js';

export async function up(db: Kysely<any>, d: SqlDialect): Promise<void> {
  if (d.driver === 'postgres') {
    await db.schema
      .alterTable('transactions')
      .alterColumn('status', (c) => c.setDataType('varchar(32)'))
      .execute();
    await db.schema
      .alterTable('transactions')
      .alterColumn('failure_reason', (c) => c.setDataType('varchar(32)'))
      .execute();
  }
  await db.schema.alterTable('transactions').addColumn('requested_fees', 'text').execute();
}
