/**
 * Where blocks come faster than the watcher polls (here anvil mining each transaction at once,
 * after a tick that found two new blocks), a transfer this process broadcasts brings the
 * watcher's next tick to within 50 ms, so its confirmation is not paced by the polls (both set to
 * 6 s here: without the nudge each of the five transfers below waits up to 6 s, 3 s on average,
 * for its confirming tick, so all five within 2 s by chance is (1/3)^5, 0.4%; the 2 s bound
 * leaves a loaded CI machine room: one run on PostgreSQL took 1.39 s for a transfer).
 * WATCHER_FOLLOW_HEADS is off: a followed head would wake the tick too (test/chain/heads*),
 * and this test is of the broadcast's own nudge, for nodes without WebSockets.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp, type TestUser } from '../helpers/app.js';
import { startTestChain, type TestChain } from '../helpers/chain.js';
import { ETH, fundedWallet, RECIPIENT, waitForCursor, waitForStatus } from '../helpers/transfers.js';

let chain: TestChain;
let t: TestApp;
let user: TestUser;

beforeAll(async () => {
  chain = await startTestChain();
  t = await startTestApp({ env: { WATCHER_POLL_MS: '6000', WATCHER_PENDING_POLL_MS: '6000', WATCHER_FOLLOW_HEADS: 'false' } });
  user = await t.createUser();
});

afterAll(async () => {
  await t?.close();
  await chain?.stop();
});

describe('a broadcast on a chain faster than the watcher polls', () => {
  it('is confirmed within 2 s, five times in a row, with the polls at 6 s and no head follower', async () => {
    const networkId = await chain.register(t);
    const w = await fundedWallet(t, chain, user, networkId, ETH);
    t.startWorkers();
    const start = await waitForCursor(t, networkId); // the first tick: the cursor at the head
    await chain.mine(3);
    await waitForCursor(t, networkId, start + 3); // a tick that found three new blocks
    for (let i = 0; i < 5; i++) {
      // Two more blocks of others before each transfer, as on a chain faster than the polls: the
      // confirming tick finds three new blocks, so the chain stays counted fast (FAST_FOR_MS,
      // 10 s from the last such tick) however slowly a loaded machine runs the five.
      if (i > 0) await chain.mine(2);
      const res = await t.request('POST', `/api/wallet/${w.id}/transaction/create`, {
        token: user.token,
        body: { amount: '0.01', token: 'ETH', address: RECIPIENT },
      });
      expect(res.status, res.text).toBe(200);
      const sent = Date.now();
      await waitForStatus(t, user, w.id, res.body.data.id, 'confirmed', 10_000);
      expect(Date.now() - sent, `transfer ${i + 1}`).toBeLessThan(2000);
    }
  });
});
