/**
 * An outbox signal claims only when its fan-out made deliveries: events no webhook can want are
 * written dispatched and cost neither a fan-out nor a claim (the hot wallet without webhooks,
 * issue 23), and events
 * a webhook wants are leased by their fan-out and sent at once, not at the next poll. A slot
 * freed by a send claims only while due rows not leased to the worker may be waiting.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { startReceiver, type Receiver } from '../helpers/receiver.js';
import { waitFor } from '../helpers/wait.js';
import type { DeliveryWorker } from '../../src/workers/deliveries.js';
import { createWebhook, deliveriesOf, emit, owner, startWorker } from './fixtures.js';

describe('delivery worker: claims after outbox signals', () => {
  let t: TestApp;
  let rx: Receiver;
  let worker: DeliveryWorker;

  beforeAll(async () => {
    // A poll far beyond the test: every claim below follows a signal, not the interval.
    t = await startTestApp({ env: { WEBHOOK_POLL_MS: '60000' } });
    rx = await startReceiver();
    worker = startWorker(t);
  });
  afterAll(async () => {
    await worker?.stop();
    await rx?.close();
    await t?.close();
  });

  const undispatched = async () =>
    Number(
      (
        await t.store.db
          .selectFrom('events')
          .select((eb) => eb.fn.countAll().as('n'))
          .where('dispatched_at', 'is', null)
          .executeTakeFirstOrThrow()
      ).n,
    );

  const writtenAs = (id: number) =>
    t.store.db.selectFrom('events').select(['created_at', 'dispatched_at']).where('id', '=', id).executeTakeFirstOrThrow();

  it('writes 40 events no webhook wants already dispatched (no fan-out, no claim), then claims and sends a wanted one at once', async () => {
    const quiet = await owner(t);
    // A webhook of another wallet, and an inactive one of this wallet, want nothing of it.
    const other = await owner(t);
    await createWebhook(t, other, { url: `${rx.url}/other`, type: 'wallet', events: ['updated'], signature: 'whsec_other' });
    const inactive = await createWebhook(t, quiet, {
      url: `${rx.url}/inactive`,
      type: 'wallet',
      events: ['updated'],
      signature: 'whsec_inactive',
    });
    const off = await t.request('POST', `/api/wallet/${quiet.walletId}/webhook/${inactive.id}/update`, {
      token: quiet.user.token,
      body: { status: 'inactive' },
    });
    expect(off.status, off.text).toBe(200);
    // The worker's first tick (start-up) claims once; wait for it to settle.
    await waitFor(() => worker.stats().claims >= 1, { message: 'first claim' });
    const before = worker.stats().claims;
    const fanOutsBefore = worker.stats().fanOuts;
    for (let i = 0; i < 40; i++) {
      const id = await emit(t, quiet, 'wallet.updated');
      // Read at once, before any worker could fan it out: written dispatched, at its own time.
      const row = await writtenAs(id);
      expect(row.dispatched_at).toBe(row.created_at);
    }
    expect(await undispatched()).toBe(0);
    expect(worker.stats().claims).toBe(before);

    const o = await owner(t);
    rx.on('/hook', () => ({ status: 200, body: 'ok' }));
    const hook = await createWebhook(t, o, { url: `${rx.url}/hook`, type: 'wallet', events: ['updated'], signature: 'whsec_claims' });
    const sentAt = Date.now();
    await emit(t, o, 'wallet.updated');
    const [row] = await waitFor(
      async () => {
        const rows = await deliveriesOf(t, hook.id);
        return rows.length === 1 && rows[0]!.status === 'delivered' ? rows : null;
      },
      { timeoutMs: 10_000, message: 'the wanted event delivered' },
    );
    expect(row!.attempts).toBe(1);
    expect(rx.to('/hook')).toHaveLength(1);
    expect(Date.now() - sentAt).toBeLessThan(5_000);
    // The 40 quiet events announced nothing: the wanted event's signal is the one fan-out (two
    // at most, if a poll's tick fell between).
    expect(worker.stats().fanOuts - fanOutsBefore).toBeGreaterThanOrEqual(1);
    expect(worker.stats().fanOuts - fanOutsBefore).toBeLessThanOrEqual(2);
    expect(rx.to('/inactive')).toHaveLength(0);
    expect(rx.to('/other')).toHaveLength(0);
    // Leased by its own fan-out and sent: no claim transaction, and none when its slot came free
    // (the last claim found fewer rows than its room: nothing else was due).
    expect(worker.stats().claims).toBe(before);
  });

  it('sends a flow of wanted events without a claim per freed slot, and claims again when woken', async () => {
    const o = await owner(t);
    rx.on('/flow', () => ({ status: 200, body: 'ok' }));
    const hook = await createWebhook(t, o, { url: `${rx.url}/flow`, type: 'wallet', events: ['updated'], signature: 'whsec_flow' });
    const before = worker.stats().claims;
    for (let i = 0; i < 30; i++) await emit(t, o, 'wallet.updated');
    await waitFor(async () => (await deliveriesOf(t, hook.id)).filter((r) => r.status === 'delivered').length === 30, {
      timeoutMs: 10_000,
      message: '30 delivered',
    });
    expect(rx.to('/flow')).toHaveLength(30);
    expect(worker.stats().claims).toBe(before);
    // A wake (a manual retry, new work from elsewhere) claims at once.
    worker.wake();
    await waitFor(() => worker.stats().claims > before, { timeoutMs: 5_000, message: 'a claim after the wake' });
  });
});
