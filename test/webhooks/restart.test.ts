import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { createTestDatabase, type TestDatabase } from '../helpers/db.js';
import { startReceiver, type Receiver } from '../helpers/receiver.js';
import { waitFor } from '../helpers/wait.js';
import { attemptsOf, createWebhook, deliveriesOf, emit, owner, startWorker, type Owner } from './fixtures.js';

const ENV = { WEBHOOK_RETRY_DELAYS: '2,2,2' };

describe('webhook delivery across a restart', () => {
  let database: TestDatabase;
  let rx: Receiver;

  beforeAll(async () => {
    database = await createTestDatabase();
    rx = await startReceiver();
  });
  afterAll(async () => {
    await rx?.close();
    await database?.drop();
  });

  it('resumes a retrying delivery, an undispatched event and an expired lease after a restart, losing nothing', async () => {
    // First life: the receiver fails the first attempt, so the delivery waits for its retry.
    let up = false;
    rx.on('/r', () => (up ? { status: 200 } : { status: 500 }));
    let t: TestApp = await startTestApp({ database, keepDatabase: true, env: ENV });
    const o: Owner = await owner(t);
    const hook = await createWebhook(t, o, { url: `${rx.url}/r`, type: 'wallet', events: ['*'], signature: 'whsec_restart' });
    let worker = startWorker(t);
    await emit(t, o, 'wallet.created');
    const retrying = await waitFor(async () => (await deliveriesOf(t, hook.id)).find((d) => d.status === 'retrying'));
    expect(retrying.attempts).toBe(1);
    await worker.stop();

    // While no worker runs: a new event sits in the outbox, and a delivery is held by a worker
    // that died (its lease has expired).
    await emit(t, o, 'wallet.updated');
    const other = await createWebhook(t, o, { url: `${rx.url}/orphan`, type: 'balance', events: ['*'] });
    await emit(t, o, 'balance.updated');
    const { dispatchEvents } = await import('../../src/workers/deliveries/dispatch.js');
    await dispatchEvents(t.store.db, Date.now(), 200);
    await t.store.db
      .updateTable('webhook_deliveries')
      .set({ locked_by: 'crashed-worker', locked_until: Date.now() - 1 })
      .where('webhook_id', '=', other.id)
      .execute();
    await t.close();
    expect(rx.to('/r')).toHaveLength(1);
    expect(rx.to('/orphan')).toHaveLength(0);

    // Second life on the same database.
    up = true;
    t = await startTestApp({ database, keepDatabase: true, env: ENV });
    try {
      worker = startWorker(t);
      const done = await waitFor(
        async () => {
          const rows = [...(await deliveriesOf(t, hook.id)), ...(await deliveriesOf(t, other.id))];
          return rows.length === 3 && rows.every((d) => d.status === 'delivered') ? rows : null;
        },
        { timeoutMs: 15_000 },
      );
      const first = done.find((d) => d.id === retrying.id)!;
      expect(first).toMatchObject({ attempts: 2, uuid: retrying.uuid, locked_by: null });
      expect((await attemptsOf(t, first.id)).map((a) => a.response_status)).toEqual([500, 200]);

      const sent = rx.to('/r');
      expect(sent.map((r) => r.headers['x-webhook-event']).sort()).toEqual(['wallet.created', 'wallet.created', 'wallet.updated']);
      const again = sent.filter((r) => r.headers['x-webhook-delivery'] === retrying.uuid);
      expect(again).toHaveLength(2);
      expect(again[1]!.body).toBe(again[0]!.body);
      expect(rx.to('/orphan')).toHaveLength(1);
      await worker.stop();
    } finally {
      await t.close();
    }
  });
});
