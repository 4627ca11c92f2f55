/**
 * Blocks whose call traces are still to be read (docs/charges.md, "Internal transfers"): a block the
 * follower recorded while no endpoint could give its traces (every one refused the trace API, or
 * failed) is kept in `trace_pending` until its traces are read and its internal payments and
 * receipts recorded (src/workers/watcher.traces.ts), never taken as "nothing inside". A reorg
 * removes the rows above the common ancestor with the rest of those blocks' records.
 * `network_traces.answered_at`: when an endpoint of the network last answered a trace call; a
 * network none of whose endpoints has answered one for TRACES_KEPT_MS is a network without
 * traces (docs/charges.md, "Internal transfers").
 *
 * Additive (docs/operating.md, "Upgrades"): two new tables, which a previous version never reads.
 */
import type { Kysely } from 'kysely';
import type { SqlDialect } from '../dialect.js';

export async function up(db: Kysely<any>, d: SqlDialect): Promise<void> {
  const ts = d.bigintType;
  await db.schema
    .createTable('trace_pending')
    .addColumn('network_id', ts, (c) => c.notNull().references('networks.id').onDelete('cascade'))
    .addColumn('block_number', ts, (c) => c.notNull())
    .addColumn('block_hash', 'varchar(66)', (c) => c.notNull())
    .addColumn('attempts', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('next_attempt_at', ts, (c) => c.notNull())
    .addColumn('created_at', ts, (c) => c.notNull())
    .addPrimaryKeyConstraint('trace_pending_pk', ['network_id', 'block_number'])
    .execute();
  await db.schema
    .createTable('network_traces')
    .addColumn('network_id', ts, (c) => c.primaryKey().references('networks.id').onDelete('cascade'))
    .addColumn('answered_at', ts, (c) => c.notNull())
    .execute();
}
