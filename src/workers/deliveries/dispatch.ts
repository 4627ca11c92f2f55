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
import type { Insertable } from 'kysely';
import type { Db, SqlDialect } from '../../db/dialect.js';
import type { WebhookDeliveriesTable } from '../../db/types.js';
import { subscribes } from '../../modules/webhooks/webhooks.catalogue.js';
import { deliveryBody } from '../../modules/webhooks/signing.js';

/** Rows per INSERT: 500 rows × 13 columns stays far below SQLite's 32,766 bound parameters. */
const INSERT_CHUNK = 500;

export interface DispatchResult {
  events: number;
  deliveries: number;
}

export async function dispatchEvents(db: Db, dialect: SqlDialect, nowMs: number, batch: number): Promise<DispatchResult> {
  // Most ticks find nothing: one indexed read instead of a locking transaction.
  const any = await db.selectFrom('events').select('id').where('dispatched_at', 'is', null).limit(1).executeTakeFirst();
  if (!any) return { events: 0, deliveries: 0 };
  return db.transaction().execute(async (trx) => {
    const events = await dialect
      .forUpdateSkipLocked(
        trx
          .selectFrom('events')
          .select(['id', 'wallet_id', 'type', 'name', 'payload', 'created_at'])
          .where('dispatched_at', 'is', null)
          .orderBy('id', 'asc')
          .limit(batch),
      )
      .execute();
    if (events.length === 0) return { events: 0, deliveries: 0 };

    const walletIds = [...new Set(events.map((e) => e.wallet_id))];
    const hooks = await trx
      .selectFrom('webhooks')
      .select(['id', 'wallet_id', 'type', 'events', 'created_at'])
      .where('wallet_id', 'in', walletIds)
      .where('status', '=', 'active')
      .where('deleted_at', 'is', null)
      .execute();
    const subscribed = hooks.map((h) => ({ ...h, events: JSON.parse(h.events) as string[] }));

    const rows: Insertable<WebhookDeliveriesTable>[] = [];
    for (const e of events) {
      const body = deliveryBody(e.name, e.payload);
      for (const h of subscribed) {
        if (h.wallet_id !== e.wallet_id || h.type !== e.type || h.created_at > e.created_at || !subscribes(h.events, e.name)) continue;
        rows.push({
          uuid: randomUUID(),
          webhook_id: h.id,
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
        });
      }
    }
    for (let i = 0; i < rows.length; i += INSERT_CHUNK) {
      await trx
        .insertInto('webhook_deliveries')
        .values(rows.slice(i, i + INSERT_CHUNK))
        .onConflict((oc) => oc.columns(['webhook_id', 'event_id']).doNothing())
        .execute();
    }
    await trx
      .updateTable('events')
      .set({ dispatched_at: nowMs })
      .where(
        'id',
        'in',
        events.map((e) => e.id),
      )
      .execute();
    return { events: events.length, deliveries: rows.length };
  });
}
