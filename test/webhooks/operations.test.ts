/**
 * Webhooks that can be operated (docs/webhooks.md, "Operating a webhook"), through HTTP with a real
 * receiver and the real delivery worker: test sends, one delivery with its attempts, recovery of
 * failed deliveries, secret rotation checked with the `standardwebhooks` package, 410 Gone,
 * Retry-After, and the automatic deactivation of a webhook that only fails.
 */
import { createHmac } from 'node:crypto';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { expectValidationError } from '../helpers/expect.js';
import { startReceiver, type ReceivedRequest, type Receiver } from '../helpers/receiver.js';
import { waitFor } from '../helpers/wait.js';
import { formatDateTime } from '../../src/lib/time.js';
import { SECRET_COLUMNS } from '../../src/modules/secrets/secrets.repository.js';
import type { DeliveryWorker } from '../../src/workers/deliveries.js';
import { createWebhook, deliveriesOf, emit, owner, startWorker, type Owner } from './fixtures.js';
import { webhookPlace } from '../../src/modules/webhooks/webhooks.service.js';

const DATETIME = /^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}$/;
const OVERLAP_S = 3;

/** What a receiver using the `standardwebhooks` package does with a delivery. */
function verifies(secret: string, r: ReceivedRequest): boolean {
  try {
    new Webhook(Buffer.from(secret, 'utf8').toString('base64')).verify(r.body, r.headers as Record<string, string>);
    return true;
  } catch {
    return false;
  }
}

