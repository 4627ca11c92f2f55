/**
 * The delivery worker keeps decrypted secrets only as long as needed (issue 20):
 * a webhook updated or deleted in this process leaves the worker's cache at once.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { startReceiver, type Receiver } from '../helpers/receiver.js';
import { waitFor } from '../helpers/wait.js';
import type { DeliveryWorker } from '../../src/workers/deliveries.js';
import { createWebhook, emit, owner, startWorker } from './fixtures.js';

describe('decrypted webhook secrets in the delivery worker', () => {
  let t: TestApp;
  let rx: Receiver;
  let worker: DeliveryWorker;
  beforeAll(async () => {
    t = await startTestApp();
    rx = await startReceiver();
    worker = startWorker(t);
  });
  afterAll(async () => {
    await worker?.stop();
    await rx?.close();
    await t?.close();
  });

  it('holds the secret and headers while delivering; an update and a delete drop them', async () => {
    const o = await owner(t);
    const hook = await createWebhook(t, o, {
      url: `${rx.url}/a`,
      type: 'charge',
      events: ['created'],
      signature: 'whsec_first',
      with_headers: { 'X-Api-Key': 'k1' },
    });
    await emit(t, o, 'charge.created');
    await waitFor(() => rx.to('/a').length === 1, { message: 'first delivery' });
    await waitFor(() => worker.stats().decryptedSecrets === 2, { message: 'secret and headers cached' });

    const updated = await t.request('POST', `/api/wallet/${o.walletId}/webhook/${hook.id}/update`, {
      token: o.user.token,
      body: { with_headers: { 'X-Api-Key': 'k2' } },
    });
    expect(updated.status).toBe(200);
    expect(worker.stats().decryptedSecrets).toBe(0);

    await emit(t, o, 'charge.created');
    await waitFor(() => rx.to('/a').length === 2, { message: 'second delivery' });
    expect(rx.to('/a')[1]!.headers['x-api-key']).toBe('k2');
    await waitFor(() => worker.stats().decryptedSecrets === 2, { message: 'new secret and headers cached' });

    expect((await t.request('GET', `/api/wallet/${o.walletId}/webhook/delete/${hook.id}`, { token: o.user.token })).status).toBe(200);
    expect(worker.stats().decryptedSecrets).toBe(0);
  });
});
