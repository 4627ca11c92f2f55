/**
 * A watcher behind the head works through its backlog batch after batch, without waiting
 * WATCHER_POLL_MS between batches (docs/transactions.md, "A tick"). With a 10-second poll
 * interval and 10 blocks a batch, 150 blocks of backlog take 14 intervals (over two minutes)
 * when each batch waits for the next tick; here they are recorded within seconds, every
 * transfer among them included.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { startTestChain, type TestChain } from '../helpers/chain.js';
import { sendFromOutsider, waitForCursor, ETH } from '../helpers/transfers.js';

describe('watcher backlog', () => {
  let t: TestApp;
  let chain: TestChain;
  beforeAll(async () => {
    t = await startTestApp({ env: { WATCHER_POLL_MS: '10000', WATCHER_MAX_BLOCKS: '10' } });
    chain = await startTestChain();
  });
  afterAll(async () => {
    await t?.workers?.stop();
    await t?.close();
    await chain?.stop();
  });

  it('150 blocks behind: caught up long before the next poll interval, every receipt recorded', async () => {
    const networkId = await chain.register(t);
    const user = await t.createUser();
    const res = await t.request('POST', '/api/wallet/create', { token: user.token, body: { name: 'Backlog', network_id: networkId } });
    expect(res.status).toBe(200);
    const wallet = res.body.data as { id: number; address: `0x${string}` };
    // The watcher sets its cursor at the head, then is stopped while the backlog is made.
    t.startWorkers();
    const start = await waitForCursor(t, networkId, await chain.blockNumber());
    await t.workers!.stop();
    t.workers = null;
    for (let i = 0; i < 3; i++) {
      await chain.mine(49);
      await sendFromOutsider(chain.rpcUrl, wallet.address, ETH / 100n);
    }
    const head = await chain.blockNumber();
    expect(head - start).toBeGreaterThanOrEqual(150);

    const began = Date.now();
    t.startWorkers();
    await waitForCursor(t, networkId, head);
    const tookMs = Date.now() - began;
    // One 10 s interval would already be past; the backlog needs 15 batches.
    expect(tookMs).toBeLessThan(8_000);
    const receipts = await t.store.db
      .selectFrom('transactions')
      .select(['amount'])
      .where('wallet_id', '=', wallet.id)
      .where('type', '=', 'receipt')
      .execute();
    expect(receipts.map((r) => r.amount)).toEqual(Array(3).fill((ETH / 100n).toString()));
  });
});
