/**
 * The claim's candidates: due `pending` and `retrying` rows, oldest first across both, leased
 * rows skipped, at most `limit` (both databases). The query plan on SQLite:
 * test/webhooks/claim-plan.test.ts.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock, startTestApp, type TestApp } from '../helpers/app.js';
import { createWalletRow } from '../helpers/factories.js';
import { lockDueDeliveries } from '../../src/workers/deliveries/deliveries.repository.js';

describe('claim candidates', () => {
  let t: TestApp;
  const clock = new ManualClock(Date.UTC(2025, 5, 1));
  beforeAll(async () => {
    t = await startTestApp({ clock, env: { WORKERS: 'false' } });
  });
  afterAll(async () => t?.close());

  it('merges pending and retrying rows oldest first, skips live leases and due-later rows, and stops at the limit', async () => {
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
    // One delivery per (webhook, event): an event each.
    const newEvent = async () =>
      (
        await db
          .insertInto('events')
          .values({
            user_id: user.id,
            wallet_id: wallet.id,
            type: 'balance',
            name: 'balance.updated',
            payload: '{}',
            dispatched_at: now,
            created_at: now,
          })
          .returning('id')
          .executeTakeFirstOrThrow()
      ).id;
    const row = async (status: string, dueInMs: number, lockedForMs: number | null = null) => {
      const eventId = await newEvent();
      return (
        await db
          .insertInto('webhook_deliveries')
          .values({
            uuid: randomUUID(),
            webhook_id: hook.id,
            event_id: eventId,
            event_name: 'balance.updated',
            body: '{}',
            status,
            attempts: status === 'retrying' ? 1 : 0,
            next_attempt_at: now + dueInMs,
            locked_by: lockedForMs === null ? null : 'other',
            locked_until: lockedForMs === null ? null : now + lockedForMs,
            response_status: null,
            last_error: null,
            delivered_at: null,
            created_at: now,
            updated_at: now,
          })
          .returning('id')
          .executeTakeFirstOrThrow()
      ).id;
    };
    const p1 = await row('pending', -5000);
    const r1 = await row('retrying', -4000);
    const p2 = await row('pending', -3000);
    await row('pending', -3500, 60_000); // leased by another worker
    const r2 = await row('retrying', -2000);
    const expiredLease = await row('retrying', -1000, -1); // its lease ran out: due again
    const p3 = await row('pending', -1000);
    await row('retrying', 10_000); // not due yet
    await row('delivered', -9000);
    await row('failed', -9000);

    const claim = (limit: number) =>
      db.transaction().execute((trx) => lockDueDeliveries(trx, t.store.dialect, { nowMs: now, excludeWebhooks: [], limit }));
    expect((await claim(10)).map((c) => c.id)).toEqual([p1, r1, p2, r2, expiredLease, p3]);
    expect((await claim(3)).map((c) => c.id)).toEqual([p1, r1, p2]);
    expect(
      await db
        .transaction()
        .execute((trx) => lockDueDeliveries(trx, t.store.dialect, { nowMs: now, excludeWebhooks: [hook.id], limit: 10 })),
    ).toEqual([]);
  });
});
