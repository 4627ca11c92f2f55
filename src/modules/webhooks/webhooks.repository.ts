/**
 * Webhook and delivery rows for the routes. Read paths select explicit columns: the encrypted
 * secret (`signature_enc`) is selected only by `findWebhookSecret`, which the delete route
 * alone calls (the worker has its own query). The delivery queue's state changes live in
 * `src/workers/deliveries/deliveries.repository.ts`.
 */
import { notifyOutbox } from '../../db/dialect.js';
import type { Executor } from '../../db/index.js';
import type { Selectable } from 'kysely';
import type { WebhookAttemptsTable } from '../../db/types.js';

export interface WebhookRecord {
  id: number;
  wallet_id: number;
  url: string;
  type: string;
  /** JSON array of stored event names. */
  events: string;
  status: string;
  headers_enc: string | null;
  /** `gone`, `failing` or null (see migration 004). */
  disabled_reason: string | null;
  disabled_at: number | null;
  created_at: number;
  updated_at: number;
}

const WEBHOOK_COLUMNS = [
  'id',
  'wallet_id',
  'url',
  'type',
  'events',
  'status',
  'headers_enc',
  'disabled_reason',
  'disabled_at',
  'created_at',
  'updated_at',
] as const;

/** The wallet's live webhooks, newest first. */
export function listWebhooks(db: Executor, walletId: number): Promise<WebhookRecord[]> {
  return db
    .selectFrom('webhooks')
    .select(WEBHOOK_COLUMNS)
    .where('wallet_id', '=', walletId)
    .where('deleted_at', 'is', null)
    .orderBy('id', 'desc')
    .execute();
}

export function findWebhook(db: Executor, walletId: number, id: number): Promise<WebhookRecord | undefined> {
  return db
    .selectFrom('webhooks')
    .select(WEBHOOK_COLUMNS)
    .where('id', '=', id)
    .where('wallet_id', '=', walletId)
    .where('deleted_at', 'is', null)
    .executeTakeFirst();
}

