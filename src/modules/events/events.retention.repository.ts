/**
 * Retention of the event log: events, webhook deliveries and their attempts older than
 * `EVENT_RETENTION_DAYS` are deleted by housekeeping, one bounded batch per call.
 *
 * - A delivery goes only once settled (`delivered` or `failed`): never one still `pending` or
 *   `retrying`. Its attempts go with it, in the same transaction. The batch's rows are locked
 *   (FOR UPDATE SKIP LOCKED on PostgreSQL), so a delivery being sent or retried right now is
 *   skipped rather than deleted under the worker.
 * - An event goes once fanned out (`dispatched_at` set) and without any delivery left, so an
 *   event never disappears from under a delivery that may still be sent or retried.
 * - The newest event is never deleted: SQLite gives a new row the largest id + 1, so emptying
 *   the table would hand out ids again from 1 and a reader's cursor would skip them.
 */
import type { SqlDialect } from '../../db/dialect.js';
import type { Executor } from '../../db/index.js';

const SETTLED = ['delivered', 'failed'];

/** Deletes up to `batch` settled deliveries created before `beforeMs`, with their attempts. */
export async function pruneDeliveries(db: Executor, dialect: SqlDialect, beforeMs: number, batch: number): Promise<number> {
  return db.transaction().execute(async (trx) => {
    const rows = await dialect
      .forUpdateSkipLocked(
        trx
          .selectFrom('webhook_deliveries')
          .select('id')
          .where('created_at', '<', beforeMs)
          .where('status', 'in', SETTLED)
          .orderBy('created_at', 'asc')
          .limit(batch),
      )
      .execute();
    const ids = rows.map((r) => r.id);
    if (ids.length === 0) return 0;
    await trx.deleteFrom('webhook_attempts').where('delivery_id', 'in', ids).execute();
    const r = await trx.deleteFrom('webhook_deliveries').where('id', 'in', ids).where('status', 'in', SETTLED).executeTakeFirst();
    return Number(r.numDeletedRows);
  });
}

/** Deletes up to `batch` dispatched events created before `beforeMs` that no delivery refers to. */
export async function pruneEvents(db: Executor, beforeMs: number, batch: number): Promise<number> {
  const newest = await db
    .selectFrom('events')
    .select((eb) => eb.fn.max('id').as('id'))
    .executeTakeFirst();
  if (newest?.id === null || newest?.id === undefined) return 0;
  const candidates = db
    .selectFrom('events as e')
    .select('e.id')
    .where('e.created_at', '<', beforeMs)
    .where('e.dispatched_at', 'is not', null)
    .where('e.id', '<', Number(newest.id))
    .where((eb) => eb.not(eb.exists(eb.selectFrom('webhook_deliveries as d').select('d.id').whereRef('d.event_id', '=', 'e.id'))))
    .orderBy('e.created_at', 'asc')
    .limit(batch);
  const r = await db
    .deleteFrom('events')
    .where('id', 'in', candidates)
    .where((eb) => eb.not(eb.exists(eb.selectFrom('webhook_deliveries as d').select('d.id').whereRef('d.event_id', '=', 'events.id'))))
    .executeTakeFirst();
  return Number(r.numDeletedRows);
}
