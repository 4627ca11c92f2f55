import { createHmac } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { startReceiver, type Receiver } from '../helpers/receiver.js';
import { waitFor } from '../helpers/wait.js';
import type { DeliveryWorker } from '../../src/workers/deliveries.js';
import { attemptsOf, createWebhook, deliveriesOf, emit, owner, startWorker } from './fixtures.js';

const RETRY_DELAY_MS = 1000;

describe('webhook delivery worker', () => {
  let t: TestApp;
  let rx: Receiver;
  let worker: DeliveryWorker;

  beforeAll(async () => {
    t = await startTestApp({
      env: {
        WEBHOOK_RETRY_DELAYS: '1,1,1',
        WEBHOOK_CONNECT_TIMEOUT_MS: '500',
        WEBHOOK_READ_TIMEOUT_MS: '400',
        WEBHOOK_TOTAL_TIMEOUT_MS: '700',
        // The bound per webhook is what one test below measures: 8 of 16.
        WEBHOOK_CONCURRENCY: '16',
      },
    });
    rx = await startReceiver();
    worker = startWorker(t);
  });
  afterAll(async () => {
    await worker?.stop();
    await rx?.close();
    await t?.close();
  });

  async function deliveryDone(webhookId: number, n = 1) {
    return waitFor(
      async () => {
        const rows = await deliveriesOf(t, webhookId);
        return rows.length === n && rows.every((r) => r.status === 'delivered' || r.status === 'failed') ? rows : null;
      },
      { timeoutMs: 15_000, message: `webhook ${webhookId} deliveries settled` },
    );
  }

  it('posts the body and every header exactly, signed with the secret (both schemes)', async () => {
    const o = await owner(t);
    const secret = 'whsec_exact-Secret_ü';
    const hook = await createWebhook(t, o, {
      url: `${rx.url}/exact?src=test`,
      type: 'charge',
      events: ['created'],
      signature: secret,
      with_headers: { 'X-Api-Key': 'key-123', Authorization: 'Bearer rx-token' },
    });
    const payload = {
      charge_id: 7,
      wallet_id: o.walletId,
      amount: '12.500000000000000000',
      token: 'ETH',
      uuid: '3f8a1c9e-2b4d-4e6f-8a0b-1c2d3e4f5a6b',
      status: 'pending',
      expires: 300,
      created_at: '2025-01-02 03:04:05',
    };
    rx.on('/exact', () => ({ status: 200, body: 'ok', delayMs: 150 })); // so duration_ms has a floor
    const before = Math.floor(Date.now() / 1000);
    await emit(t, o, 'charge.created', payload);
    const [delivery] = await deliveryDone(hook.id);
    const after = Math.floor(Date.now() / 1000);

    const reqs = rx.to('/exact');
    expect(reqs).toHaveLength(1);
    const r = reqs[0]!;
    const expectedBody = `{"event":"charge.created","data":${JSON.stringify(payload)}}`;
    expect(r.method).toBe('POST');
    expect(r.body).toBe(expectedBody);
    expect(JSON.parse(r.body)).toEqual({ event: 'charge.created', data: payload });

    const names = r.rawHeaders
      .filter((_, i) => i % 2 === 0)
      .map((h) => h.toLowerCase())
      .sort();
    expect(names).toEqual(
      [
        'authorization',
        'connection', // undici: keep-alive
        'content-length',
        'content-type',
        'host',
        'user-agent',
        'webhook-id',
        'webhook-signature',
        'webhook-timestamp',
        'x-api-key',
        'x-webhook-delivery',
        'x-webhook-event',
        'x-webhook-signature',
      ].sort(),
    );
    const h = r.headers;
    expect(h['content-type']).toBe('application/json');
    expect(h['content-length']).toBe(String(Buffer.byteLength(expectedBody)));
    expect(h['user-agent']).toBe('wallet-service-webhooks/0.1');
    expect(h['x-webhook-event']).toBe('charge.created');
    expect(h['x-webhook-delivery']).toBe(delivery!.uuid);
    expect(h['webhook-id']).toBe(delivery!.uuid);
    expect(h['x-api-key']).toBe('key-123');
    expect(h['authorization']).toBe('Bearer rx-token');
    const ts = Number(h['webhook-timestamp']);
    expect(ts).toBeGreaterThanOrEqual(before);
    expect(ts).toBeLessThanOrEqual(after);

    // Verified the way a receiver would, from the raw bytes and the secret.
    const hex = createHmac('sha256', secret).update(r.body).digest('hex');
    expect(h['x-webhook-signature']).toBe(`sha256=${hex}`);
    const b64 = createHmac('sha256', Buffer.from(secret, 'utf8'))
      .update(`${String(h['webhook-id'])}.${ts}.${r.body}`)
      .digest('base64');
    expect(h['webhook-signature']).toBe(`v1,${b64}`);
    expect(createHmac('sha256', 'wrong').update(r.body).digest('hex')).not.toBe(hex);

    expect(delivery).toMatchObject({
      status: 'delivered',
      attempts: 1,
      response_status: 200,
      last_error: null,
      body: expectedBody,
      locked_by: null,
    });
    const attempts = await attemptsOf(t, delivery!.id);
    expect(attempts).toHaveLength(1);
    expect(attempts[0]).toMatchObject({ attempt: 1, response_status: 200, response_body: 'ok', error: null });
    // The attempt lasted at least the receiver's 150 ms delay, and under the 700 ms total timeout.
    expect(attempts[0]!.duration_ms).toBeGreaterThanOrEqual(150);
    expect(attempts[0]!.duration_ms).toBeLessThan(700);

    // Logs name the delivery, never the secret or header values.
    const lines = t.logs.filter((l) => l.includes(delivery!.uuid));
    const delivered = lines.map((l) => JSON.parse(l) as Record<string, unknown>).filter((l) => l.msg === 'webhook delivered');
    expect(delivered).toHaveLength(1);
    expect(delivered[0]).toMatchObject({
      level: 30,
      service: 'wallet-service',
      component: 'deliveries',
      delivery: delivery!.uuid,
      webhook_id: hook.id,
      event: 'charge.created',
      status_code: 200,
      attempt: 1,
    });
    expect(delivered[0]!.duration_ms).toBe(attempts[0]!.duration_ms);
    const all = t.logs.join('\n');
    for (const leak of [secret, 'key-123', 'rx-token', hex]) expect(all).not.toContain(leak);
  });

  it('sends no signature headers without a secret', async () => {
    const o = await owner(t);
    const hook = await createWebhook(t, o, { url: `${rx.url}/unsigned`, type: 'balance', events: ['updated'] });
    await emit(t, o, 'balance.updated');
    await deliveryDone(hook.id);
    const h = rx.to('/unsigned')[0]!.headers;
    expect(h['x-webhook-signature']).toBeUndefined();
    expect(h['webhook-signature']).toBeUndefined();
    expect(h['webhook-id']).toBe(h['x-webhook-delivery']);
    expect(h['x-webhook-event']).toBe('balance.updated');
  });

  it('retries a 500 after the configured delays and ends failed after 4 attempts, each recorded', async () => {
    const o = await owner(t);
    rx.on('/fail', () => ({ status: 500, body: 'E'.repeat(5000) }));
    const hook = await createWebhook(t, o, { url: `${rx.url}/fail`, type: 'transaction', events: ['confirmed'], signature: 's' });
    await emit(t, o, 'transaction.confirmed');
    const [d] = await deliveryDone(hook.id);
    expect(d).toMatchObject({ status: 'failed', attempts: 4, response_status: 500, last_error: 'HTTP 500', locked_by: null });

    const reqs = rx.to('/fail');
    expect(reqs).toHaveLength(4);
    expect(new Set(reqs.map((r) => r.headers['x-webhook-delivery']))).toEqual(new Set([d!.uuid]));
    expect(new Set(reqs.map((r) => r.body)).size).toBe(1);
    for (let i = 1; i < reqs.length; i++) {
      // Each retry delay is 1 s ± 10% jitter (test/webhooks/schedule.test.ts checks the bounds).
      expect(reqs[i]!.receivedAtMs - reqs[i - 1]!.receivedAtMs).toBeGreaterThanOrEqual(0.9 * RETRY_DELAY_MS - 50);
      expect(Number(reqs[i]!.headers['webhook-timestamp'])).toBeGreaterThanOrEqual(Number(reqs[i - 1]!.headers['webhook-timestamp']));
    }

    const attempts = await attemptsOf(t, d!.id);
    expect(attempts.map((a) => a.attempt)).toEqual([1, 2, 3, 4]);
    for (const a of attempts) {
      expect(a.response_status).toBe(500);
      expect(a.response_body).toBe('E'.repeat(1024));
      expect(a.error).toBe('HTTP 500');
    }

    const api = await t.request('GET', `/api/wallet/${o.walletId}/webhook/${hook.id}/deliveries`, { token: o.user.token });
    expect(api.body.data[0]).toMatchObject({ id: d!.id, status: 'failed', attempts: 4, response_status: 500, next_attempt_at: null });
  });

  it('times out a hanging receiver, retries it, and ends failed after 4 attempts', async () => {
    const o = await owner(t);
    rx.on('/hang', () => ({ hang: true }));
    const hook = await createWebhook(t, o, { url: `${rx.url}/hang`, type: 'wallet', events: ['updated'] });
    await emit(t, o, 'wallet.updated');
    const [d] = await deliveryDone(hook.id);
    expect(d).toMatchObject({ status: 'failed', attempts: 4, response_status: null });
    expect(rx.to('/hang')).toHaveLength(4);
    const attempts = await attemptsOf(t, d!.id);
    expect(attempts).toHaveLength(4);
    for (const a of attempts) {
      expect(a.response_status).toBeNull();
      expect(['read timeout', 'total timeout']).toContain(a.error);
      expect(a.duration_ms).toBeGreaterThanOrEqual(350);
      expect(a.duration_ms).toBeLessThan(3000);
    }
  });

  it('delivers once to a receiver that recovers', async () => {
    const o = await owner(t);
    rx.on('/recover', (_r, n) => (n < 2 ? { status: 503, body: 'busy' } : { status: 204 }));
    const hook = await createWebhook(t, o, { url: `${rx.url}/recover`, type: 'token', events: ['added'] });
    await emit(t, o, 'token.added');
    const [d] = await deliveryDone(hook.id);
    expect(d).toMatchObject({ status: 'delivered', attempts: 3, response_status: 204, last_error: null });
    expect((await attemptsOf(t, d!.id)).map((a) => a.response_status)).toEqual([503, 503, 204]);

    // A later event to the same receiver arrives, and the first delivery was not sent again.
    await emit(t, o, 'token.added');
    await deliveryDone(hook.id, 2);
    const seen = rx.to('/recover').filter((r) => r.headers['x-webhook-delivery'] === d!.uuid);
    expect(seen).toHaveLength(3);
    expect(rx.to('/recover')).toHaveLength(4);
  });

  it('does not follow redirects: a 3xx is a failed attempt', async () => {
    const o = await owner(t);
    rx.on('/redirect', () => ({ status: 302, headers: { location: `${rx.url}/target` } }));
    const hook = await createWebhook(t, o, { url: `${rx.url}/redirect`, type: 'wallet', events: ['created'] });
    await emit(t, o, 'wallet.created');
    const d = await waitFor(async () => (await deliveriesOf(t, hook.id)).find((r) => r.attempts >= 1));
    expect(d.response_status).toBe(302);
    expect(d.last_error).toBe('HTTP 302 (redirects are not followed)');
    expect(rx.to('/target')).toHaveLength(0);
    await t.request('GET', `/api/wallet/${o.walletId}/webhook/delete/${hook.id}`, { token: o.user.token });
  });

  it('sends nothing for deleted or inactive webhooks, and cancels what they had queued', async () => {
    const o = await owner(t);
    const deleted = await createWebhook(t, o, { url: `${rx.url}/deleted`, type: 'wallet', events: ['*'] });
    const inactive = await createWebhook(t, o, { url: `${rx.url}/inactive`, type: 'wallet', events: ['*'] });
    const control = await createWebhook(t, o, { url: `${rx.url}/control`, type: 'wallet', events: ['*'] });
    await t.request('GET', `/api/wallet/${o.walletId}/webhook/delete/${deleted.id}`, { token: o.user.token });
    const upd = await t.request('POST', `/api/wallet/${o.walletId}/webhook/${inactive.id}/update`, {
      token: o.user.token,
      body: { status: 'inactive' },
    });
    expect(upd.body.data.status).toBe('inactive');
    await emit(t, o, 'wallet.updated');
    await emit(t, o, 'wallet.created');
    await deliveryDone(control.id, 2);
    expect(rx.to('/control')).toHaveLength(2);
    expect(rx.to('/deleted')).toHaveLength(0);
    expect(rx.to('/inactive')).toHaveLength(0);
    expect(await deliveriesOf(t, deleted.id)).toHaveLength(0);
    expect(await deliveriesOf(t, inactive.id)).toHaveLength(0);

    // A delivery waiting for its retry is cancelled when its webhook is deleted.
    rx.on('/later-deleted', () => ({ status: 500 }));
    const later = await createWebhook(t, o, { url: `${rx.url}/later-deleted`, type: 'wallet', events: ['*'] });
    await emit(t, o, 'wallet.updated');
    await waitFor(async () => (await deliveriesOf(t, later.id))[0]?.status === 'retrying');
    await t.request('GET', `/api/wallet/${o.walletId}/webhook/delete/${later.id}`, { token: o.user.token });
    const [cancelled] = await deliveriesOf(t, later.id);
    expect(cancelled).toMatchObject({ status: 'failed', attempts: 1, last_error: 'Webhook deleted' });
  });

  it('gives a charge webhook no transaction events, and each webhook only the events it listed', async () => {
    const o = await owner(t);
    const charge = await createWebhook(t, o, { url: `${rx.url}/charge-all`, type: 'charge', events: ['*'] });
    const paidOnly = await createWebhook(t, o, { url: `${rx.url}/charge-paid`, type: 'charge', events: ['confirmed'] });
    const tx = await createWebhook(t, o, { url: `${rx.url}/tx-all`, type: 'transaction', events: ['*'] });
    await emit(t, o, 'transaction.created');
    await emit(t, o, 'charge.created');
    await emit(t, o, 'transaction.confirmed');
    await emit(t, o, 'charge.paid');
    await deliveryDone(tx.id, 2);
    await deliveryDone(charge.id, 2);
    await deliveryDone(paidOnly.id, 1);
    const events = (path: string) => rx.to(path).map((r) => r.headers['x-webhook-event']);
    expect(events('/charge-all').sort()).toEqual(['charge.created', 'charge.paid']);
    expect(events('/charge-paid')).toEqual(['charge.paid']);
    expect(events('/tx-all').sort()).toEqual(['transaction.confirmed', 'transaction.created']);
    for (const r of rx.to('/charge-all')) expect(JSON.parse(r.body).event).toMatch(/^charge\./);
  });

  it('bounds concurrency and does not let one slow receiver hold up the others', async () => {
    const o = await owner(t);
    rx.on('/slow', () => ({ status: 200, delayMs: 500 }));
    const slow = await createWebhook(t, o, { url: `${rx.url}/slow`, type: 'balance', events: ['*'] });
    const fast = await createWebhook(t, o, { url: `${rx.url}/fast`, type: 'wallet', events: ['*'] });
    for (let i = 0; i < 24; i++) await emit(t, o, 'balance.updated');
    await waitFor(() => rx.to('/slow').length >= 1);
    for (let i = 0; i < 5; i++) await emit(t, o, 'wallet.updated');
    await deliveryDone(fast.id, 5);
    // At most half the slots (8 of 16) go to one webhook: 24 slow deliveries need 3 rounds of
    // 500 ms, and the fast ones were all delivered while they were still going.
    const slowDone = (await deliveriesOf(t, slow.id)).filter((d) => d.status === 'delivered').length;
    expect(slowDone).toBeLessThan(24);
    await deliveryDone(slow.id, 24);
    expect(rx.maxOpen('/slow')).toBe(8);
  });

  it('sends a failed delivery again on a manual retry, counting the attempt', async () => {
    const o = await owner(t);
    let healthy = false;
    rx.on('/manual', () => (healthy ? { status: 200 } : { status: 500 }));
    const hook = await createWebhook(t, o, { url: `${rx.url}/manual`, type: 'wallet', events: ['*'] });
    await emit(t, o, 'wallet.created');
    const [d] = await deliveryDone(hook.id);
    expect(d).toMatchObject({ status: 'failed', attempts: 4 });
    healthy = true;
    const res = await t.request('POST', `/api/wallet/${o.walletId}/webhook/${hook.id}/deliveries/${d!.id}/retry`, { token: o.user.token });
    expect(res.status).toBe(200);
    const done = await waitFor(async () => (await deliveriesOf(t, hook.id)).find((r) => r.status === 'delivered'));
    expect(done).toMatchObject({ id: d!.id, attempts: 5, response_status: 200, uuid: d!.uuid });
    expect(rx.to('/manual')).toHaveLength(5);
    expect((await attemptsOf(t, d!.id)).map((a) => a.response_status)).toEqual([500, 500, 500, 500, 200]);
  });

  it('is part of the process workers', async () => {
    const { startWorkers } = await import('../../src/workers/index.js');
    const ws = startWorkers(t.ctx, t.services);
    try {
      expect(ws.list.map((w) => w.name)).toContain('deliveries');
    } finally {
      await ws.stop();
    }
  });
});
