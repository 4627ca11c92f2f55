/**
 * The delivery queue's rows (`webhook_deliveries`, `webhook_attempts`) as the worker changes
 * them. Every change to a claimed row checks `locked_by` = this worker: a worker whose lease
 * expired and was taken over changes nothing (the new holder owns the row).
 */
import { sql, type Insertable } from 'kysely';
import { dialectOf, type Db, type SqlDialect } from '../../db/dialect.js';
import { prepare } from '../../db/prepared.js';
import {
  hasLiveWebhook,
  lockUndispatchedEvents,
  markEventsDispatched,
  type UndispatchedEvent,
} from '../../modules/events/events.repository.js';
import type { WebhookAttemptsTable, WebhookDeliveriesTable } from '../../db/types.js';

/** Rows per INSERT: 500 rows × 15 columns stays far below SQLite's 32,766 bound parameters. */
const INSERT_CHUNK = 500;

export type NewDelivery = Insertable<WebhookDeliveriesTable>;
export type NewAttempt = Insertable<WebhookAttemptsTable>;

export interface DueDelivery {
  id: number;
  uuid: string;
  webhook_id: number;
  event_name: string;
  body: string;
  attempts: number;
  next_attempt_at: number;
}

export interface DueQuery {
  nowMs: number;
  /** Webhooks whose rows are not candidates (they have their share of sends in flight). */
  excludeWebhooks: readonly number[];
  limit: number;
}

/**
 * Due rows (`pending` or `retrying`, `next_attempt_at` reached, no live lease), oldest first,
 * locked for this transaction and skipping rows another worker has locked.
 */
export async function lockDueDeliveries(trx: Db, dialect: SqlDialect, q: DueQuery): Promise<DueDelivery[]> {
  // One query a status, merged here: with `status IN (…)` the (status, next_attempt_at) index
  // gives each status's rows in order but not the union's, so SQLite read every due row (bodies
  // too) and sorted them all for each claim, the more the further a worker fell behind.
  const due = (status: 'pending' | 'retrying') =>
    q.excludeWebhooks.length === 0
      ? dueAll.execute(trx, status, q.nowMs, q.limit)
      : dialect.forUpdateSkipLocked(dueDeliveriesQuery(trx, status, q)).execute();
  const [pending, retrying] = [await due('pending'), await due('retrying')];
  if (retrying.length === 0) return pending;
  const all = [...pending, ...retrying].sort((a, b) => a.next_attempt_at - b.next_attempt_at || a.id - b.id);
  return all.slice(0, q.limit);
}

/** Due rows of one status, oldest first, along the (status, next_attempt_at) index (no sort). */
export function dueDeliveriesQuery(trx: Db, status: 'pending' | 'retrying', q: DueQuery) {
  let sel = trx
    .selectFrom('webhook_deliveries')
    .select(['id', 'uuid', 'webhook_id', 'event_name', 'body', 'attempts', 'next_attempt_at'])
    .where('status', '=', status)
    .where('next_attempt_at', '<=', q.nowMs)
    .where((eb) => eb.or([eb('locked_until', 'is', null), eb('locked_until', '<=', q.nowMs)]));
  if (q.excludeWebhooks.length > 0) sel = sel.where('webhook_id', 'not in', q.excludeWebhooks);
  return sel.orderBy('next_attempt_at', 'asc').orderBy('id', 'asc').limit(q.limit);
}

/** `dueDeliveriesQuery` with no webhook left out (each claim runs it): compiled once (src/db/prepared.ts). */
const dueAll = prepare((db: Db, status: 'pending' | 'retrying', nowMs: number, limit: number) =>
  dialectOf(db).forUpdateSkipLocked(dueDeliveriesQuery(db, status, { nowMs, limit, excludeWebhooks: [] })),
);

export interface TargetWebhook {
  id: number;
  url: string;
  status: string;
  deleted_at: number | null;
  signature_enc: string | null;
  headers_enc: string | null;
  previous_signature_enc: string | null;
  previous_signature_until: number | null;
}