describe('operating webhooks', () => {
  let t: TestApp;
  let rx: Receiver;
  let worker: DeliveryWorker;

  beforeAll(async () => {
    t = await startTestApp({
      env: { WEBHOOK_RETRY_DELAYS: '1,3', WEBHOOK_SECRET_OVERLAP_S: String(OVERLAP_S), WEBHOOK_DISABLE_AFTER_S: '0' },
    });
    rx = await startReceiver();
    worker = startWorker(t);
  });
  afterAll(async () => {
    await worker?.stop();
    await rx?.close();
    await t?.close();
  });

  const base = (o: Owner, hookId: number) => `/api/wallet/${o.walletId}/webhook/${hookId}`;
  const sendTest = (o: Owner, hookId: number) => t.request('POST', `${base(o, hookId)}/test`, { token: o.user.token });
  const detail = (o: Owner, hookId: number, id: number) => t.request('GET', `${base(o, hookId)}/deliveries/${id}`, { token: o.user.token });
  const hookRow = (id: number) => t.store.db.selectFrom('webhooks').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
  const settled = (hookId: number, n: number) =>
    waitFor(
      async () => {
        const rows = await deliveriesOf(t, hookId);
        return rows.length === n && rows.every((r) => r.status === 'delivered' || r.status === 'failed') ? rows : null;
      },
      { timeoutMs: 20_000, message: `${n} deliveries of webhook ${hookId} settled` },
    );

  it('test send delivers webhook.test regardless of the filter, signed, and outside the events API', async () => {
    const o = await owner(t);
    const secret = 'whsec_test-send-1';
    const hook = await createWebhook(t, o, { url: `${rx.url}/test-send`, type: 'charge', events: ['paid'], signature: secret });
    const before = Date.now();
    const res = await sendTest(o, hook.id);
    expect(res.status, res.text).toBe(200);
    expect(res.body.message).toBe('Test delivery queued');
    expect(res.body.data).toMatchObject({ event: 'webhook.test', status: 'pending', attempts: 0, response_status: null });
    const r = await waitFor(() => rx.to('/test-send')[0]);
    expect(r.headers['x-webhook-event']).toBe('webhook.test');
    expect(r.headers['webhook-id']).toBe(res.body.data.uuid);
    const body = JSON.parse(r.body);
    expect(Object.keys(body.data).sort()).toEqual(['sent_at', 'webhook_id']);
    expect(body.event).toBe('webhook.test');
    expect(body.data.webhook_id).toBe(hook.id);
    expect(body.data.sent_at).toMatch(DATETIME);
    expect(Date.parse(`${body.data.sent_at.replace(' ', 'T')}Z`)).toBeGreaterThanOrEqual(Math.floor(before / 1000) * 1000);
    expect(verifies(secret, r)).toBe(true);
    expect(r.headers['x-webhook-signature']).toBe(`sha256=${createHmac('sha256', secret).update(r.body).digest('hex')}`);
    const [row] = await settled(hook.id, 1);
    expect(row).toMatchObject({ id: res.body.data.id, status: 'delivered', attempts: 1 });
    // Not an event of the user's log.
    const events = await t.request('GET', '/api/events', { token: o.user.token });
    expect(events.body.data.map((e: { event: string }) => e.event)).not.toContain('webhook.test');

    // Inactive: 400; another user's webhook: 404, in the contract's order.
    expect((await t.request('POST', `${base(o, hook.id)}/update`, { token: o.user.token, body: { status: 'inactive' } })).status).toBe(200);
    expect((await sendTest(o, hook.id)).body).toEqual({ status: 'error', message: 'The webhook is inactive', data: null });
    const other = await owner(t);
    expect((await t.request('POST', `${base(other, hook.id)}/test`, { token: other.user.token })).body.message).toBe('Webhook not found');
    expect((await t.request('POST', `${base(o, hook.id)}/test`, { token: other.user.token })).body.message).toBe('Wallet not found');
    expect((await t.request('POST', `${base(o, hook.id)}/test`)).status).toBe(401);
  });

  it('delivery detail shows every attempt with its status, duration, error and first 1 KiB', async () => {
    const o = await owner(t);
    const hook = await createWebhook(t, o, { url: `${rx.url}/detail`, type: 'wallet', events: ['*'] });
    rx.on('/detail', (_r, n) => (n === 0 ? { status: 500, body: 'X'.repeat(3000), delayMs: 60 } : { status: 200, body: 'fine' }));
    const sent = await sendTest(o, hook.id);
    await settled(hook.id, 1);
    const res = await detail(o, hook.id, sent.body.data.id);
    expect(res.status, res.text).toBe(200);
    expect(res.body.message).toBe('Delivery');
    const d = res.body.data;
    expect(d).toMatchObject({
      id: sent.body.data.id,
      uuid: sent.body.data.uuid,
      event: 'webhook.test',
      status: 'delivered',
      response_status: 200,
    });
    expect(d.attempts).toHaveLength(2);
    for (const a of d.attempts)
      expect(Object.keys(a).sort()).toEqual(['at', 'attempt', 'duration_ms', 'error', 'response_body', 'response_status']);
    expect(d.attempts[0]).toMatchObject({ attempt: 1, response_status: 500, error: 'HTTP 500', response_body: 'X'.repeat(1024) });
    expect(d.attempts[0].duration_ms).toBeGreaterThanOrEqual(60);
    expect(d.attempts[1]).toMatchObject({ attempt: 2, response_status: 200, error: null, response_body: 'fine' });
    expect(d.attempts[0].at).toMatch(DATETIME);
    expect(d.attempts[1].at >= d.attempts[0].at).toBe(true);

    // A network error: no status, the error text.
    const dead = await createWebhook(t, o, { url: 'http://127.0.0.1:1/refused', type: 'wallet', events: ['*'] });
    const s2 = await sendTest(o, dead.id);
    const first = await waitFor(async () => {
      const r = await detail(o, dead.id, s2.body.data.id);
      return r.body.data.attempts.length >= 1 ? r.body.data.attempts[0] : null;
    });
    expect(first).toMatchObject({ attempt: 1, response_status: null, error: 'connection refused', response_body: null });

    // Another webhook's delivery, an unknown one, another user's: 404s.
    expect((await detail(o, dead.id, sent.body.data.id)).body).toEqual({ status: 'error', message: 'Delivery not found', data: null });
    expect((await detail(o, hook.id, 99_999_999)).body.message).toBe('Delivery not found');
    const other = await owner(t);
    expect((await t.request('GET', `${base(o, hook.id)}/deliveries/${sent.body.data.id}`, { token: other.user.token })).body.message).toBe(
      'Wallet not found',
    );
  });

  it('recover re-sends exactly the failed deliveries since the time, as the same deliveries', async () => {
    const o = await owner(t);
    let up = false;
    const answer = (r: ReceivedRequest) => (up || r.body.includes('"name":"deliver me"') ? { status: 200 } : { status: 500 });
    rx.on('/recover-a', answer);
    rx.on('/recover-b', answer);
    const a = await createWebhook(t, o, { url: `${rx.url}/recover-a`, type: 'wallet', events: ['*'] });
    const b = await createWebhook(t, o, { url: `${rx.url}/recover-b`, type: 'wallet', events: ['*'] });
    const payload = (name: string) => ({
      wallet_id: o.walletId,
      name,
      address: '0x0',
      description: null,
      is_mainnet: false,
      network: 31337,
      updated_at: '2025-01-01 00:00:00',
    });

    await emit(t, o, 'wallet.updated', payload('old'));
    const [old] = await waitFor(async () => ((await deliveriesOf(t, a.id)).length === 1 ? deliveriesOf(t, a.id) : null));
    // `since` is the next whole second after the old delivery was created.
    const sinceMs = Math.floor(old!.created_at / 1000) * 1000 + 1000;
    await waitFor(() => Date.now() >= sinceMs + 5, { timeoutMs: 2000 });
    for (const name of ['new 1', 'new 2', 'deliver me']) await emit(t, o, 'wallet.updated', payload(name));
    const rowsA = await settled(a.id, 4);
    const rowsB = await settled(b.id, 4);
    expect(rowsA.map((r) => r.status)).toEqual(['failed', 'failed', 'failed', 'delivered']);
    const resend = rowsA.slice(1, 3);
    const before = rx.requests.length;

    up = true;
    const since = formatDateTime(sinceMs);
    const res = await t.request('POST', `${base(o, a.id)}/recover`, { token: o.user.token, body: { since } });
    expect(res.status, res.text).toBe(200);
    expect(res.body).toEqual({ status: 'success', message: 'Deliveries queued', data: { count: 2 } });
    const after = await waitFor(async () => {
      const rows = await deliveriesOf(t, a.id);
      return rows.filter((r) => r.status === 'delivered').length === 3 ? rows : null;
    });
    expect(after.map((r) => [r.id, r.uuid, r.status, r.attempts])).toEqual([
      // Three attempts each (the first and two retries), then one more from recover.
      [rowsA[0]!.id, rowsA[0]!.uuid, 'failed', 3],
      [resend[0]!.id, resend[0]!.uuid, 'delivered', 4],
      [resend[1]!.id, resend[1]!.uuid, 'delivered', 4],
      [rowsA[3]!.id, rowsA[3]!.uuid, 'delivered', 1],
    ]);
    const again = rx.requests.slice(before);
    expect(again.map((r) => r.headers['webhook-id']).sort()).toEqual(resend.map((r) => r.uuid).sort());
    expect((await deliveriesOf(t, b.id)).map((r) => r.status)).toEqual(rowsB.map((r) => r.status));

    // Nothing failed since then any more.
    expect((await t.request('POST', `${base(o, a.id)}/recover`, { token: o.user.token, body: { since } })).body.data).toEqual({ count: 0 });
  });

  it('recover checks since (422) after the wallet and webhook (404), and refuses an inactive webhook (400)', async () => {
    const o = await owner(t);
    const hook = await createWebhook(t, o, { url: `${rx.url}/recover-checks`, type: 'wallet', events: ['*'] });
    const recover = (body: unknown, who = o, hookId = hook.id) =>
      t.request('POST', `${base(who, hookId)}/recover`, { token: who.user.token, body });
    expectValidationError(await recover({}), { since: ['The since field is required.'] });
    expectValidationError(await recover({ since: 5 }), { since: ['The since field must be a string.'] });
    for (const since of ['2025-02-30 00:00:00', '2025-01-01T00:00:00', 'yesterday', '2025-01-01 24:00:00']) {
      expectValidationError(
        await recover({ since }),
        { since: ['The since field must be a datetime in the format YYYY-MM-DD HH:MM:SS.'] },
        since,
      );
    }
    const tooOld = formatDateTime(Date.now() - 31 * 24 * 3600 * 1000);
    expectValidationError(await recover({ since: tooOld }), { since: ['The since field must not be more than 30 days ago.'] });
    const other = await owner(t);
    expect((await recover({}, other)).body.message).toBe('Webhook not found');
    expect((await t.request('POST', `${base(o, hook.id)}/recover`, { token: other.user.token, body: {} })).body.message).toBe(
      'Wallet not found',
    );
    await t.request('POST', `${base(o, hook.id)}/update`, { token: o.user.token, body: { status: 'inactive' } });
    expect((await recover({ since: formatDateTime(Date.now() - 60_000) })).body).toEqual({
      status: 'error',
      message: 'The webhook is inactive',
      data: null,
    });
  });

  it('during the overlap either secret verifies with standardwebhooks; afterwards only the new one', async () => {
    const o = await owner(t);
    const [oldSecret, newSecret] = ['whsec_old-secret-1', 'whsec_new-secret-2'];
    const hook = await createWebhook(t, o, { url: `${rx.url}/rotate`, type: 'token', events: ['*'], signature: oldSecret });
    const upd = await t.request('POST', `${base(o, hook.id)}/update`, { token: o.user.token, body: { signature: newSecret } });
    expect(upd.status, upd.text).toBe(200);
    const rotatedAt = Date.now();
    const row = await hookRow(hook.id);
    expect(row.previous_signature_enc).not.toBeNull();
    expect(row.previous_signature_enc).not.toContain(oldSecret);
    expect(t.ctx.secrets.decrypt(row.previous_signature_enc!, webhookPlace(hook.id, 'previous_signature_enc'))).toBe(oldSecret);
    expect(SECRET_COLUMNS).toContainEqual(expect.objectContaining({ table: 'webhooks', column: 'previous_signature_enc' }));
    // The same secret again is no rotation: the old one stays in its window.
    await t.request('POST', `${base(o, hook.id)}/update`, { token: o.user.token, body: { signature: newSecret } });
    expect((await hookRow(hook.id)).previous_signature_enc).toBe(row.previous_signature_enc);

    await sendTest(o, hook.id);
    const during = await waitFor(() => rx.to('/rotate')[0]);
    expect(Date.now() - rotatedAt).toBeLessThan(OVERLAP_S * 1000);
    const sigs = String(during.headers['webhook-signature']).split(' ');
    expect(sigs).toHaveLength(2);
    expect(sigs.every((s) => s.startsWith('v1,'))).toBe(true);
    expect(verifies(oldSecret, during)).toBe(true);
    expect(verifies(newSecret, during)).toBe(true);
    expect(verifies('whsec_neither', during)).toBe(false);
    expect(during.headers['x-webhook-signature']).toBe(`sha256=${createHmac('sha256', newSecret).update(during.body).digest('hex')}`);

    await waitFor(() => Date.now() >= row.previous_signature_until! + 50, { timeoutMs: OVERLAP_S * 1000 + 2000 });
    await sendTest(o, hook.id);
    const afterwards = await waitFor(() => rx.to('/rotate')[1]);
    expect(String(afterwards.headers['webhook-signature']).split(' ')).toHaveLength(1);
    expect(verifies(newSecret, afterwards)).toBe(true);
    expect(verifies(oldSecret, afterwards)).toBe(false);
    // The expired secret is not kept.
    await waitFor(async () => (await hookRow(hook.id)).previous_signature_enc === null);
  });

  it('after 410 Gone the webhook is inactive (gone) and gets nothing more until turned back on', async () => {
    const o = await owner(t);
    let gone = true;
    rx.on('/gone', () => (gone ? { status: 410, body: 'gone' } : { status: 200 }));
    const hook = await createWebhook(t, o, { url: `${rx.url}/gone`, type: 'wallet', events: ['*'] });
    await emit(t, o, 'wallet.updated');
    const [d] = await settled(hook.id, 1);
    expect(d).toMatchObject({ status: 'failed', attempts: 1, response_status: 410 });
    const list = await t.request('GET', `/api/wallet/${o.walletId}/webhook`, { token: o.user.token });
    const view = list.body.data.find((w: { id: number }) => w.id === hook.id);
    expect(view).toMatchObject({ status: 'inactive', disabled_reason: 'gone' });
    expect(view.disabled_at).toMatch(DATETIME);

    // Nothing more: a new event is fanned out to no delivery, a test send is refused.
    const eventId = await emit(t, o, 'wallet.updated');
    await waitFor(
      async () =>
        (await t.store.db.selectFrom('events').select('dispatched_at').where('id', '=', eventId).executeTakeFirstOrThrow())
          .dispatched_at !== null,
    );
    expect(await deliveriesOf(t, hook.id)).toHaveLength(1);
    expect((await sendTest(o, hook.id)).status).toBe(400);
    expect(rx.to('/gone')).toHaveLength(1);

    // `status: active` turns it back on and clears the reason.
    gone = false;
    const on = await t.request('POST', `${base(o, hook.id)}/update`, { token: o.user.token, body: { status: 'active' } });
    expect(on.body.data).toMatchObject({ status: 'active', disabled_reason: null, disabled_at: null });
    await sendTest(o, hook.id);
    await waitFor(() => rx.to('/gone').length === 2);
  });

  it('Retry-After: 2 holds the next attempt at least 2 s, and a longer one is capped at the largest delay', async () => {
    const o = await owner(t);
    rx.on('/retry-after', (_r, n) => (n === 0 ? { status: 503, headers: { 'Retry-After': '2' } } : { status: 200 }));
    const hook = await createWebhook(t, o, { url: `${rx.url}/retry-after`, type: 'wallet', events: ['*'] });
    await sendTest(o, hook.id);
    await settled(hook.id, 1);
    const [first, second] = rx.to('/retry-after');
    expect(second!.headers['webhook-id']).toBe(first!.headers['webhook-id']);
    expect(second!.receivedAtMs - first!.receivedAtMs).toBeGreaterThanOrEqual(2000);

    rx.on('/retry-later', () => ({ status: 429, headers: { 'Retry-After': '3600' } }));
    const later = await createWebhook(t, o, { url: `${rx.url}/retry-later`, type: 'wallet', events: ['*'] });
    const sent = await sendTest(o, later.id);
    const row = await waitFor(async () => {
      const [r] = await deliveriesOf(t, later.id);
      return r && r.status === 'retrying' ? r : null;
    });
    const attempt = await detail(o, later.id, sent.body.data.id);
    expect(attempt.body.data.attempts[0]).toMatchObject({ response_status: 429 });
    // Capped at the largest retry delay (3 s), not an hour.
    expect(row.next_attempt_at - row.updated_at).toBe(3000);
  });
});

