/**
 * Queue state change 1 of 4: fan undispatched outbox events out into deliveries.
 *
 * One transaction per batch: take up to `batch` undispatched events (FOR UPDATE SKIP LOCKED on
 * PostgreSQL, so two workers fan out disjoint batches; SQLite's BEGIN IMMEDIATE makes it
 * single-writer), insert one `pending` delivery per matching webhook, mark the events
 * dispatched. A webhook matches when it belongs to the event's wallet, has the event's type, is
 * active and not deleted, existed when the event happened, and lists the event or `*`.
 * `ON CONFLICT (webhook_id, event_id) DO NOTHING` makes a repeated fan-out harmless.
 */
import { randomUUID } from 'node:crypto';
import type { Db } from '../../db/dialect.js';
import { hasUndispatchedEvents, lockUndispatchedEvents, markEventsDispatched, type UndispatchedEvent } from '../../modules/events/events.repository.js';
import { subscribes } from '../../modules/webhooks/webhooks.catalogue.js';
import { deliveryBody } from '../../modules/webhooks/webhooks.signing.js';
import { findActiveWebhooks, insertDeliveries, type NewDelivery, type SubscribedWebhook } from './deliveries.repository.js';

export interface DispatchResult {
  events: number;
  deliveries: number;
}

export async function dispatchEvents(db: Db, nowMs: number, batch: number): Promise<DispatchResult> {
  // Most ticks find nothing: one indexed read instead of a locking transaction.
  if (!(await hasUndispatchedEvents(db))) return { events: 0, deliveries: 0 };
  return db.transaction().execute(async (trx) => {
    const events = await lockUndispatchedEvents(trx, batch);
    if (events.length === 0) return { events: 0, deliveries: 0 };
    const hooks = await findActiveWebhooks(trx, [...new Set(events.map((e) => e.wallet_id))]);
    const rows = deliveriesFor(events, hooks, nowMs);
    await insertDeliveries(trx, rows);
    await markEventsDispatched(
      trx,
      events.map((e) => e.id),
      nowMs,
    );
    return { events: events.length, deliveries: rows.length };
  });
}

/** One `pending` delivery per event and matching webhook. */
function deliveriesFor(events: readonly UndispatchedEvent[], hooks: readonly SubscribedWebhook[], nowMs: number): NewDelivery[] {
  const subscribed = hooks.map((h) => ({ ...h, events: JSON.parse(h.events) as string[] }));
  const rows: NewDelivery[] = [];
  for (const e of events) {
    const body = deliveryBody(e.name, e.payload);
    for (const h of subscribed) {
      if (h.wallet_id !== e.wallet_id || h.type !== e.type || h.created_at > e.created_at || !subscribes(h.events, e.name)) continue;
      rows.push(newDelivery(h.id, e, body, nowMs));
    }
  }
  return rows;
}

function newDelivery(webhookId: number, e: UndispatchedEvent, body: string, nowMs: number): NewDelivery {
  return {
    uuid: randomUUID(),
    webhook_id: webhookId,
    event_id: e.id,
    event_name: e.name,
    body,
    status: 'pending',
    attempts: 0,
    next_attempt_at: nowMs,
    locked_by: null,
    locked_until: null,
    response_status: null,
    last_error: null,
    delivered_at: null,
    created_at: nowMs,
    updated_at: nowMs,
  };
}