const TARGET_COLUMNS = [
  'id',
  'url',
  'status',
  'deleted_at',
  'signature_enc',
  'headers_enc',
  'previous_signature_enc',
  'previous_signature_until',
] as const;

/** The webhooks the claimed rows go to, with the secrets and headers that sign and send them. */
export function findTargetWebhooks(trx: Db, ids: readonly number[]): Promise<TargetWebhook[]> {
  return trx.selectFrom('webhooks').select(TARGET_COLUMNS).where('id', 'in', ids).execute();
}

/** Ends rows that will not be sent (their webhook was deleted or made inactive). */
export async function cancelDeliveries(trx: Db, ids: readonly number[], reason: string, nowMs: number): Promise<void> {
  await trx
    .updateTable('webhook_deliveries')
    .set({ status: 'failed', last_error: reason, updated_at: nowMs })
    .where('id', 'in', ids)
    .execute();
}

/** Queue state change 2: the lease. Rows were selected and locked in the same transaction. */
export async function leaseDeliveries(trx: Db, ids: readonly number[], workerId: string, untilMs: number): Promise<void> {
  if (ids.length === 0) return;
  await trx.updateTable('webhook_deliveries').set({ locked_by: workerId, locked_until: untilMs }).where('id', 'in', ids).execute();
}

/**
 * Queue state change 3: `delivered`, for the rows this worker still holds. Returns each
 * changed row's attempt count now.
 */
export function markDelivered(trx: Db, ids: readonly number[], workerId: string, statusCode: number | null, nowMs: number) {
  return trx
    .updateTable('webhook_deliveries')
    .set((eb) => ({
      status: 'delivered',
      attempts: eb('attempts', '+', 1),
      response_status: statusCode,
      last_error: null,
      delivered_at: nowMs,
      locked_by: null,
      locked_until: null,
      updated_at: nowMs,
    }))
    .where('id', 'in', ids)
    .where('locked_by', '=', workerId)
    .returning(['id', 'attempts'])
    .execute();
}

/** The attempt count of a row this worker still holds, locked; undefined when it is not held. */
export async function findHeldAttempts(trx: Db, dialect: SqlDialect, id: number, workerId: string): Promise<number | undefined> {
  const q = trx.selectFrom('webhook_deliveries').select('attempts').where('id', '=', id).where('locked_by', '=', workerId);
  return (await dialect.forUpdate(q).executeTakeFirst())?.attempts;
}

export interface FailedAttempt {
  status: 'retrying' | 'failed';
  attempts: number;
  responseStatus: number | null;
  error: string | null;
  /** When the next attempt is due; null leaves it unchanged (a failed row has none). */
  nextAttemptAt: number | null;
}

/** Queue state change 4: `retrying` (rescheduled) or `failed`, for a row this worker still holds. */
export async function markFailed(trx: Db, id: number, workerId: string, f: FailedAttempt, nowMs: number): Promise<void> {
  await trx
    .updateTable('webhook_deliveries')
    .set({
      status: f.status,
      attempts: f.attempts,
      response_status: f.responseStatus,
      last_error: f.error,
      ...(f.nextAttemptAt === null ? {} : { next_attempt_at: f.nextAttemptAt }),
      locked_by: null,
      locked_until: null,
      updated_at: nowMs,
    })
    .where('id', '=', id)
    .where('locked_by', '=', workerId)
    .execute();
}

export async function insertAttempts(trx: Db, attempts: readonly NewAttempt[]): Promise<void> {
  if (attempts.length === 0) return;
  await trx.insertInto('webhook_attempts').values(attempts).execute();
}

export interface SubscribedWebhook extends TargetWebhook {
  wallet_id: number;
  type: string;
  /** JSON array of stored event names. */
  events: string;
  created_at: number;
}

/** The live, active webhooks of these wallets (the fan-out's candidates), with what sends to them (a fan-out may lease its rows). */
export function findActiveWebhooks(trx: Db, walletIds: readonly number[]): Promise<SubscribedWebhook[]> {
  return trx
    .selectFrom('webhooks')
    .select(['wallet_id', 'type', 'events', 'created_at', ...TARGET_COLUMNS])
    .where('wallet_id', 'in', walletIds)
    .where('status', '=', 'active')
    .where('deleted_at', 'is', null)
    .execute();
}

