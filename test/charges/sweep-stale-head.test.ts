/**
 * A look at a keyed deposit address right after its sweep, whose reads at the look's block are
 * answered by a view behind that sweep (at its own height, as a balancer's lagging backend
 * does): the balance still holds what the sweep moved, the address's count there is 0, while
 * its pending count is 1. A sweep of that balance signed at nonce 1 could never mine (the money
 * is gone) and would stay in flight for good (the fault simulation found one "still pending
 * after quiescence"). The look is put off instead: nothing is signed while the address's
 * pending count is above its count at the read block; once the reads are honest, nothing is
 * left and nothing more is sent.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseEther, type Address } from 'viem';
import { ManualClock, startTestApp, type TestApp, type TestUser } from '../helpers/app.js';
import { startTestChain, type TestChain } from '../helpers/chain.js';
import { RpcProxy, waitForCursor } from '../helpers/transfers.js';
import { balanceOf, chargeApi, clockToChain, pay } from './support.js';

describe('a charge look whose reads come from a view behind the address’s last sweep', () => {
  const clock = new ManualClock();
  let chain: TestChain;
  let proxy: RpcProxy;
  let honest: RpcProxy;
  let t: TestApp;
  let user: TestUser;
  let networkId: number;

  beforeAll(async () => {
    chain = await startTestChain();
    proxy = await RpcProxy.start(chain.rpcUrl);
    honest = await RpcProxy.start(chain.rpcUrl);
    // The charge worker looks only when blocks come (no timer in the test's span): the looks at
    // the address are the test's own (the sweep route), none racing the views it sets up.
    t = await startTestApp({ clock, workers: true, env: { CHARGES_POLL_MS: '600000', WATCHER_POLL_MS: '50' } });
    networkId = await chain.register(t, { name: 'Behind at times', rpcUrls: [proxy.url, honest.url] });
    await waitForCursor(t, networkId);
    user = await t.createUser();
  });
  afterAll(async () => {
    await t?.close();
    await proxy?.down();
    await honest?.down();
    await chain?.stop();
  });

  const sweepRows = (chargeId: number) =>
    t.store.db
      .selectFrom('charge_sweeps')
      .select(['id', 'status', 'nonce', 'tx_hash', 'amount'])
      .where('charge_id', '=', chargeId)
      .where('kind', '=', 'sweep')
      .orderBy('id')
      .execute();

  it('puts the look off instead of signing a sweep of money already moved; nothing more is sent', async () => {
    const wallet = (await t.request('POST', '/api/wallet/create', { token: user.token, body: { name: 'Shop', network_id: networkId } }))
      .body.data as { id: number; address: Address };
    const api = chargeApi(t, wallet.id, user.token);
    await clockToChain(clock, chain);
    const c = await api.create({ amount: '0.1', token: 'ETH', expires: 600 });
    await pay(chain.rpcUrl, c.address, parseEther('0.1'));
    const swept = await api.until(
      c.id,
      (x) => x.status === 'paid' && x.sweeps.length === 1 && x.sweeps[0].status === 'confirmed',
      'paid and swept',
      30_000,
    );
    expect(await balanceOf(chain, c.address)).toBe(0n);

    // A view behind the sweep answers the reads at the look's block at its own height, the
    // payment's (as the simulation's `behind` endpoints do): the balance the sweep took, and the
    // address's count 0 there; its pending count comes from the node as it is (1).
    const looks = () => t.logs.filter((l) => l.includes('sent a transaction after the block its balances were read at')).length;
    const before = looks();
    const deposit = c.address.toLowerCase();
    const atBlock = (p: unknown[]) => String(p[0]).toLowerCase() === deposit && p[1] !== 'pending';
    const paidBalance = `0x${parseEther('0.1').toString(16)}`;
    const sweepNow = () => t.request('POST', `/api/wallet/${wallet.id}/charge/${c.id}/sweep`, { token: user.token });
    for (const p of [proxy, honest]) {
      p.rule('eth_getBalance', { action: 'result', result: paidBalance, match: atBlock });
      p.rule('eth_getTransactionCount', { action: 'result', result: '0x0', match: atBlock });
    }
    try {
      const looked = await sweepNow();
      expect(looked.status, looked.text).toBe(200);
      expect((await sweepRows(c.id)).map((r) => [r.status, r.nonce])).toEqual([['confirmed', 0]]);
      expect(looked.body.data.sweeps.map((x: any) => [x.status, x.tx_hash])).toEqual([['confirmed', swept.sweeps[0].tx_hash]]);
      expect(looks()).toBeGreaterThan(before);
    } finally {
      for (const p of [proxy, honest]) for (const m of ['eth_getBalance', 'eth_getTransactionCount']) p.allow(m);
    }

    // Honest again: nothing is left, so the look sends nothing.
    const again = await sweepNow();
    expect(again.status, again.text).toBe(200);
    expect(again.body.data.sweeps).toHaveLength(1);
    expect((await sweepRows(c.id)).map((r) => [r.status, r.nonce, r.tx_hash])).toEqual([['confirmed', 0, swept.sweeps[0].tx_hash]]);
    expect(await balanceOf(chain, c.address)).toBe(0n);
  });
});
