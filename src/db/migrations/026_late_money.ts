/**
 * Late money: found after the watch, and announced once.
 *
 * - `charge_payments.tx_hash`, `from_address` and `block_hash` may be null: a payment found on a
 *   settled charge's deposit address by its balance after the address's watch ended (the
 *   reconciliation's `after_watch`, docs/reconciliation.md) has no transaction the service saw;
 *   it is recorded at the block its balance was read at. Every other row keeps all three.
 * - `charge_late_announcements`: the late payments `charge.delayed` was written for, by charge,
 *   transaction and the payment's place (`ordinal`) among that transaction's payments to the
 *   charge (a log index changes when the transaction is mined again at another position in a
 *   block; its place among its own logs does not). A reorg deletes the payment rows above its
 *   common ancestor (their `notified` flag with them); this row stays, so a late payment
 *   removed and brought back by a reorg is not announced twice.
 *
 * Compatible with a previous version still running during a rolling restart (docs/operating.md,
 * "Upgrades"): it writes no null there and never reads the new table. SQLite cannot drop a NOT
 * NULL constraint in place: the table is copied into one without it (no table refers to it).
 */
import { sql, type Kysely } from 'kysely';
import type { SqlDialect } from '../dialect.js';

async function relaxSqlite(db: Kysely<any>, d: SqlDialect): Promise<void> {
  const ts = d.bigintType;
  await db.schema
    .createTable('charge_payments_026')
    .addColumn('id', d.idType, (c) => c.primaryKey())
    .addColumn('charge_id', ts, (c) => c.notNull().references('charges.id').onDelete('cascade'))
    .addColumn('network_id', ts, (c) => c.notNull())
    .addColumn('tx_hash', 'varchar(66)')
    .addColumn('log_index', 'integer', (c) => c.notNull())
    .addColumn('from_address', 'varchar(42)')
    .addColumn('amount', d.amountType, (c) => c.notNull())
    .addColumn('block_number', ts, (c) => c.notNull())
    .addColumn('block_hash', 'varchar(66)')
    .addColumn('block_timestamp', ts, (c) => c.notNull())
    .addColumn('confirmed', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('notified', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('created_at', ts, (c) => c.notNull())
    .addColumn('internal', 'integer', (c) => c.notNull().defaultTo(0))
    .execute();
  const columns = sql.raw(
    'id, charge_id, network_id, tx_hash, log_index, from_address, amount, block_number, block_hash, block_timestamp, confirmed, notified, created_at, internal',
  );
  await sql`INSERT INTO charge_payments_026 (${columns}) SELECT ${columns} FROM charge_payments`.execute(db);
  await db.schema.dropTable('charge_payments').execute();
  await db.schema.alterTable('charge_payments_026').renameTo('charge_payments').execute();
  await db.schema
    .createIndex('charge_payments_unique_idx')
    .unique()
    .on('charge_payments')
    .columns(['charge_id', 'tx_hash', 'log_index'])
    .execute();
  await db.schema
    .createIndex('charge_payments_network_idx')
    .on('charge_payments')
    .columns(['network_id', 'confirmed', 'block_number'])
    .execute();
}

export async function up(db: Kysely<any>, d: SqlDialect): Promise<void> {
  if (d.driver === 'sqlite') await relaxSqlite(db, d);
  else
    await sql`ALTER TABLE charge_payments ALTER COLUMN tx_hash DROP NOT NULL, ALTER COLUMN from_address DROP NOT NULL, ALTER COLUMN block_hash DROP NOT NULL`.execute(
      db,
    );

  await db.schema
    .createTable('charge_late_announcements')
    .addColumn('id', d.idType, (c) => c.primaryKey())
    .addColumn('charge_id', d.bigintType, (c) => c.notNull().references('charges.id').onDelete('cascade'))
    .addColumn('tx_hash', 'varchar(66)', (c) => c.notNull())
    .addColumn('ordinal', 'integer', (c) => c.notNull())
    .addColumn('created_at', d.bigintType, (c) => c.notNull())
    .execute();
  await db.schema
    .createIndex('charge_late_announcements_unique_idx')
    .unique()
    .on('charge_late_announcements')
    .columns(['charge_id', 'tx_hash', 'ordinal'])
    .execute();
}