/** Queue state change 1: new `pending` rows; a repeated fan-out of an event inserts nothing. */
export async function insertDeliveries(trx: Db, rows: readonly NewDelivery[]): Promise<Array<{ id: number; uuid: string }>> {
  const inserted: Array<{ id: number; uuid: string }> = [];
  for (let i = 0; i < rows.length; i += INSERT_CHUNK) {
    const chunk = await trx
      .insertInto('webhook_deliveries')
      .values(rows.slice(i, i + INSERT_CHUNK))
      .onConflict((oc) => oc.columns(['webhook_id', 'event_id']).doNothing())
      .returning(['id', 'uuid'])
      .execute();
    inserted.push(...chunk);
  }
  return inserted;
}

/**
 * The fan-out's write: its new rows (`insertDeliveries`) and its events marked dispatched. On
 * PostgreSQL one statement (the rows as arrays, however many), issued at the call, so that the
 * commit can be queued right behind it (src/db/pipelined.ts, `oneStatementWrite`).
 */
export async function insertDeliveriesMarkingEvents(
  trx: Db,
  rows: readonly NewDelivery[],
  eventIds: readonly number[],
  nowMs: number,
): Promise<Array<{ id: number; uuid: string }>> {
  if (dialectOf(trx).driver !== 'postgres') {
    const inserted = await insertDeliveries(trx, rows);
    await markEventsDispatched(trx, eventIds, nowMs);
    return inserted;
  }
  const column = (k: keyof NewDelivery, type: string) => sql`${rows.map((r) => r[k] ?? null)}::${sql.raw(type)}[]`;
  const { rows: inserted } = await sql<{ id: number; uuid: string }>`
    with marked as (update events set dispatched_at = ${nowMs} where id = any(${eventIds}::bigint[]))
    insert into webhook_deliveries (uuid, webhook_id, event_id, event_name, body, status, attempts, next_attempt_at,
      locked_by, locked_until, response_status, last_error, delivered_at, created_at, updated_at)
    select * from unnest(${sql.join([
      column('uuid', 'text'),
      column('webhook_id', 'bigint'),
      column('event_id', 'bigint'),
      column('event_name', 'text'),
      column('body', 'text'),
      column('status', 'text'),
      column('attempts', 'integer'),
      column('next_attempt_at', 'bigint'),
      column('locked_by', 'text'),
      column('locked_until', 'bigint'),
      column('response_status', 'integer'),
      column('last_error', 'text'),
      column('delivered_at', 'bigint'),
      column('created_at', 'bigint'),
      column('updated_at', 'bigint'),
    ])})
    on conflict (webhook_id, event_id) do nothing
    returning id, uuid`.execute(trx);
  return inserted;
}

/**
 * The oldest undispatched events no other worker holds, locked for this transaction, and the
 * live, active webhooks of their wallets. On PostgreSQL one statement (the events in a
 * materialized CTE, the webhooks as one JSON row after them): one round trip where it was two.
 * It also marks dispatched, at `nowMs`, the events whose wallet has no live, active webhook
 * (nothing can match them; `quiet` counts them) and leaves them out: on a hot wallet without
 * webhooks a fan-out is then this statement and the commit. A webhook not yet committed is not
 * seen either way; the events of a wallet with any webhook take the fan-out's exact match.
 */