export async function countWebhooks(db: Executor, walletId: number): Promise<number> {
  const row = await db
    .selectFrom('webhooks')
    .select((eb) => eb.fn.countAll<number | string>().as('n'))
    .where('wallet_id', '=', walletId)
    .where('deleted_at', 'is', null)
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

export interface NewWebhook {
  wallet_id: number;
  url: string;
  type: string;
  events: string;
  signature_enc: string | null;
  headers_enc: string | null;
}

export function insertWebhook(db: Executor, w: NewWebhook, nowMs: number): Promise<WebhookRecord> {
  return db
    .insertInto('webhooks')
    .values({ ...w, status: 'active', deleted_at: null, created_at: nowMs, updated_at: nowMs })
    .returning(WEBHOOK_COLUMNS)
    .executeTakeFirstOrThrow();
}

export interface WebhookPatch {
  url?: string;
  events?: string;
  status?: string;
  signature_enc?: string | null;
  headers_enc?: string | null;
  previous_signature_enc?: string | null;
  previous_signature_until?: number | null;
  disabled_reason?: string | null;
  disabled_at?: number | null;
  failing_since?: number | null;
}

export async function updateWebhook(db: Executor, id: number, patch: WebhookPatch, nowMs: number): Promise<void> {
  await db
    .updateTable('webhooks')
    .set({ ...patch, updated_at: nowMs })
    .where('id', '=', id)
    .where('deleted_at', 'is', null)
    .execute();
}

/** The encrypted secret: read only to answer the delete route and to compare a new one. */
export async function findWebhookSecret(db: Executor, id: number): Promise<string | null> {
  const row = await db.selectFrom('webhooks').select('signature_enc').where('id', '=', id).executeTakeFirst();
  return row?.signature_enc ?? null;
}

/** Soft delete; false when it was already deleted (a concurrent delete won). */
export async function softDeleteWebhook(db: Executor, id: number, nowMs: number): Promise<boolean> {
  const res = await db
    .updateTable('webhooks')
    .set({ deleted_at: nowMs, updated_at: nowMs })
    .where('id', '=', id)
    .where('deleted_at', 'is', null)
    .executeTakeFirst();
  return Number(res.numUpdatedRows) === 1;
}

/**
 * Deliveries of a webhook that was deleted or made inactive will not be sent: they end
 * `failed` with the reason (a manual retry can still send one once the webhook is active).
 * One being sent right now finishes and records its outcome.
 */
export async function cancelOpenDeliveries(db: Executor, webhookId: number, reason: string, nowMs: number): Promise<void> {
  await db
    .updateTable('webhook_deliveries')
    .set({ status: 'failed', last_error: reason, updated_at: nowMs })
    .where('webhook_id', '=', webhookId)
    .where('status', 'in', ['pending', 'retrying'])
    .where((eb) => eb.or([eb('locked_until', 'is', null), eb('locked_until', '<=', nowMs)]))
    .execute();
}

export interface DeliveryRecord {
  id: number;
  uuid: string;
  event_name: string;
  status: string;
  attempts: number;
  response_status: number | null;
  last_error: string | null;
  next_attempt_at: number;
  delivered_at: number | null;
  locked_until: number | null;
  created_at: number;
  updated_at: number;
}

const DELIVERY_COLUMNS = [
  'webhook_deliveries.id',
  'webhook_deliveries.uuid',
  'webhook_deliveries.event_name',
  'webhook_deliveries.status',
  'webhook_deliveries.attempts',
  'webhook_deliveries.response_status',
  'webhook_deliveries.last_error',
  'webhook_deliveries.next_attempt_at',
  'webhook_deliveries.delivered_at',
  'webhook_deliveries.locked_until',
  'webhook_deliveries.created_at',
  'webhook_deliveries.updated_at',
] as const;

/**
 * One page of a webhook's deliveries, newest first. The page is found on the
 * (webhook_id, id) index alone and only its rows are then read (a deferred join), so a deep
 * page skips index entries, never whole rows with their bodies.
 */
export function listDeliveries(db: Executor, webhookId: number, limit: number, offset: number): Promise<DeliveryRecord[]> {
  const page = db
    .selectFrom('webhook_deliveries')
    .select('id')
    .where('webhook_id', '=', webhookId)
    .orderBy('id', 'desc')
    .limit(limit)
    .offset(offset)
    .as('page');
  return db
    .selectFrom('webhook_deliveries')
    .innerJoin(page, 'page.id', 'webhook_deliveries.id')
    .select(DELIVERY_COLUMNS)
    .orderBy('webhook_deliveries.id', 'desc')
    .execute();
}

export async function countDeliveries(db: Executor, webhookId: number): Promise<number> {
  const row = await db
    .selectFrom('webhook_deliveries')
    .select((eb) => eb.fn.countAll<number | string>().as('n'))
    .where('webhook_id', '=', webhookId)
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

export function findDelivery(db: Executor, webhookId: number, id: number): Promise<DeliveryRecord | undefined> {
  return db
    .selectFrom('webhook_deliveries')
    .select(DELIVERY_COLUMNS)
    .where('webhook_deliveries.id', '=', id)
    .where('webhook_deliveries.webhook_id', '=', webhookId)
    .executeTakeFirst();
}

/** Manual retry: due now, whatever its status; its attempt history and count are kept. */
export async function requeueDelivery(db: Executor, id: number, nowMs: number): Promise<void> {
  await db
    .updateTable('webhook_deliveries')
    .set({ status: 'pending', next_attempt_at: nowMs, updated_at: nowMs })
    .where('id', '=', id)
    .execute();
}

/**
 * Recover: every `failed` delivery of the webhook created at or after `sinceMs` is due again
 * now, as one more attempt of the same delivery (same id, history kept). Returns how many.
 */
export async function requeueFailedSince(db: Executor, webhookId: number, sinceMs: number, nowMs: number): Promise<number> {
  const r = await db
    .updateTable('webhook_deliveries')
    .set({ status: 'pending', next_attempt_at: nowMs, updated_at: nowMs })
    .where('webhook_id', '=', webhookId)
    .where('status', '=', 'failed')
    .where('created_at', '>=', sinceMs)
    .executeTakeFirst();
  return Number(r.numUpdatedRows);
}

/** One HTTP attempt of a delivery, as stored. */
export type AttemptRecord = Omit<Selectable<WebhookAttemptsTable>, 'id' | 'delivery_id'>;

/** Attempts a delivery keeps at most; its attempt count is bounded by the schedule and the manual retries. */
const ATTEMPTS_SHOWN = 1000;

export function listAttempts(db: Executor, deliveryId: number): Promise<AttemptRecord[]> {
  return db
    .selectFrom('webhook_attempts')
    .select(['attempt', 'response_status', 'duration_ms', 'response_body', 'error', 'created_at'])
    .where('delivery_id', '=', deliveryId)
    .orderBy('attempt', 'asc')
    .orderBy('id', 'asc')
    .limit(ATTEMPTS_SHOWN)
    .execute();
}

/**
 * No user owns a test event: the events API reads by user and never lists it, and the fan-out
 * never sees it (it is written already dispatched). It exists because a delivery refers to an
 * event (`webhook_deliveries.event_id`); retention prunes both like any other.
 */
const NO_USER = 0;

export interface TestDelivery {
  walletId: number;
  webhookId: number;
  uuid: string;
  eventName: string;
  payload: string;
  body: string;
  nowMs: number;
}

/** A test delivery and its event, due now (call inside a transaction). Returns the delivery's id. */
export async function insertTestDelivery(db: Executor, d: TestDelivery): Promise<number> {
  const event = await db
    .insertInto('events')
    .values({
      user_id: NO_USER,
      wallet_id: d.walletId,
      type: 'webhook',
      name: d.eventName,
      payload: d.payload,
      dispatched_at: d.nowMs,
      created_at: d.nowMs,
    })
    .returning('id')
    .executeTakeFirstOrThrow();
  const row = await db
    .insertInto('webhook_deliveries')
    .values({
      uuid: d.uuid,
      webhook_id: d.webhookId,
      event_id: event.id,
      event_name: d.eventName,
      body: d.body,
      status: 'pending',
      attempts: 0,
      next_attempt_at: d.nowMs,
      created_at: d.nowMs,
      updated_at: d.nowMs,
    })
    .returning('id')
    .executeTakeFirstOrThrow();
  // Wakes the workers of other processes when this commits (PostgreSQL), as a new event does.
  await notifyOutbox(db);
  return row.id;
}
