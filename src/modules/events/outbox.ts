/**
 * The outbox. Every event is written by the service that causes it, inside the same database
 * transaction as the change itself (pass the transaction as `db`), so a change is never
 * committed without its event and an event never exists without its change. The delivery
 * worker fans undelivered events out to webhooks later; nothing here touches the network.
 *
 * So that delivery does not wait for the worker's next poll, a new event is announced: in this
 * process at once (on SQLite the worker's read then queues behind the writing transaction on
 * the single connection, so it sees the event once committed), and on PostgreSQL by a NOTIFY
 * that the server delivers to every process when the transaction commits.
 */
import { inProcessSignal } from '../../lib/signal.js';
import type { RawBuilder } from 'kysely';
import type { Db } from '../../db/dialect.js';
import type { Executor } from '../../db/index.js';
import { EVENT_NAMES, typeOfEvent, type EventName } from './events.catalogue.js';
import { insertEventInOrder, lockEventOrder, writeWithEventInOrder, type NewEventRow } from './events.repository.js';

const signal = inProcessSignal();

/** Calls `fn` whenever an event is recorded in this process. Returns the unsubscribe. */
export const onOutboxEvent = (fn: () => void): (() => void) => signal.on(fn);

export interface NewEvent {
  userId: number;
  walletId: number;
  name: EventName;
  /** The `data` object of the delivery body, already in its wire shape (strings for amounts). */
  payload: Record<string, unknown>;
  nowMs: number;
}

export async function recordEvent(db: Executor, e: NewEvent): Promise<number> {
  if (!EVENT_NAMES.includes(e.name)) throw new Error(`unknown event ${e.name}`);
  // The id is drawn under the user's event-order lock, held to commit (events.repository.ts).
  if (!db.isTransaction) return db.transaction().execute((trx) => recordEvent(trx, e));
  // The lock, the insert and (PostgreSQL) the NOTIFY in one statement. An event no webhook can
  // want is written dispatched (events.repository.ts, `insertEvent`): nothing to announce.
  const { id, pending } = await insertEventInOrder(db, eventRow(e));
  if (pending) signal.emit();
  return id;
}

function eventRow(e: NewEvent): NewEventRow {
  return {
    user_id: e.userId,
    wallet_id: e.walletId,
    type: typeOfEvent(e.name),
    name: e.name,
    payload: JSON.stringify(e.payload),
    created_at: e.nowMs,
  };
}

/**
 * `write` (one statement that changes one row and returns it) and, if it changed one, the event,
 * as one atomic unit that holds its locks for no round trip to this process (on PostgreSQL one
 * statement: events.repository.ts, `writeWithEventInOrder`). For a change whose event can be
 * made before the write: the statement's conditions must make the payload true of the row it
 * writes. Returns the written row, or undefined when it wrote none (no event recorded).
 */
export async function recordEventWithWrite<R>(db: Db, write: RawBuilder<R>, e: NewEvent): Promise<R | undefined> {
  if (!EVENT_NAMES.includes(e.name)) throw new Error(`unknown event ${e.name}`);
  const written = await writeWithEventInOrder(db, write, eventRow(e));
  if (written?.event.pending) signal.emit();
  return written?.row;
}

/**
 * For a transaction that records events of several users: takes their event-order locks now, in
 * user order, after the caller's wallet locks and before its first `recordEvent` (the one lock
 * order, events.repository.ts). A no-op on SQLite.
 */
export function lockEventsOf(db: Executor, userIds: Iterable<number>): Promise<void> {
  return lockEventOrder(db, userIds);
}
