/**
 * WATCHER_PENDING_POLL_MS: while a transfer is unconfirmed the watcher ticks at that interval,
 * not at WATCHER_POLL_MS, so what a sender waits for (a confirmation; a payout's next items
 * behind MAX_PENDING_PER_WALLET) is not paced by the idle tick. With WATCHER_POLL_MS at a
 * minute and the pending interval at 100 ms, a transfer mined after the watcher's first tick is
 * confirmed within seconds (at the idle pace it would wait the minute).
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
  t = await startTestApp({ env: { WATCHER_POLL_MS: '60000', WATCHER_PENDING_POLL_MS: '100' } });
  user = await t.createUser();
});

afterAll(async () => {
  await chain?.rpc('evm_setAutomine', [true]).catch(() => undefined);
  await t?.close();
  await chain?.stop();
});

describe('the watcher while a transfer is pending', () => {
  it('ticks at WATCHER_PENDING_POLL_MS: a transfer mined after its first tick is confirmed within seconds, not a minute', async () => {
    const networkId = await chain.register(t);
    const w = await fundedWallet(t, chain, user, networkId, ETH);
    await chain.rpc('evm_setAutomine', [false]);
    const res = await t.request('POST', `/api/wallet/${w.id}/transaction/create`, {
      token: user.token,
      body: { amount: '0.1', token: 'ETH', address: RECIPIENT },
    });
    expect(res.status, res.text).toBe(200);
    t.startWorkers();
    await waitForCursor(t, networkId); // the first tick ran, and saw the transfer pending
    await chain.mine(1);
    const mined = Date.now();
    await waitForStatus(t, user, w.id, res.body.data.id, 'confirmed', 5_000);
    expect(Date.now() - mined).toBeLessThan(5_000);
  });
});
