/**
 * Charge payments, sweeps and the chain time the charge worker settles against.
 *
 * - `charge_payments`: every transfer of the charge's token to its deposit address, as the chain
 *   follower saw it in a block (native: `log_index` -1; ERC-20: the `Transfer` log's index).
 *   Unique per (charge, transaction, log). `confirmed` turns 1 once the block has the network's
 *   confirmations; `notified` once its `charge.delayed` event is written (late payments only).
 *   Rows above a reorg's common ancestor are deleted with the rest of the block's records.
 * - `charge_blocks`: the timestamp of each block the follower recorded (the last few hundred per
 *   network), so "has a block stamped after `expires_at` got its confirmations?" is answered
 *   from the database, in step with the payments, without asking the node.
 * - `charge_sweeps`: what left (or is leaving) a deposit address: `kind` `sweep` (signed by the
 *   deposit key) or `gas` (the main wallet's top-up, a row of `transactions`). `live_key` is
 *   unique while a row is in flight (`<charge>:<kind>:<token>`), null once it is final, so two
 *   processes can never have two top-ups (or two sweeps of one token) of a charge in flight.
 * - `charges.watch_until`: `expires_at` + CHARGE_WATCH_AFTER_S; `settled_block`: the block a
 *   settlement was decided on (a reorg below it undoes the settlement); `announced`: the last
 *   final status an event was written for (a settlement undone by a reorg and made again with
 *   the same outcome does not repeat its event); `sweep_due_at`: when the worker is next to look
 *   at the address's balances (null: nothing to do; set on settlement and on each late payment).
 */
import { sql, type Kysely } from 'kysely';
import type { SqlDialect } from '../dialect.js';

async function chargeColumns(db: Kysely<any>, d: SqlDialect): Promise<void> {
  const ts = d.bigintType;
  await db.schema
    .alterTable('charges')
    .addColumn('watch_until', ts, (c) => c.notNull().defaultTo(0))
    .execute();
  await db.schema.alterTable('charges').addColumn('settled_block', ts).execute();
  await db.schema.alterTable('charges').addColumn('announced', 'varchar(16)').execute();
  await db.schema.alterTable('charges').addColumn('sweep_due_at', ts).execute();
  await sql`UPDATE charges SET watch_until = expires_at + 86400000`.execute(db);
  await sql`UPDATE charges SET announced = status WHERE status <> 'pending'`.execute(db);
  // Every charge settled before this migration is looked at once: funds left on failed and
  // expired charges (never swept before) move to the main address.
  await sql`UPDATE charges SET sweep_due_at = updated_at WHERE status <> 'pending'`.execute(db);
  await db.schema.createIndex('charges_watch_until_idx').on('charges').columns(['watch_until']).execute();
  await db.schema.createIndex('charges_sweep_due_idx').on('charges').columns(['sweep_due_at']).execute();
}

export async function up(db: Kysely<any>, d: SqlDialect): Promise<void> {
  const ts = d.bigintType;
  await chargeColumns(db, d);

  await db.schema
    .createTable('charge_payments')
    .addColumn('id', d.idType, (c) => c.primaryKey())
    .addColumn('charge_id', ts, (c) => c.notNull().references('charges.id').onDelete('cascade'))
    .addColumn('network_id', ts, (c) => c.notNull())
    .addColumn('tx_hash', 'varchar(66)', (c) => c.notNull())
    .addColumn('log_index', 'integer', (c) => c.notNull())
    .addColumn('from_address', 'varchar(42)', (c) => c.notNull())
    .addColumn('amount', d.amountType, (c) => c.notNull())
    .addColumn('block_number', ts, (c) => c.notNull())
    .addColumn('block_hash', 'varchar(66)', (c) => c.notNull())
    .addColumn('block_timestamp', ts, (c) => c.notNull())
    .addColumn('confirmed', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('notified', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('created_at', ts, (c) => c.notNull())
    .execute();
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

  await db.schema
    .createTable('charge_blocks')
    .addColumn('network_id', ts, (c) => c.notNull())
    .addColumn('block_number', ts, (c) => c.notNull())
    .addColumn('block_timestamp', ts, (c) => c.notNull())
    .addPrimaryKeyConstraint('charge_blocks_pk', ['network_id', 'block_number'])
    .execute();

  await db.schema
    .createTable('charge_sweeps')
    .addColumn('id', d.idType, (c) => c.primaryKey())
    .addColumn('charge_id', ts, (c) => c.notNull().references('charges.id').onDelete('cascade'))
    .addColumn('kind', 'varchar(8)', (c) => c.notNull())
    .addColumn('token_id', ts, (c) => c.notNull())
    .addColumn('amount', d.amountType, (c) => c.notNull())
    .addColumn('status', 'varchar(16)', (c) => c.notNull())
    .addColumn('live_key', 'varchar(64)', (c) => c.unique())
    .addColumn('tx_hash', 'varchar(66)')
    .addColumn('raw_tx', 'text')
    .addColumn('nonce', 'integer')
    .addColumn('transaction_id', ts)
    .addColumn('block_number', ts)
    .addColumn('error', 'varchar(300)')
    .addColumn('created_at', ts, (c) => c.notNull())
    .addColumn('updated_at', ts, (c) => c.notNull())
    .execute();
  await db.schema.createIndex('charge_sweeps_charge_idx').on('charge_sweeps').columns(['charge_id', 'id']).execute();
  await db.schema.createIndex('charge_sweeps_status_idx').on('charge_sweeps').columns(['status']).execute();
}
