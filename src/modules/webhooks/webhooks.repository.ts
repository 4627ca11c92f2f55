/**
 * Webhook and delivery rows for the routes. Read paths select explicit columns: the encrypted
 * secret (`signature_enc`) is selected only by `findWebhookSecret`, which the delete route
 * alone calls (the worker has its own query). The delivery queue's state changes live in
 * `src/workers/deliveries/`.
 */
import type { Executor } from '../../db/index.js';

export interface WebhookRecord {
  id: number;
  wallet_id: number;
  url: string;
  type: string;
  /** JSON array of stored event names. */
  events: string;
  status: string;
  headers_enc: string | null;
  created_at: number;
  updated_at: number;
}

const WEBHOOK_COLUMNS = ['id', 'wallet_id', 'url', 'type', 'events', 'status', 'headers_enc', 'created_at', 'updated_at'] as const;

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
}

export async function updateWebhook(db: Executor, id: number, patch: WebhookPatch, nowMs: number): Promise<void> {
  await db
    .updateTable('webhooks')
    .set({ ...patch, updated_at: nowMs })
    .where('id', '=', id)
    .where('deleted_at', 'is', null)
    .execute();
}

/** The encrypted secret: read only to answer the delete route. */
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