export async function lockUndispatchedWithWebhooks(
  trx: Db,
  limit: number,
  nowMs: number,
): Promise<{ events: UndispatchedEvent[]; hooks: SubscribedWebhook[]; quiet: number }> {
  if (dialectOf(trx).driver !== 'postgres') {
    const events = await lockUndispatchedEvents(trx, limit);
    return {
      events,
      hooks: events.length === 0 ? [] : await findActiveWebhooks(trx, [...new Set(events.map((e) => e.wallet_id))]),
      quiet: 0,
    };
  }
  const live = sql`status = 'active' and deleted_at is null`;
  const { rows } = await sql<UndispatchedEvent & { hooks: SubscribedWebhook[] | null; quiet: number | null }>`
    with ev as materialized (
      select id, wallet_id, type, name, payload, created_at from events
      where dispatched_at is null order by id limit ${limit} for update skip locked
    ),
    hooked as materialized (
      select ev.* from ev where ${hasLiveWebhook(sql.ref('ev.wallet_id'))}
    ),
    quiet as (
      update events set dispatched_at = ${nowMs} where id in (select id from ev except select id from hooked) returning id
    )
    select id, wallet_id, type, name, payload, created_at, null::json as hooks, null::int as quiet from hooked
    union all
    select null, null, null, null, null, null, (
      select coalesce(json_agg(h), '[]'::json) from (
        select wallet_id, type, events, created_at, ${sql.join(TARGET_COLUMNS.map((c) => sql.ref(c)))}
        from webhooks where wallet_id in (select wallet_id from hooked) and ${live}
      ) h
    ), (select count(*)::int from quiet)`.execute(trx);
  const events: UndispatchedEvent[] = [];
  let hooks: SubscribedWebhook[] = [];
  let quiet = 0;
  for (const { hooks: found, quiet: marked, ...e } of rows) {
    if (found !== null) [hooks, quiet] = [found, marked ?? 0];
    else events.push(e);
  }
  return { events: events.sort((a, b) => a.id - b.id), hooks, quiet };
}

/** A replaced secret whose overlap is over is not kept: these webhooks' expired ones are erased. */
export async function erasePreviousSecrets(trx: Db, ids: readonly number[], nowMs: number): Promise<void> {
  if (ids.length === 0) return;
  await trx
    .updateTable('webhooks')
    .set({ previous_signature_enc: null, previous_signature_until: null })
    .where('id', 'in', ids)
    .where('previous_signature_until', '<=', nowMs)
    .execute();
}

/** A delivered attempt: these webhooks answer again, their failing period (if any) ends. */
export async function clearFailing(trx: Db, webhookIds: readonly number[]): Promise<void> {
  if (webhookIds.length === 0) return;
  await trx
    .updateTable('webhooks')
    .set({ failing_since: null })
    .where('id', 'in', webhookIds)
    .where('failing_since', 'is not', null)
    .execute();
}

/** A failed attempt: the webhook's failing period starts now unless it already runs. */
export async function markFailing(trx: Db, webhookId: number, nowMs: number): Promise<void> {
  await trx.updateTable('webhooks').set({ failing_since: nowMs }).where('id', '=', webhookId).where('failing_since', 'is', null).execute();
}

/**
 * Makes an active webhook inactive with the reason (`gone`, or `failing` only when its failing
 * period started at or before `failingSinceAtMost`). True when this call changed it.
 */
export async function disableWebhook(
  trx: Db,
  webhookId: number,
  reason: 'gone' | 'failing',
  nowMs: number,
  failingSinceAtMost?: number,
): Promise<boolean> {
  let q = trx
    .updateTable('webhooks')
    .set({ status: 'inactive', disabled_reason: reason, disabled_at: nowMs, updated_at: nowMs })
    .where('id', '=', webhookId)
    .where('status', '=', 'active')
    .where('deleted_at', 'is', null);
  if (failingSinceAtMost !== undefined) q = q.where('failing_since', '<=', failingSinceAtMost);
  const r = await q.executeTakeFirst();
  return Number(r.numUpdatedRows) === 1;
}

/**
 * Gives back leased rows this worker claimed but did not send (they waited too long in its
 * queue, or it is stopping): they are due again at once for any worker, attempts unchanged.
 */
export async function releaseDeliveries(trx: Db, ids: readonly number[], workerId: string): Promise<void> {
  if (ids.length === 0) return;
  await trx
    .updateTable('webhook_deliveries')
    .set({ locked_by: null, locked_until: null })
    .where('id', 'in', ids)
    .where('locked_by', '=', workerId)
    .execute();
}
