/**
 * Reconciliation (docs/reconciliation.md).
 *
 * - `transactions.fee_paid`, `charge_sweeps.fee_paid`: what the transfer really cost in native
 *   base units, written where its receipt is stored: gas used × effective gas price, plus the
 *   receipt's L1 data fee where the chain reports one (OP stack `l1Fee`). Null on a row not mined
 *   (and on rows mined before this migration: the reconciliation then falls back to gas used ×
 *   the stored effective price, or reads the sweep's receipt).
 * - `reconciliation_checkpoints`: per wallet, address and token, the block the service's records
 *   are counted from and the chain balance at that block (the last accepted one). No row: block 0,
 *   balance 0 (a fresh key the service generated). `unreconciled` is 1 while the last answer for
 *   it showed a difference (the `/metrics` gauge counts those addresses); `checked_block` and
 *   `checked_balance` are that answer's height and chain balance (a deposit address last seen
 *   empty, reconciled and no longer watched is not read again).
 * - `reconciliation_adjustments`: each accepted difference (signed), with the operator's note.
 *
 * Additive: new nullable columns and new tables only; a previous version ignores them.
 */
import type { Kysely } from 'kysely';
import type { SqlDialect } from '../dialect.js';

export async function up(db: Kysely<any>, d: SqlDialect): Promise<void> {
  const ts = d.bigintType;
  await db.schema.alterTable('transactions').addColumn('fee_paid', d.amountType).execute();
  await db.schema.alterTable('charge_sweeps').addColumn('fee_paid', d.amountType).execute();

  await db.schema
    .createTable('reconciliation_checkpoints')
    .addColumn('id', d.idType, (c) => c.primaryKey())
    .addColumn('wallet_id', ts, (c) => c.notNull().references('wallets.id').onDelete('cascade'))
    .addColumn('address', 'varchar(42)', (c) => c.notNull())
    .addColumn('charge_id', ts)
    .addColumn('token_id', ts, (c) => c.notNull())
    .addColumn('block_number', ts, (c) => c.notNull())
    .addColumn('balance', d.amountType, (c) => c.notNull())
    .addColumn('unreconciled', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('checked_block', ts)
    .addColumn('checked_balance', d.amountType)
    .addColumn('created_at', ts, (c) => c.notNull())
    .addColumn('updated_at', ts, (c) => c.notNull())
    .execute();
  await db.schema
    .createIndex('reconciliation_checkpoints_key_idx')
    .unique()
    .on('reconciliation_checkpoints')
    .columns(['wallet_id', 'address', 'token_id'])
    .execute();
  await db.schema
    .createIndex('reconciliation_checkpoints_unreconciled_idx')
    .on('reconciliation_checkpoints')
    .columns(['unreconciled'])
    .execute();

  await db.schema
    .createTable('reconciliation_adjustments')
    .addColumn('id', d.idType, (c) => c.primaryKey())
    .addColumn('wallet_id', ts, (c) => c.notNull().references('wallets.id').onDelete('cascade'))
    .addColumn('address', 'varchar(42)', (c) => c.notNull())
    .addColumn('token_id', ts, (c) => c.notNull())
    .addColumn('amount', d.amountType, (c) => c.notNull())
    .addColumn('block_number', ts, (c) => c.notNull())
    .addColumn('note', 'varchar(500)', (c) => c.notNull())
    .addColumn('created_at', ts, (c) => c.notNull())
    .execute();
  await db.schema
    .createIndex('reconciliation_adjustments_wallet_idx')
    .on('reconciliation_adjustments')
    .columns(['wallet_id', 'id'])
    .execute();
}
