/**
 * Finality of outgoing transactions (docs/transactions.md, "When a transfer is final").
 *
 * - `failure_reason`: why a failed transaction failed (`reverted`, `dropped`, `cancelled`,
 *   `rejected`), null otherwise. Rows failed before this migration get the reason their
 *   fields show: mined (a receipt with status 0) is `reverted`, never mined is `rejected`.
 * - `broadcast_attempts`: sends attempted so far. Only a refusal of the first one (nothing was
 *   ever sent anywhere) may end a transaction at once; after that it ends when its nonce is
 *   used at confirmed depth.
 * - `next_check_at`, `check_count`: the re-send queue's schedule per transaction (backoff with
 *   a cap; the watcher takes due rows round robin over wallets).
 * - `stuck_at`: when the watcher first saw it pending longer than TX_STUCK_AFTER_S (logged once).
 * - `broadcast_kind`: what the current `tx_hash` is: the `original`, a `speed-up` or a `cancel`
 *   (a mined cancel fails the transaction as `cancelled`).
 * - `replaced_hashes`: the hashes of the earlier versions, comma-separated, oldest first (the
 *   API's `replaced_hashes`, read with the row).
 * - `transaction_broadcasts`: every signed version of a replaced transaction (same
 *   nonce), so whichever of them mines is recognised; the API's `replaced_hashes`.
 */
import { sql, type Kysely } from 'kysely';
import type { SqlDialect } from '../dialect.js';

export async function up(db: Kysely<any>, d: SqlDialect): Promise<void> {
  const ts = d.bigintType;
  await db.schema.alterTable('transactions').addColumn('failure_reason', 'varchar(16)').execute();
  await db.schema
    .alterTable('transactions')
    .addColumn('broadcast_attempts', 'integer', (c) => c.notNull().defaultTo(0))
    .execute();
  await db.schema.alterTable('transactions').addColumn('next_check_at', ts).execute();
  await db.schema
    .alterTable('transactions')
    .addColumn('check_count', 'integer', (c) => c.notNull().defaultTo(0))
    .execute();
  await db.schema.alterTable('transactions').addColumn('stuck_at', ts).execute();
  await db.schema
    .alterTable('transactions')
    .addColumn('broadcast_kind', 'varchar(16)', (c) => c.notNull().defaultTo('original'))
    .execute();
  await db.schema.alterTable('transactions').addColumn('replaced_hashes', 'text').execute();

  await sql`UPDATE transactions SET failure_reason = CASE WHEN block_number IS NULL THEN 'rejected' ELSE 'reverted' END WHERE status = 'failed'`.execute(
    db,
  );
  // Rows recorded before: every one was sent at least once (or tried); none is a first send any more.
  await sql`UPDATE transactions SET broadcast_attempts = 1 WHERE type <> 'receipt'`.execute(db);

  await db.schema
    .createTable('transaction_broadcasts')
    .addColumn('id', d.idType, (c) => c.primaryKey())
    .addColumn('transaction_id', ts, (c) => c.notNull().references('transactions.id').onDelete('cascade'))
    .addColumn('tx_hash', 'varchar(66)', (c) => c.notNull())
    .addColumn('raw_tx', 'text', (c) => c.notNull())
    .addColumn('kind', 'varchar(16)', (c) => c.notNull())
    .addColumn('gas', d.amountType, (c) => c.notNull())
    .addColumn('gas_price', d.amountType, (c) => c.notNull())
    .addColumn('tx_kind', 'varchar(16)', (c) => c.notNull().defaultTo('legacy'))
    .addColumn('max_priority_fee_per_gas', d.amountType)
    .addColumn('created_at', ts, (c) => c.notNull())
    .execute();
  await db.schema.createIndex('transaction_broadcasts_tx_idx').on('transaction_broadcasts').columns(['transaction_id', 'id']).execute();
  await db.schema.createIndex('transaction_broadcasts_hash_idx').on('transaction_broadcasts').column('tx_hash').execute();
  // The re-send queue: pending outgoing rows by due time.
  await db.schema.createIndex('transactions_status_next_check_idx').on('transactions').columns(['status', 'next_check_at']).execute();
}
