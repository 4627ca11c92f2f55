/** Retention: old events, deliveries and attempts are pruned in bounded batches; nothing that may still be sent. */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock, startTestApp, type TestApp } from '../helpers/app.js';
import { createWalletRow } from '../helpers/factories.js';
import { pruneEventLog } from '../../src/workers/retention.js';

const DAY = 24 * 3600_000;

describe('event log retention', () => {
  let t: TestApp;
  const clock = new ManualClock(Date.UTC(2025, 5, 1));
  beforeAll(async () => {
    t = await startTestApp({ clock, env: { EVENT_RETENTION_DAYS: '30' } });
  });
  afterAll(async () => t?.close());

  it('deletes what is past EVENT_RETENTION_DAYS and settled, in batches, keeping pending and retrying deliveries', async () => {
    const user = await t.createUser();
    const wallet = await createWalletRow(t, user.id);
    const db = t.store.db;
    const hook = await db
      .insertInto('webhooks')
      .values({
        wallet_id: wallet.id,
        url: 'http://127.0.0.1:9/',
        type: 'balance',
        events: '["*"]',
        status: 'active',
        signature_enc: null,
        headers_enc: null,
        deleted_at: null,
        created_at: 0,
        updated_at: 0,
      })
      .returning('id')
      .executeTakeFirstOrThrow();
    const now = clock.nowMs();
    const event = async (ageDays: number, dispatched = true) =>
      (
        await db
          .insertInto('events')
          .values({
            user_id: user.id,
            wallet_id: wallet.id,
            type: 'balance',
            name: 'balance.updated',
            payload: '{}',
            dispatched_at: dispatched ? now - ageDays * DAY : null,
            created_at: now - ageDays * DAY,
          })
          .returning('id')
          .executeTakeFirstOrThrow()
      ).id;
    const delivery = async (eventId: number, ageDays: number, status: string) => {
      const at = now - ageDays * DAY;
      const d = await db
        .insertInto('webhook_deliveries')
        .values({
          uuid: randomUUID(),
          webhook_id: hook.id,
          event_id: eventId,
          event_name: 'balance.updated',
          body: '{}',
          status,
          attempts: 1,
          next_attempt_at: at,
          locked_by: null,
          locked_until: null,
          response_status: 500,
          last_error: null,
          delivered_at: null,
          created_at: at,
          updated_at: at,
        })
        .returning('id')
        .executeTakeFirstOrThrow();
      await db
        .insertInto('webhook_attempts')
        .values({ delivery_id: d.id, attempt: 1, response_status: 500, duration_ms: 3, response_body: 'no', error: null, created_at: at })
        .execute();
      return d.id;
    };

    const gone = { events: [] as number[], deliveries: [] as number[] };
    for (let i = 0; i < 3; i++) {
      const e = await event(40 - i);
      gone.events.push(e);
      gone.deliveries.push(await delivery(e, 40 - i, i === 0 ? 'failed' : 'delivered'));
    }
    gone.events.push(await event(31)); // no webhook took it
    const retrying = await event(35);
    const retryingDelivery = await delivery(retrying, 35, 'retrying');
    const pending = await event(33);
    const pendingDelivery = await delivery(pending, 33, 'pending');
    const undispatched = await event(32, false);
    const recent = await event(29);
    const recentDelivery = await delivery(recent, 29, 'delivered');

    // Bounded: one batch of 2 per table per run.
    expect(await pruneEventLog(t.ctx, { batch: 2, maxBatches: 1 })).toEqual({ deliveries: 2, events: 2 });
    expect(await pruneEventLog(t.ctx, { batch: 2, maxBatches: 5 })).toEqual({ deliveries: 1, events: 2 });
    expect(await pruneEventLog(t.ctx)).toEqual({ deliveries: 0, events: 0 });

    const eventIds = (await db.selectFrom('events').select('id').orderBy('id').execute()).map((r) => r.id);
    expect(eventIds).toEqual([retrying, pending, undispatched, recent]);
    const deliveries = (await db.selectFrom('webhook_deliveries').select('id').orderBy('id').execute()).map((r) => r.id);
    expect(deliveries).toEqual([retryingDelivery, pendingDelivery, recentDelivery]);
    const attempts = (await db.selectFrom('webhook_attempts').select('delivery_id').orderBy('delivery_id').execute()).map(
      (r) => r.delivery_id,
    );
    expect(attempts).toEqual([retryingDelivery, pendingDelivery, recentDelivery]);

    // The events API no longer shows what was pruned.
    const listed = (await t.request('GET', '/api/events', { token: user.token })).body.data.map((e: { id: number }) => e.id);
    expect(listed).toEqual([retrying, pending, undispatched, recent]);
  });

  it('never deletes the newest event, so SQLite cannot hand its id out again', async () => {
    clock.advance(400 * DAY);
    const db = t.store.db;
    await db.updateTable('events').set({ dispatched_at: 1 }).execute();
    await db.updateTable('webhook_deliveries').set({ status: 'delivered' }).execute();
    const newest = (
      await db
        .selectFrom('events')
        .select((eb) => eb.fn.max('id').as('id'))
        .executeTakeFirstOrThrow()
    ).id;
    await pruneEventLog(t.ctx);
    expect((await db.selectFrom('events').select('id').execute()).map((r) => Number(r.id))).toEqual([Number(newest)]);
    expect(await db.selectFrom('webhook_deliveries').select('id').execute()).toEqual([]);
  });
});
