/**
 * A worker with room leases the deliveries its fan-out makes, in the fan-out's transaction, so
 * they are sent without a claim transaction between the event and the first send (event →
 * delivery p50 under the update load 24.6–27.6 → 15.6 ms, BENCHMARKS.md). The lease follows a
 * claim's rules: at most the room, at most a webhook's share, the rest left `pending` for a claim;
 * a leased row whose worker died is due again when the lease expires.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { dispatchEvents } from '../../src/workers/deliveries/dispatch.js';
import { claimDeliveries } from '../../src/workers/deliveries/claim.js';
import { createWebhook, emit, owner, type Owner } from './fixtures.js';

let t: TestApp;

beforeAll(async () => {
  t = await startTestApp({ workers: false });
});
afterAll(async () => t?.close());

function rowsOf(o: Owner) {
  return t.store.db
    .selectFrom('webhook_deliveries as d')
    .innerJoin('webhooks as w', 'w.id', 'd.webhook_id')
    .select(['d.id', 'd.webhook_id', 'd.event_id', 'd.status', 'd.locked_by', 'd.locked_until', 'd.attempts'])
    .where('w.wallet_id', '=', o.walletId)
    .orderBy('d.id', 'asc')
    .execute();
}

describe('a fan-out that leases its deliveries', () => {
  it('leases up to the room and each webhook its share, returns them ready to send, leaves the rest pending for a claim', async () => {
    const o = await owner(t);
    const a = await createWebhook(t, o, { url: 'https://a.example.com/hook', type: 'wallet', events: ['*'], signature: 'whsec_fan_a' });
    const b = await createWebhook(t, o, { url: 'https://b.example.com/hook', type: 'wallet', events: ['*'] });
    const events = [await emit(t, o, 'wallet.created'), await emit(t, o, 'wallet.updated'), await emit(t, o, 'wallet.updated')];
    const now = Date.now();
    // `a` already holds one row in the worker; each webhook may hold two; room for three.
    const out = await dispatchEvents(t.store.db, now, 200, {
      workerId: 'fan-out-1',
      limit: 3,
      untilMs: now + 60_000,
      heldByWebhook: new Map([[a.id, 1]]),
      perWebhookLimit: 2,
    });
    expect(out.events).toBeGreaterThanOrEqual(3);
    expect(out.deliveries).toBe(6);

    const rows = await rowsOf(o);
    expect(rows.map((r) => [r.webhook_id, r.event_id])).toEqual([
      [a.id, events[0]],
      [b.id, events[0]],
      [a.id, events[1]],
      [b.id, events[1]],
      [a.id, events[2]],
      [b.id, events[2]],
    ]);
    // a: one (held 1 + 1 = its share of 2); b: two; three in all (the room).
    const leased = rows.filter((r) => r.locked_by !== null);
    expect(leased.map((r) => [r.webhook_id, r.event_id])).toEqual([
      [a.id, events[0]],
      [b.id, events[0]],
      [b.id, events[1]],
    ]);
    expect(
      leased.every(
        (r) => r.locked_by === 'fan-out-1' && Number(r.locked_until) === now + 60_000 && r.status === 'pending' && r.attempts === 0,
      ),
    ).toBe(true);
    expect(rows.filter((r) => r.locked_by === null && r.locked_until === null && r.status === 'pending')).toHaveLength(3);

    // What comes back is what a claim would give: the row, its webhook's URL and secrets.
    const signature = (await t.store.db.selectFrom('webhooks').select('signature_enc').where('id', '=', a.id).executeTakeFirstOrThrow())
      .signature_enc;
    expect(out.claimed.map((c) => [c.id, c.webhook_id, c.url, c.attempts, c.next_attempt_at])).toEqual(
      leased.map((r) => [r.id, r.webhook_id, r.webhook_id === a.id ? a.url : b.url, 0, now]),
    );
    expect(out.claimed[0]!.signature_enc).toBe(signature);
    expect(out.claimed[0]!.event_name).toBe('wallet.created');
    expect(JSON.parse(out.claimed[0]!.body)).toMatchObject({ event: 'wallet.created' });
    expect(out.claimed[1]!.signature_enc).toBeNull();

    // Another worker's claim now takes only the unleased rows ...
    const claim = (nowMs: number) =>
      claimDeliveries(t.store.db, t.store.dialect, {
        workerId: 'fan-out-2',
        limit: 10,
        leaseMs: 120_000,
        nowMs,
        heldByWebhook: new Map(),
        perWebhookLimit: 10,
      });
    const first = await claim(now + 1);
    expect(first.claimed.map((c) => c.id).sort((x, y) => x - y)).toEqual(rows.filter((r) => r.locked_by === null).map((r) => r.id));
    // ... and the leased ones once their lease has expired (their worker died before sending).
    const later = await claim(now + 60_001);
    expect(later.claimed.map((c) => c.id).sort((x, y) => x - y)).toEqual(leased.map((r) => r.id));
  });

  it('a fan-out without a lease leaves every row pending and unleased', async () => {
    const o = await owner(t);
    await createWebhook(t, o, { url: 'https://c.example.com/hook', type: 'wallet', events: ['*'] });
    await emit(t, o, 'wallet.updated');
    const out = await dispatchEvents(t.store.db, Date.now(), 200);
    expect(out.claimed).toEqual([]);
    expect((await rowsOf(o)).map((r) => [r.status, r.locked_by])).toEqual([['pending', null]]);
  });

  it('marks the events of wallets without webhooks dispatched beside the others, with no delivery, each event once', async () => {
    // On PostgreSQL those are marked by the fan-out's read of the events and their webhooks. The
    // quiet wallet's webhook is live when its events are written (so they wait for the fan-out:
    // an event written without one is written dispatched) and inactive when they are fanned out.
    const quiet = await owner(t);
    const gone = await createWebhook(t, quiet, { url: 'https://q.example.com/hook', type: 'wallet', events: ['*'] });
    const o = await owner(t);
    const hook = await createWebhook(t, o, { url: 'https://d.example.com/hook', type: 'wallet', events: ['*'] });
    const ids = [await emit(t, quiet, 'wallet.updated'), await emit(t, o, 'wallet.updated'), await emit(t, quiet, 'wallet.updated')];
    const written = await t.store.db.selectFrom('events').select('dispatched_at').where('id', 'in', ids).execute();
    expect(written.map((e) => e.dispatched_at)).toEqual([null, null, null]);
    const off = await t.request('POST', `/api/wallet/${quiet.walletId}/webhook/${gone.id}/update`, {
      token: quiet.user.token,
      body: { status: 'inactive' },
    });
    expect(off.status, off.text).toBe(200);
    const out = await dispatchEvents(t.store.db, Date.now(), 200, undefined, true);
    expect([out.events, out.deliveries]).toEqual([3, 1]);
    const events = await t.store.db.selectFrom('events').select(['id', 'dispatched_at']).where('id', 'in', ids).orderBy('id').execute();
    expect(events.every((e) => e.dispatched_at !== null)).toBe(true);
    expect((await rowsOf(o)).map((r) => [r.webhook_id, r.event_id])).toEqual([[hook.id, ids[1]]]);
    expect(await rowsOf(quiet)).toEqual([]);
    // Nothing is left for a second fan-out.
    expect(await dispatchEvents(t.store.db, Date.now(), 200, undefined, true)).toEqual({ events: 0, deliveries: 0, claimed: [] });
  });
});
