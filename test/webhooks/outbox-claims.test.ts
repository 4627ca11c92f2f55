/**
 * An outbox signal claims only when its fan-out made deliveries: events no webhook wants cost a
 * fan-out, not a claim transaction each (the hot wallet without webhooks, issue 23), and events
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
    Number((await t.store.db.selectFrom('events').select((eb) => eb.fn.countAll().as('n')).where('dispatched_at', 'is', null).executeTakeFirstOrThrow()).n);

  it('fans out 40 events no webhook wants without a claim, then claims and sends a wanted one at once', async () => {
    const quiet = await owner(t);
    // The worker's first tick (start-up) claims once; wait for it to settle.
    await waitFor(() => worker.stats().claims >= 1, { message: 'first claim' });
    const before = worker.stats().claims;
    for (let i = 0; i < 40; i++) await emit(t, quiet, 'wallet.updated');
    await waitFor(async () => (await undispatched()) === 0, { timeoutMs: 10_000, message: '40 events fanned out' });
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
    await waitFor(async () => (await deliveriesOf(t, hook.id)).filter((r) => r.status === 'delivered').length === 30, { timeoutMs: 10_000, message: '30 delivered' });
    expect(rx.to('/flow')).toHaveLength(30);
    expect(worker.stats().claims).toBe(before);
    // A wake (a manual retry, new work from elsewhere) claims at once.
    worker.wake();
    await waitFor(() => worker.stats().claims > before, { timeoutMs: 5_000, message: 'a claim after the wake' });
  });
});
