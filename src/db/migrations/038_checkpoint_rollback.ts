/**
 * `reconciliation_checkpoints.stale`: 1 when a reorg moved the checkpoint back to the common
 * ancestor of the old and the new chain (the chain follower's rollback): its `balance` is the old
 * chain's at the block it stood at, so the next answer reads the balance at its new block from the
 * chain as it now is. 0 again once an answer moves it.
 *
 * Additive: a column with a default; a previous version ignores it.
 */
import type { Kysely } from 'kysely';
import type { SqlDialect } from '../dialect.js';

export async function up(db: Kysely<any>, _d: SqlDialect): Promise<void> {
  await db.schema
    .alterTable('reconciliation_checkpoints')
    .addColumn('stale', 'integer', (c) => c.notNull().defaultTo(0))
    .execute();
}
