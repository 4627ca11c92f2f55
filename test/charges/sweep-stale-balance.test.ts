/**
 * A sweep right after settlement, on a network of two endpoints (two real JSON-RPC proxies in
 * front of ONE anvil) where one serves a stale view of the deposit address for a while: its
 * token balance and native balance at `latest` read 0 and the token transfer's gas estimate
 * reverts, as a backend that has not seen the payment's block answers; the other fails those
 * reads (HTTP 503), so the stale answers are the only ones at `latest`. The sweep's balances are
 * read at the follower's height (from an endpoint there), a revert is waited for, and once the
 * stale view heals the tokens leave the deposit address for the wallet's main address.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseEther, type Address } from 'viem';
import { ManualClock, startTestApp, type TestApp, type TestUser } from '../helpers/app.js';
import { startTestChain, type TestChain } from '../helpers/chain.js';
import { deployErc20, erc20BalanceOf, mintErc20 } from '../helpers/erc20.js';
import { waitFor } from '../helpers/wait.js';
import { RpcProxy, waitForCursor } from '../helpers/transfers.js';
import { chargeApi, clockToChain } from './support.js';

const STALE_METHODS = ['eth_call', 'eth_getBalance', 'eth_estimateGas'];

describe('a sweep whose deposit address one endpoint sees stale', () => {
  const clock = new ManualClock();
  let chain: TestChain;
  let stale: RpcProxy;
  let other: RpcProxy;
  let t: TestApp;
  let user: TestUser;
  let networkId: number;

  beforeAll(async () => {
    chain = await startTestChain();
    stale = await RpcProxy.start(chain.rpcUrl);
    other = await RpcProxy.start(chain.rpcUrl);
    t = await startTestApp({ clock, workers: true, env: { CHARGES_POLL_MS: '50', WATCHER_POLL_MS: '50' } });
    networkId = await chain.register(t, { name: 'Two providers', rpcUrls: [stale.url, other.url] });
    await waitForCursor(t, networkId);
    user = await t.createUser();
  });
  afterAll(async () => {
    await t?.close();
    await stale?.down();
    await other?.down();
    await chain?.stop();
  });

  /** The endpoints' answers about `deposit` at `latest`: 0 and a revert from the stale one, HTTP 503 from the other. */
  function staleView(deposit: string): () => number {
    const d = deposit.toLowerCase();
    const about = (p: unknown[]) => {
      const call = p[0] as { from?: string; data?: string } | string;
      if (typeof call === 'string') return call.toLowerCase() === d && p[1] === 'latest';
      return (
        call.from?.toLowerCase() === d ||
        (call.data?.toLowerCase().includes(d.slice(2)) === true && (p[1] === undefined || p[1] === 'latest'))
      );
    };
    let answered = 0;
    const counted = (p: unknown[]) => about(p) && ++answered > 0;
    stale.rule('eth_call', { action: 'result', result: `0x${'0'.repeat(64)}`, match: counted });
    stale.rule('eth_getBalance', { action: 'result', result: '0x0', match: counted });
    stale.rule('eth_estimateGas', { action: 'error', code: 3, message: 'execution reverted', match: counted });
    for (const m of STALE_METHODS)
      other.rule(m, { action: 'error', status: 503, code: -32603, message: 'Service Unavailable', match: about });
    return () => answered;
  }

  function heal(): void {
    for (const m of STALE_METHODS) {
      stale.allow(m);
      other.allow(m);
    }
  }

  const dueAt = async (chargeId: number) => {
    const r = await t.store.db.selectFrom('charges').select('sweep_due_at').where('id', '=', chargeId).executeTakeFirstOrThrow();
    return r.sweep_due_at === null ? null : Number(r.sweep_due_at);
  };

  it('a token paid: read 0 and a revert at latest while stale, swept to the main address once the view heals', async () => {
    const wallet = (await t.request('POST', '/api/wallet/create', { token: user.token, body: { name: 'Shop', network_id: networkId } }))
      .body.data as { id: number; address: Address };
    await chain.setBalance(wallet.address, parseEther('10'));
    const usd = await deployErc20(chain.rpcUrl, { name: 'USD Coin', symbol: 'USDC', decimals: 6 });
    expect((await t.request('POST', `/api/wallet/${wallet.id}/token/add`, { token: user.token, body: { contract: usd } })).status).toBe(
      200,
    );
    const api = chargeApi(t, wallet.id, user.token);
    await clockToChain(clock, chain);
    const c = await api.create({ amount: '5', token: 'USDC', expires: 600 });
    const deposit = c.address as Address;

    const answered = staleView(deposit);
    try {
      await mintErc20(chain.rpcUrl, usd, deposit, 5_000_000n);
      await api.until(c.id, (x) => x.status === 'paid', 'paid');
      // The first look after settlement has met the stale view and is over: the charge is due
      // again later (or, taking the stale 0 as the answer, no longer due at all).
      await waitFor(
        async () => {
          const at = await dueAt(c.id);
          return answered() > 0 && (at === null || at > clock.nowMs());
        },
        { timeoutMs: 15_000, message: 'a look met the stale view' },
      );
      expect(await erc20BalanceOf(chain.rpcUrl, usd, deposit)).toBe(5_000_000n);
    } finally {
      heal();
    }

    const swept = await waitFor(
      async () => {
        const at = await dueAt(c.id);
        if (at !== null && at > clock.nowMs()) clock.advance(at - clock.nowMs());
        const x = await api.show(c.id);
        return x.sweeps.some((w: { token: string; status: string }) => w.token === 'USDC' && w.status === 'confirmed') ? x : null;
      },
      { timeoutMs: 30_000, intervalMs: 200, message: 'USDC swept once the view healed' },
    );
    expect(swept.status).toBe('paid');
    expect(await erc20BalanceOf(chain.rpcUrl, usd, deposit)).toBe(0n);
    expect(await erc20BalanceOf(chain.rpcUrl, usd, wallet.address)).toBe(5_000_000n);
  });
});
