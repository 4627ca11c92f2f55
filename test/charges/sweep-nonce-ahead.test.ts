/**
 * A sweep waiting in the pool while an endpoint's count of the deposit address's nonce runs ahead
 * of its blocks (a node under load answers a count at its head from the block it is mining; a
 * balancer's backends stand at different states): the count says the sweep's nonce is used, yet
 * no block holds a transaction using it. That decides nothing: the sweep is never listed
 * `failed`, and ends `confirmed` once it mines. (Only a transaction of the address at that nonce
 * in the block that used it fails a sweep as `dropped`: sweeps.test.ts.)
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { parseEther } from 'viem';
import { ManualClock, type TestApp, type TestUser } from '../helpers/app.js';
import type { TestChain } from '../helpers/chain.js';
import { waitFor } from '../helpers/wait.js';
import type { RpcProxy } from '../helpers/transfers.js';
import { balanceOf, chargeApi, clockToChain, pay, proxiedChargeSuite } from './support.js';

describe('a sweep whose nonce an endpoint counts as used before any block uses it', () => {
  const clock = new ManualClock();
  let chain: TestChain;
  let proxy: RpcProxy;
  let t: TestApp;
  let user: TestUser;
  let networkId: number;
  const suite = proxiedChargeSuite(clock);
  beforeAll(() => {
    ({ chain, proxy, t, user, networkId } = suite);
  });

  it('stays pending, then confirmed under its hash: never failed', async () => {
    const wallet = (await t.request('POST', '/api/wallet/create', { token: user.token, body: { name: 'Shop', network_id: networkId } }))
      .body.data as { id: number };
    const api = chargeApi(t, wallet.id, user.token);
    await clockToChain(clock, chain);
    const c = await api.create({ amount: '0.5', token: 'ETH', expires: 600 });
    await chain.rpc('evm_setAutomine', [false]);
    try {
      await pay(chain.rpcUrl, c.address, parseEther('0.5'));
      await chain.mine(1);
      const paid = await api.until(c.id, (x) => x.status === 'paid' && x.sweeps.length === 1, 'paid, sweep recorded', 20_000);
      const sweep = paid.sweeps[0] as { tx_hash: string; status: string };
      await waitFor(() => chain.rpc('eth_getTransactionByHash', [sweep.tx_hash]), { timeoutMs: 10_000, message: 'the sweep in the pool' });

      const deposit = c.address.toLowerCase();
      proxy.rule('eth_getTransactionCount', {
        action: 'result',
        result: '0x1',
        match: (p) => String(p[0]).toLowerCase() === deposit && /^0x[0-9a-f]+$/i.test(String(p[1])),
      });
      // Each round reads the count at several heights (from the confirmed one down to the genesis).
      const lies = () => proxy.seen.filter((x) => x.method === 'eth_getTransactionCount' && x.action === 'result').length;
      const during = await waitFor(
        async () => {
          const now = await api.show(c.id);
          return lies() >= 12 || now.sweeps[0].status !== 'pending' ? now : null;
        },
        { timeoutMs: 20_000, message: 'rounds read the count that runs ahead' },
      );
      expect(during.sweeps).toEqual([{ ...sweep, status: 'pending' }]);
      expect(t.logs.some((l) => l.includes('shows no transaction using it; deciding nothing this round'))).toBe(true);

      proxy.allow('eth_getTransactionCount');
      await chain.mine(1);
      const done = await api.until(c.id, (x) => x.sweeps.every((w: { status: string }) => w.status === 'confirmed'), 'sweep confirmed');
      expect(done.sweeps).toEqual([{ ...sweep, status: 'confirmed' }]);
      expect(await balanceOf(chain, c.address)).toBe(0n);
      const failed = await t.store.db.selectFrom('charge_sweeps').select('id').where('status', '=', 'failed').execute();
      expect(failed).toEqual([]);
    } finally {
      proxy.allow('eth_getTransactionCount');
      await chain.rpc('evm_setAutomine', [true]);
    }
  });
});