describe('automatic deactivation of a failing webhook', () => {
  let t: TestApp;
  let rx: Receiver;
  let worker: DeliveryWorker;

  beforeAll(async () => {
    t = await startTestApp({ env: { WEBHOOK_RETRY_DELAYS: '1,1,1,1,1', WEBHOOK_DISABLE_AFTER_S: '2' } });
    rx = await startReceiver();
    worker = startWorker(t);
  });
  afterAll(async () => {
    await worker?.stop();
    await rx?.close();
    await t?.close();
  });

  it('makes a webhook whose every delivery failed for WEBHOOK_DISABLE_AFTER_S inactive (failing)', async () => {
    const o = await owner(t);
    rx.on('/down', () => ({ status: 500 }));
    rx.on('/flaky', (_r, n) => ({ status: n % 2 === 0 ? 500 : 200 }));
    const down = await createWebhook(t, o, { url: `${rx.url}/down`, type: 'wallet', events: ['*'] });
    const flaky = await createWebhook(t, o, { url: `${rx.url}/flaky`, type: 'token', events: ['*'] });
    const started = Date.now();
    await emit(t, o, 'wallet.updated');
    await emit(t, o, 'token.added');

    const hooks = async () => (await t.request('GET', `/api/wallet/${o.walletId}/webhook`, { token: o.user.token })).body.data as any[];
    const off = await waitFor(async () => (await hooks()).find((w) => w.id === down.id && w.status === 'inactive'), { timeoutMs: 15_000 });
    expect(off).toMatchObject({ disabled_reason: 'failing' });
    expect(off.disabled_at).toMatch(DATETIME);
    // Disabled once its failures spanned 2 s: on the attempt at ≈ 2-3 s, not before.
    const tries = rx.to('/down');
    expect(tries.at(-1)!.receivedAtMs - tries[0]!.receivedAtMs).toBeGreaterThanOrEqual(2000);
    expect(tries.length).toBeLessThan(6);
    const [d] = await deliveriesOf(t, down.id);
    expect(d!.status).toBe('failed');

    // The flaky webhook failed too, but a delivery got through in between: it stays active.
    await waitFor(() => Date.now() - started > 2500, { timeoutMs: 5000 });
    await emit(t, o, 'token.removed');
    await waitFor(async () => (await deliveriesOf(t, flaky.id)).every((r) => r.status === 'delivered') && rx.to('/flaky').length === 4, {
      timeoutMs: 10_000,
    });
    expect((await hooks()).find((w) => w.id === flaky.id)).toMatchObject({ status: 'active', disabled_reason: null, disabled_at: null });

    // Inactive receives nothing; turned back on, it does again.
    const seen = rx.to('/down').length;
    const eventId = await emit(t, o, 'wallet.updated');
    await waitFor(
      async () =>
        (await t.store.db.selectFrom('events').select('dispatched_at').where('id', '=', eventId).executeTakeFirstOrThrow())
          .dispatched_at !== null,
    );
    expect(rx.to('/down')).toHaveLength(seen);
    rx.on('/down', () => ({ status: 200 }));
    const on = await t.request('POST', `/api/wallet/${o.walletId}/webhook/${down.id}/update`, {
      token: o.user.token,
      body: { status: 'active' },
    });
    expect(on.body.data).toMatchObject({ status: 'active', disabled_reason: null, disabled_at: null });
    await t.request('POST', `/api/wallet/${o.walletId}/webhook/${down.id}/test`, { token: o.user.token });
    await waitFor(() => rx.to('/down').length === seen + 1);
  });
});
