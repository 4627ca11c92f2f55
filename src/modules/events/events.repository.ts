/**
 * The outbox table (`events`): written by the services inside their own transactions, read by
 * the delivery worker's fan-out (queue state change 1, src/workers/deliveries/dispatch.ts).
 */
import { sql, type RawBuilder } from 'kysely';
import { dialectOf, OUTBOX_CHANNEL, type Db } from '../../db/dialect.js';
import type { Executor } from '../../db/index.js';
import { prepare, prepareRow } from '../../db/prepared.js';

export interface NewEventRow {
  user_id: number;
  wallet_id: number;
  type: string;
  name: string;
  /** The delivery body's `data`, as JSON text. */
  payload: string;
  created_at: number;
}

/** A new event's id, and whether it waits for the fan-out (false: no webhook can want it). */
export interface InsertedEvent {
  id: number;
  pending: boolean;
}

/**
 * The event row, already marked dispatched (at its `created_at`) when its wallet has no live,
 * active webhook as it is written: nothing can match it, so it costs no fan-out, no outbox
 * signal and (PostgreSQL) no NOTIFY. The fan-out's own read makes the same decision for the
 * same reason (src/workers/deliveries/deliveries.repository.ts, `lockUndispatchedWithWebhooks`),
 * a few milliseconds later; a webhook not yet committed is not seen by either. A wallet with any
 * live webhook leaves its events to the fan-out's exact match (type, names, creation time).
 */
export async function insertEvent(db: Executor, e: NewEventRow): Promise<InsertedEvent> {
  const row = (await insertEventRow.executeTakeFirst(db, e))!;
  return { id: row.id, pending: row.dispatched_at === null };
}

/** Every event of every request and worker: compiled once (src/db/prepared.ts). */
const insertEventRow = prepareRow((db: Executor, e: NewEventRow) =>
  db
    .insertInto('events')
    .values({
      ...e,
      dispatched_at: sql<number | null>`case when ${hasLiveWebhook(sql.val(e.wallet_id))} then null else ${e.created_at} end`,
    })
    .returning(['id', 'dispatched_at']),
);

/**
 * Whether the wallet has a live, active webhook (an SQL condition; `webhooks_wallet_idx`): the
 * one test of an event's write and of the fan-out's quiet marking (`lockUndispatchedWithWebhooks`).
 */
export const hasLiveWebhook = (walletId: RawBuilder<unknown>) =>
  sql`exists (select 1 from webhooks w where w.wallet_id = ${walletId} and w.status = 'active' and w.deleted_at is null)`;

export interface UndispatchedEvent {
  id: number;
  wallet_id: number;
  type: string;
  name: string;
  payload: string;
  created_at: number;
}

/** Whether any event waits for its fan-out: one indexed read, no lock. */
export async function hasUndispatchedEvents(db: Executor): Promise<boolean> {
  return (await anyUndispatched.executeTakeFirst(db)) !== undefined;
}

const anyUndispatched = prepare((db: Executor) => db.selectFrom('events').select('id').where('dispatched_at', 'is', null).limit(1));

/** The oldest undispatched events no other worker holds, locked for this transaction. */
export function lockUndispatchedEvents(trx: Db, limit: number): Promise<UndispatchedEvent[]> {
  return undispatched.execute(trx, limit);
}

const undispatched = prepare((db: Db, limit: number) =>
  dialectOf(db).forUpdateSkipLocked(
    db
      .selectFrom('events')
      .select(['id', 'wallet_id', 'type', 'name', 'payload', 'created_at'])
      .where('dispatched_at', 'is', null)
      .orderBy('id', 'asc')
      .limit(limit),
  ),
);

export async function markEventsDispatched(trx: Db, ids: readonly number[], nowMs: number): Promise<void> {
  if (ids.length === 0) return;
  await trx.updateTable('events').set({ dispatched_at: nowMs }).where('id', 'in', ids).execute();
}

