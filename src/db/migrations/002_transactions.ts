/**
 * Transactions: O(1) pagination, the watcher's lookups, and the receipt uniqueness key.
 *
 * `seq` is a dense per-wallet sequence (1, 2, 3, ... in insertion order) and `symbol_seq` the
 * same per wallet and token symbol (`symbol_key`, the upper-cased symbol). Both are assigned
 * under the wallet's row lock when a row is inserted, and renumbered (only the rows after it)
 * when the watcher deletes a receipt orphaned by a reorg. Page N of the newest-first list is
 * then the index range `seq in (total - N*limit, total - (N-1)*limit]`, whatever N is, and the
 * total is the largest `seq`: no OFFSET scan and no count(*) over a million rows. The indexes
 * are not unique: a renumbering UPDATE moves many rows at once and PostgreSQL checks a
 * non-deferrable unique index row by row; the wallet lock is what keeps the numbers unique.
 */
import { sql, type Kysely } from 'kysely';
import type { SqlDialect } from '../dialect.js';

export async function up(db: Kysely<any>, d: SqlDialect): Promise<void> {
  await db.schema
    .alterTable('transactions')
    .addColumn('seq', d.bigintType, (c) => c.notNull().defaultTo(0))
    .execute();
  await db.schema
    .alterTable('transactions')
    .addColumn('symbol_key', 'varchar(64)', (c) => c.notNull().defaultTo(''))
    .execute();
  await db.schema
    .alterTable('transactions')
    .addColumn('symbol_seq', d.bigintType, (c) => c.notNull().defaultTo(0))
    .execute();

  // Backfill rows written before this migration (none in a fresh install).
  await sql`UPDATE transactions SET symbol_key = (SELECT upper(t.symbol) FROM wallet_tokens t WHERE t.id = transactions.token_id)`.execute(
    db,
  );
  await sql`UPDATE transactions SET seq = (SELECT count(*) FROM transactions t2 WHERE t2.wallet_id = transactions.wallet_id AND t2.id <= transactions.id)`.execute(
    db,
  );
  await sql`UPDATE transactions SET symbol_seq = (SELECT count(*) FROM transactions t2 WHERE t2.wallet_id = transactions.wallet_id AND t2.symbol_key = transactions.symbol_key AND t2.id <= transactions.id)`.execute(
    db,
  );

  await db.schema.createIndex('transactions_wallet_seq_idx').on('transactions').columns(['wallet_id', 'seq']).execute();
  await db.schema
    .createIndex('transactions_wallet_symbol_seq_idx')
    .on('transactions')
    .columns(['wallet_id', 'symbol_key', 'symbol_seq'])
    .execute();
  // Reservations and nonce allocation (a wallet's transfers from a nonce on), pending rows of a
  // wallet, and the reorg roll-back (rows of a wallet above a block).
  await db.schema.createIndex('transactions_wallet_type_nonce_idx').on('transactions').columns(['wallet_id', 'type', 'nonce']).execute();
  await db.schema.createIndex('transactions_wallet_status_idx').on('transactions').columns(['wallet_id', 'status']).execute();
  await db.schema.createIndex('transactions_wallet_block_idx').on('transactions').columns(['wallet_id', 'block_number']).execute();

  // Only a receipt must be unique per (wallet, chain transaction, log). Two outgoing rows may
  // share a hash: a transfer that failed without ever being mined frees its nonce, and the
  // same request made again signs (deterministic signatures) to the very same bytes.
  await db.schema.dropIndex('transactions_wallet_hash_log_uq').execute();
  await sql`CREATE UNIQUE INDEX transactions_receipt_uq ON transactions (wallet_id, tx_hash, log_index) WHERE type = 'receipt'`.execute(db);
}
