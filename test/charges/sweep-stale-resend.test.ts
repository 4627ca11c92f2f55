/**
 * A sweep whose first send went out (the node took it, its answer was a 502) and whose re-send a
 * stale backend refused "transaction underpriced" while showing no trace of it (no transaction,
 * no receipt, a pending nonce still at it): the refusal says nothing of the node that took the
 * first send. The sweep stays followed (a replacement may be signed at its nonce) and, once the
 * chain mines it, ends `confirmed`; no sweep is listed `failed` under a hash the chain mined.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { parseEther } from 'viem';
import { ManualClock, type TestApp, type TestUser } from '../helpers/app.js';
import type { TestChain } from '../helpers/chain.js';
import { waitFor } from '../helpers/wait.js';
import type { RpcProxy } from '../helpers/transfers.js';
import { balanceOf, chargeApi, clockToChain, pay, proxiedChargeSuite } from './support.js';

const STALE = ['eth_getTransactionByHash', 'eth_getTransactionReceipt', 'eth_getTransactionCount', 'eth_sendRawTransaction'];

describe('a sweep whose re-send a stale backend refuses after its first send went out', () => {
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

  it('refused "underpriced", then mined: confirmed, never failed', async () => {
    const wallet = (await t.request('POST', '/api/wallet/create', { token: user.token, body: { name: 'Shop', network_id: networkId } }))
      .body.data as { id: number; address: string };
    const api = chargeApi(t, wallet.id, user.token);
    await clockToChain(clock, chain);
    const c = await api.create({ amount: '0.5', token: 'ETH', expires: 600 });
    const deposit = c.address.toLowerCase();
    await chain.rpc('evm_setAutomine', [false]);
    try {
      // The sweep's first send reaches the node, whose answer is lost (HTTP 502).
      proxy.rule('eth_sendRawTransaction', { action: 'forward-error', status: 502, code: -32603, message: 'Bad Gateway', times: 1 });
      await pay(chain.rpcUrl, c.address, parseEther('0.5'));
      await chain.mine(1);
      const paid = await api.until(c.id, (x) => x.status === 'paid' && x.sweeps.length === 1, 'paid, sweep recorded', 20_000);
      const sweep = paid.sweeps[0] as { tx_hash: string; status: string };
      await waitFor(() => chain.rpc('eth_getTransactionByHash', [sweep.tx_hash]), {
        timeoutMs: 10_000,
        message: 'the first send in the pool',
      });

      // From here a stale backend answers: it knows nothing of the sweep and refuses it again.
      const refusals = () =>
        t.logs.filter((l) => l.includes('charge sweep re-send refused') || l.includes('charge sweep refused by the node')).length;
      const before = refusals();
      proxy.rule('eth_getTransactionByHash', { action: 'null' });
      proxy.rule('eth_getTransactionReceipt', { action: 'null' });
      proxy.rule('eth_getTransactionCount', {
        action: 'result',
        result: '0x0',
        match: (p) => String(p[0]).toLowerCase() === deposit && p[1] === 'pending',
      });
      proxy.rule('eth_sendRawTransaction', { action: 'error', code: -32000, message: 'transaction underpriced' });
      await waitFor(() => refusals() > before, { timeoutMs: 15_000, message: 'the re-send refused' });
      // The refusal's outcome written: the row failed, or let go of the charge and still followed.
      await waitFor(
        async () => {
          const row = await t.store.db
            .selectFrom('charge_sweeps')
            .select(['status', 'live_key'])
            .where('tx_hash', '=', sweep.tx_hash)
            .executeTakeFirstOrThrow();
          return row.status === 'failed' || row.live_key?.includes(':replaced:');
        },
        { timeoutMs: 10_000, message: 'the refusal written' },
      );

      await chain.mine(1); // the first send mines
      for (const m of STALE) proxy.allow(m);
      const done = await api.until(
        c.id,
        (x) => x.sweeps.some((w: { tx_hash: string; status: string }) => w.tx_hash === sweep.tx_hash && w.status !== 'pending'),
        'the first sweep final',
        20_000,
      );
      expect(done.sweeps.find((w: { tx_hash: string }) => w.tx_hash === sweep.tx_hash).status).toBe('confirmed');
      for (const w of done.sweeps as { tx_hash: string; status: string }[]) {
        const mined = await chain.rpc('eth_getTransactionReceipt', [w.tx_hash]);
        if (w.status === 'failed') expect(mined).toBeNull();
      }
      expect(await balanceOf(chain, c.address)).toBe(0n);
    } finally {
      for (const m of STALE) proxy.allow(m);
      await chain.rpc('evm_setAutomine', [true]);
    }
  });
});