/*
 * The cursor of the events API (`GET /api/events`) and the lock that makes it safe on PostgreSQL.
 *
 * The cursor problem. Event ids come from a sequence, assigned when the row is inserted, but
 * transactions commit in their own order: A takes id 10, B takes id 11 and commits first, a
 * reader pages past 11, then A commits and id 10 is never read. SQLite has one writer at a
 * time (BEGIN IMMEDIATE), so ids commit in order there. On PostgreSQL `insertEventInOrder` takes a
 * transaction-level advisory lock on the event's user before the id is drawn, held until
 * commit; the lock is released only after the commit is visible. So for one user, an event
 * with a smaller id is always committed (and visible to any snapshot that sees a larger one)
 * before a larger id is drawn: a reader paging by `id > cursor` never skips an event.
 *
 * Throughput: what is serialised is, per user, the span from a transaction's first event to
 * its commit (the services record events last, so about one commit: per user, as many
 * event-writing transactions a second as the disk's fsync allows). Different users never wait
 * for each other. A transaction recording events of several users (the chain watcher's block)
 * takes them all up front, after its wallet locks, in user order (`lockEventOrder`): the one
 * lock order is wallet rows (ascending id), then event orders (ascending user), so neither two
 * such transactions nor one of them and a transfer creation (its wallet, then its user's event
 * order) can deadlock (test/transactions/lock-order.pg.test.ts).
 */

/** Advisory lock namespace of the event order ('EVNT'); the second key is the user id. */
const EVENT_ORDER_LOCK = 0x45564e54;

/** The advisory lock key of a user's event order (the second key of EVENT_ORDER_LOCK). */
const eventOrderKey = (userId: number) => userId % 2147483647;

/**
 * Inside a transaction: takes the event-order locks of these users up front, in ascending key
 * order (PostgreSQL; the write lock orders everything on SQLite). A transaction that records
 * events of several users (the chain watcher's block batch, a settling pass) calls it after its
 * wallet locks and before its first event, so that it takes every lock in the one order
 * (wallets by id, then event orders by user) and never waits for a wallet while it holds an
 * event lock that a transfer creation holding that wallet waits for. `insertEventInOrder` takes
 * the same lock again (advisory locks are re-entrant within a session).
 */
export async function lockEventOrder(db: Executor, userIds: Iterable<number>): Promise<void> {
  if (dialectOf(db).driver !== 'postgres') return;
  const keys = [...new Set([...userIds].map(eventOrderKey))].sort((a, b) => a - b);
  // Issued together, in key order: the server takes them in that order (one round trip).
  await Promise.all(keys.map((k) => sql`select pg_advisory_xact_lock(${EVENT_ORDER_LOCK}::int4, ${k}::int4)`.execute(db)));
}

/**
 * Inside a transaction: takes the user's event-order lock, inserts the event and announces new
 * outbox work, returning the id. On PostgreSQL that is one statement (one round trip where it
 * was three, and the lock is held from it to the commit, so for one round trip less): the
 * materialized CTE takes the lock before the insert's row, and its id, is made; the NOTIFY is
 * delivered at commit. On SQLite the write lock already orders ids, and there is nothing to
 * announce (outbox.ts signals in-process).
 */
export async function insertEventInOrder(db: Executor, e: NewEventRow): Promise<InsertedEvent> {
  if (dialectOf(db).driver !== 'postgres') return insertEvent(db, e);
  const { rows } = await sql<{ id: number; pending: boolean }>`
    with ${eventInOrderCtes(e)}
    select id, dispatched_at is null as pending, ${notifyIfPending} from inserted`.execute(db);
  return rows[0]!;
}

/** The outbox's NOTIFY (delivered at commit), for an event that waits for the fan-out only. */
const notifyIfPending = sql`case when inserted.dispatched_at is null then pg_notify(${OUTBOX_CHANNEL}, '') end as notified`;

/**
 * PostgreSQL: the CTEs `locked` (the user's event-order lock, taken before the event's id is
 * drawn) and `inserted` (the event, returning its id). With `after`, the name of a CTE before
 * them, the lock is taken only once that CTE has made its row, and only if it made one.
 */
