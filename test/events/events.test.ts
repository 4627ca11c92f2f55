/** The events API: the user's outbox read back with a cursor, data exactly as webhooks get it. */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp, type TestUser } from '../helpers/app.js';
import { ensureNetwork } from '../helpers/factories.js';
import { startReceiver, type Receiver } from '../helpers/receiver.js';
import { waitFor } from '../helpers/wait.js';
import { startDeliveryWorker } from '../../src/workers/deliveries.js';

const DATETIME = /^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d$/;

interface ApiEvent {
  id: number;
  event: string;
  wallet_id: number;
  data: Record<string, unknown>;
  created_at: string;
}

describe('events API', () => {
  let t: TestApp;
  let rx: Receiver;
  let alice: TestUser;
  let bob: TestUser;
  let walletId: number;
  let all: ApiEvent[];

  beforeAll(async () => {
    t = await startTestApp();
    rx = await startReceiver();
    alice = await t.createUser();
    bob = await t.createUser();
    const networkId = (await ensureNetwork(t)).id;
    const call = async (path: string, body: unknown, token = alice.token) => {
      const res = await t.request('POST', path, { token, body });
      expect(res.status, res.text).toBe(200);
      return res.body.data;
    };
    walletId = (await call('/api/wallet/create', { name: 'Shop', network_id: networkId })).id;
    await call(`/api/wallet/${walletId}/webhook/create`, { url: `${rx.url}/charges`, type: 'charge', events: ['*'] });
    await call(`/api/wallet/${walletId}/webhook/create`, { url: `${rx.url}/wallets`, type: 'wallet', events: ['*'] });
    for (const amount of ['1', '2.5', '0.000000000000000001'])
      await call(`/api/wallet/${walletId}/charge/create`, { amount, token: 'ETH' });
    await call(`/api/wallet/${walletId}/update`, { name: 'Shop (renamed)' });
    await call('/api/wallet/create', { name: 'Bob’s', network_id: networkId }, bob.token);
    all = (await t.request('GET', '/api/events', { token: alice.token })).body.data;
  });
  afterAll(async () => {
    await rx?.close();
    await t?.close();
  });

  it('lists the user’s events oldest first, each with exactly the data its webhook received', async () => {
    expect(all.map((e) => e.event)).toEqual(['wallet.created', 'charge.created', 'charge.created', 'charge.created', 'wallet.updated']);
    expect(all.map((e) => e.id)).toEqual([...all.map((e) => e.id)].sort((a, b) => a - b));
    for (const e of all) {
      expect(Object.keys(e).sort()).toEqual(['created_at', 'data', 'event', 'id', 'wallet_id']);
      expect(e.wallet_id).toBe(walletId);
      expect(e.created_at).toMatch(DATETIME);
    }
    expect(all[2]!.data).toMatchObject({ wallet_id: walletId, amount: '2.500000000000000000', token: 'ETH', status: 'pending' });

    const worker = startDeliveryWorker(t.ctx, { webhooks: t.services.webhooks });
    try {
      // wallet.created happened before the webhooks existed: the other four are delivered.
      await waitFor(() => rx.requests.length === 4, { message: 'four deliveries' });
    } finally {
      await worker.stop();
    }
    const received = rx.requests.map((r) => JSON.parse(r.body) as { event: string; data: unknown });
    const sortKey = (x: { event: string; data: unknown }) => `${x.event} ${JSON.stringify(x.data)}`;
    expect(received.map(sortKey).sort()).toEqual(
      all
        .slice(1)
        .map((e) => sortKey({ event: e.event, data: e.data }))
        .sort(),
    );

    const one = await t.request('GET', `/api/events/${all[1]!.id}`, { token: alice.token });
    expect(one.status).toBe(200);
    expect(one.body).toEqual({ status: 'success', message: 'Event retrieved', data: all[1] });
  });

  it('pages after a cursor with X-Next-Cursor, and filters by type and by event', async () => {
    const seen: ApiEvent[] = [];
    let cursor = 0;
    for (;;) {
      const res = await t.request('GET', `/api/events?after=${cursor}&limit=2`, { token: alice.token });
      expect(res.status).toBe(200);
      const next = Number(res.headers.get('x-next-cursor'));
      if (res.body.data.length === 0) {
        expect(next).toBe(cursor); // nothing new: the cursor stays
        break;
      }
      expect(res.body.data.length).toBeLessThanOrEqual(2);
      expect(next).toBe(res.body.data.at(-1).id);
      seen.push(...res.body.data);
      cursor = next;
    }
    expect(seen).toEqual(all);

    const charges = await t.request('GET', '/api/events?type=charge', { token: alice.token });
    expect(charges.body.data).toEqual(all.filter((e) => e.event.startsWith('charge.')));
    const updated = await t.request('GET', `/api/events?event=wallet.updated&after=${all[0]!.id}`, { token: alice.token });
    expect(updated.body.data).toEqual([all[4]]);
    const none = await t.request('GET', '/api/events?type=charge&event=wallet.updated', { token: alice.token });
    expect(none.body.data).toEqual([]);
  });

  it('lists the newest events first with order=desc, X-Next-Cursor the highest id returned', async () => {
    const newest = await t.request('GET', '/api/events?order=desc&limit=2', { token: alice.token });
    expect(newest.status).toBe(200);
    expect(newest.body.data).toEqual([all[4], all[3]]);
    expect(Number(newest.headers.get('x-next-cursor'))).toBe(all[4]!.id);
    // From that cursor, only what comes after it: nothing yet.
    const next = await t.request('GET', `/api/events?after=${all[4]!.id}`, { token: alice.token });
    expect(next.body.data).toEqual([]);
    const charges = await t.request('GET', `/api/events?order=desc&type=charge&after=${all[1]!.id}`, { token: alice.token });
    expect(charges.body.data).toEqual([all[3], all[2]]);
    expect(Number(charges.headers.get('x-next-cursor'))).toBe(all[3]!.id);
    const bad = await t.request('GET', '/api/events?order=newest', { token: alice.token });
    expect([bad.status, bad.body.data]).toEqual([422, { order: ['The selected order is invalid.'] }]);
  });

  it('hides another user’s events from the list and from show (404 Event not found)', async () => {
    const bobs = (await t.request('GET', '/api/events', { token: bob.token })).body.data as ApiEvent[];
    expect(bobs.map((e) => e.event)).toEqual(['wallet.created']);
    expect(bobs[0]!.wallet_id).not.toBe(walletId);
    for (const id of [String(all[0]!.id), '999999', 'abc', '0']) {
      const res = await t.request('GET', `/api/events/${id}`, { token: bob.token });
      expect([id, res.status, res.body]).toEqual([id, 404, { status: 'error', message: 'Event not found', data: null }]);
    }
    const aliceSees = (await t.request('GET', '/api/events', { token: alice.token })).body.data as ApiEvent[];
    expect(aliceSees.map((e) => e.id)).not.toContain(bobs[0]!.id);
  });

  it('validates the query with the contract’s 422 messages', async () => {
    const cases: [string, Record<string, string[]>][] = [
      ['limit=0', { limit: ['The limit field must be at least 1.'] }],
      ['limit=1001', { limit: ['The limit field must not be greater than 1000.'] }],
      ['limit=ten', { limit: ['The limit field must be an integer.'] }],
      ['after=-1', { after: ['The after field must be at least 0.'] }],
      ['after=1.5', { after: ['The after field must be an integer.'] }],
      ['type=payment', { type: ['The selected type is invalid.'] }],
      ['event=charge.refund_claimed', { event: ['The selected event is invalid.'] }],
    ];
    for (const [query, fields] of cases) {
      const res = await t.request('GET', `/api/events?${query}`, { token: alice.token });
      expect([query, res.status, res.body.data]).toEqual([query, 422, fields]);
    }
    const max = await t.request('GET', '/api/events?limit=1000', { token: alice.token });
    expect(max.status).toBe(200);
  });

  it('is readable with a read key, not with a key without read', async () => {
    const create = (scopes: string[]) =>
      t.request('POST', '/api/auth/key/create', { token: alice.token, body: { name: scopes.join(' '), scopes } });
    const reader = (await create(['read'])).body.data.key;
    const writer = (await create(['charges:write'])).body.data.key;
    expect((await t.request('GET', '/api/events', { token: reader })).body.data).toEqual(all);
    expect((await t.request('GET', `/api/events/${all[0]!.id}`, { token: reader })).status).toBe(200);
    expect((await t.request('GET', '/api/events', { token: writer })).status).toBe(403);
    expect((await t.request('GET', `/api/events/${all[0]!.id}`, { token: writer })).status).toBe(403);
  });
});
