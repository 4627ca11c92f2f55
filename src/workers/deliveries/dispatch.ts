/**
 * Queue state change 1 of 4: fan undispatched outbox events out into deliveries.
 *
 * One transaction per batch: take up to `batch` undispatched events (FOR UPDATE SKIP LOCKED on
 * PostgreSQL, so two workers fan out disjoint batches; SQLite's BEGIN IMMEDIATE makes it
 * single-writer), insert one `pending` delivery per matching webhook, mark the events
 * dispatched. A webhook matches when it belongs to the event's wallet, has the event's type, is
 * active and not deleted, existed when the event happened, and lists the event or `*`.
 * `ON CONFLICT (webhook_id, event_id) DO NOTHING` makes a repeated fan-out harmless.
 *
 * A worker with free places passes a `FanOutLease`: the rows it has room for are inserted already
 * leased to it (as its next claim would lease them, same fairness), and come back to be sent.
 * That is state change 2 done in the same transaction as 1; the lease means what a claim's
 * means (a worker that dies before sending leaves rows that are due again when it expires).
 */
import { randomUUID } from 'node:crypto';
import { dialectOf, type Db } from '../../db/dialect.js';
import { hasUndispatchedEvents, type UndispatchedEvent } from '../../modules/events/events.repository.js';
import { pipelinedTransaction } from '../../db/pipelined.js';
import { subscribes } from '../../modules/webhooks/webhooks.catalogue.js';
import { deliveryBody } from '../../modules/webhooks/webhooks.signing.js';
import { claimedAs, type ClaimedDelivery } from './claim.js';
import {
  insertDeliveriesMarkingEvents,
  lockUndispatchedWithWebhooks,
  type DueDelivery,
  type NewDelivery,
  type SubscribedWebhook,
} from './deliveries.repository.js';

export interface DispatchResult {
  events: number;
  deliveries: number;
  /** The deliveries this fan-out leased to the worker (`lease`): sent without a claim. */
  claimed: ClaimedDelivery[];
}

/**
 * A fan-out by a worker with room leases what it makes, as a claim would (at most `limit` rows,
 * a webhook at most `perWebhookLimit` in the worker): the rows are sent without a claim
 * transaction between their event and their send. The rest are inserted `pending` and unleased.
 */
export interface FanOutLease {
  workerId: string;
  limit: number;
  untilMs: number;
  heldByWebhook: ReadonlyMap<number, number>;
  perWebhookLimit: number;
}

/**
 * `signalled`: an outbox signal announced events (the worker's tick after one). On PostgreSQL the
 * read that looks for any first is then skipped: one round trip less between an event and its
 * send. Not on SQLite: there the signal comes from inside the writing transaction, the read
 * answers once its commit group is durable, and a fan-out begun at once joined that group and
 * kept it open for the requests queued behind (a measurably slower event → delivery under the
 * update load).
 */
export async function dispatchEvents(
  db: Db,
  nowMs: number,
  batch: number,
  lease?: FanOutLease,
  signalled = false,
): Promise<DispatchResult> {
  const postgres = dialectOf(db).driver === 'postgres';
  // Most ticks of the poll find nothing: one indexed read instead of a locking transaction.
  if (!(signalled && postgres) && !(await hasUndispatchedEvents(db))) return { events: 0, deliveries: 0, claimed: [] };
  // The events and their webhooks are read with the transaction's `begin` (on PostgreSQL the
  // events no webhook can want are marked by that read), then the deliveries and the events'
  // mark written with the commit queued behind (src/db/pipelined.ts).
  return pipelinedTransaction(db, async (trx, end) => {
    const { events, hooks, quiet } = await lockUndispatchedWithWebhooks(trx, batch, nowMs);
    // Only events no webhook wants (marked by the read): committed as they are.
    if (events.length === 0) return { events: quiet, deliveries: 0, claimed: [] };
    const { rows, leased } = deliveriesFor(events, hooks, nowMs, lease);
    const inserted = await end((t) =>
      insertDeliveriesMarkingEvents(
        t,
        rows,
        events.map((e) => e.id),
        nowMs,
      ),
    );
    const ids = new Map(inserted.map((r) => [r.uuid, r.id]));
    // A row a repeated fan-out did not insert (its conflict) is not this worker's to send.
    const claimed = leased.filter((l) => ids.has(l.row.uuid)).map((l) => claimedAs(dueOf(l.row, ids.get(l.row.uuid)!), l.hook, nowMs));
    return { events: events.length + quiet, deliveries: rows.length, claimed };
  });
}

interface Leased {
  row: NewDelivery & { uuid: string; event_name: string; body: string };
  hook: SubscribedWebhook;
}

/** One `pending` delivery per event and matching webhook; those `lease` has room for are leased. */
function deliveriesFor(
  events: readonly UndispatchedEvent[],
  hooks: readonly SubscribedWebhook[],
  nowMs: number,
  lease: FanOutLease | undefined,
): { rows: NewDelivery[]; leased: Leased[] } {
  const subscribed = hooks.map((h) => ({ hook: h, events: JSON.parse(h.events) as string[] }));
  const rows: NewDelivery[] = [];
  const leased: Leased[] = [];
  const taken = new Map<number, number>();
  for (const e of events) {
    const body = deliveryBody(e.name, e.payload);
    for (const { hook: h, events: names } of subscribed) {
      if (h.wallet_id !== e.wallet_id || h.type !== e.type || h.created_at > e.created_at || !subscribes(names, e.name)) continue;
      const row = newDelivery(h.id, e, body, nowMs);
      rows.push(row);
      const share = (lease?.heldByWebhook.get(h.id) ?? 0) + (taken.get(h.id) ?? 0);
      if (!lease || leased.length >= lease.limit || share >= lease.perWebhookLimit) continue;
      taken.set(h.id, (taken.get(h.id) ?? 0) + 1);
      row.locked_by = lease.workerId;
      row.locked_until = lease.untilMs;
      leased.push({ row, hook: h });
    }
  }
  return { rows, leased };
}

function dueOf(row: Leased['row'], id: number): DueDelivery {
  return {
    id,
    uuid: row.uuid,
    webhook_id: row.webhook_id,
    event_name: row.event_name,
    body: row.body,
    attempts: 0,
    next_attempt_at: Number(row.next_attempt_at),
  };
}

function newDelivery(webhookId: number, e: UndispatchedEvent, body: string, nowMs: number): Leased['row'] {
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