function eventInOrderCtes(e: NewEventRow, after?: string): RawBuilder<unknown> {
  const from = after === undefined ? sql`` : sql`from ${sql.table(after)}`;
  return sql`locked as materialized (select pg_advisory_xact_lock(${EVENT_ORDER_LOCK}::int4, (${e.user_id}::bigint % 2147483647)::int4) ${from}),
    inserted as (
      insert into events (user_id, wallet_id, type, name, payload, created_at, dispatched_at)
      select ${e.user_id}::bigint, ${e.wallet_id}::bigint, ${e.type}, ${e.name}, ${e.payload}, ${e.created_at}::bigint,
        case when ${hasLiveWebhook(sql`${e.wallet_id}::bigint`)} then null else ${e.created_at}::bigint end from locked
      returning id, dispatched_at
    )`;
}

/**
 * Outside a transaction: `write` (one data-modifying statement that returns the row it changed),
 * then, only if it changed one, the user's event-order lock, the event and the announcement, as
 * one atomic unit. On PostgreSQL that is one statement committed on its own: the locks it takes
 * (the written row's, then the event order's, the one lock order) are held for that statement and
 * its commit only, never across a round trip to this process, whose event loop may be busy with
 * other requests between two statements of a transaction (under load the wallet update's row
 * lock was held that way far longer than its work took). On SQLite it is a transaction of the
 * write and, if it returned a row, the event. Returns the written row and the event, or undefined (no event).
 */
export async function writeWithEventInOrder<R>(
  db: Db,
  write: RawBuilder<R>,
  e: NewEventRow,
): Promise<{ row: R; event: InsertedEvent } | undefined> {
  if (dialectOf(db).driver !== 'postgres') {
    const writeThenEvent = async (trx: Db) => {
      const row = (await write.execute(trx)).rows[0];
      return row === undefined ? undefined : { row, event: await insertEvent(trx, e) };
    };
    return db.isTransaction ? writeThenEvent(db) : db.transaction().execute(writeThenEvent);
  }
  const { rows } = await sql<R & { event_id: number; event_pending: boolean }>`
    with written as (${write}), ${eventInOrderCtes(e, 'written')}
    select written.*, inserted.id as event_id, inserted.dispatched_at is null as event_pending, ${notifyIfPending} from written, inserted`.execute(
    db,
  );
  const row = rows[0] as (R & { event_id?: number; event_pending?: boolean; notified?: unknown }) | undefined;
  if (row === undefined) return undefined;
  const event = { id: row.event_id!, pending: row.event_pending! };
  delete row.event_id;
  delete row.event_pending;
  delete row.notified;
  return { row, event };
}

export interface EventRow {
  id: number;
  name: string;
  wallet_id: number;
  payload: string;
  created_at: number;
}

export interface EventFilter {
  after: number;
  limit: number;
  type?: string;
  name?: string;
  /** The newest `limit` events after the cursor, newest first (else the oldest, oldest first). */
  newestFirst?: boolean;
}

/** The user's events after the cursor, oldest first or newest first (index events (user_id[, type], id)). */
export function listUserEvents(db: Executor, userId: number, f: EventFilter): Promise<EventRow[]> {
  let q = db
    .selectFrom('events')
    .select(['id', 'name', 'wallet_id', 'payload', 'created_at'])
    .where('user_id', '=', userId)
    .where('id', '>', f.after);
  if (f.type !== undefined) q = q.where('type', '=', f.type);
  if (f.name !== undefined) q = q.where('name', '=', f.name);
  return q
    .orderBy('id', f.newestFirst === true ? 'desc' : 'asc')
    .limit(f.limit)
    .execute();
}

export function findUserEvent(db: Executor, userId: number, id: number): Promise<EventRow | undefined> {
  return db
    .selectFrom('events')
    .select(['id', 'name', 'wallet_id', 'payload', 'created_at'])
    .where('user_id', '=', userId)
    .where('id', '=', id)
    .executeTakeFirst();
}
