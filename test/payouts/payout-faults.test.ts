/**
 * A payout while the node rate-limits and drops broadcasts (a JSON-RPC proxy in front of anvil):
 * an item whose create meets a -32005 is not refused (a node's fault is never the item's): the
 * pass stops and the next one takes the same item up again; a broadcast cut mid-request leaves
 * the item's transfer pending and the watcher sends it again. In the end every item is sent
 * exactly once, in item order, each recipient paid its exact amount.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseEther, type Address } from 'viem';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { waitFor } from '../helpers/wait.js';
import { ETH, fundedWallet, publicClient, startProxiedSuite } from '../helpers/transfers.js';

let s: Awaited<ReturnType<typeof startProxiedSuite>>;

beforeAll(async () => {
  s = await startProxiedSuite();
});

afterAll(async () => s?.close());

describe('a payout under node faults', () => {
  it('waits out rate limits and cut broadcasts, then every item is sent once, in order', async () => {
    const w = await fundedWallet(s.t, s.chain, s.user, s.networkId, 3n * ETH);
    const to: Address[] = Array.from({ length: 6 }, () => privateKeyToAccount(generatePrivateKey()).address);
    const items = to.map((address, n) => ({ address, amount: `0.0${n + 1}`, reference: `faulty-${n}` }));
    // The payout is checked as a whole first (its own estimate), then the faults start.
    const res = await s.t.request('POST', `/api/wallet/${w.id}/payout/create`, { token: s.user.token, body: { token: 'ETH', items } });
    expect(res.status, res.text).toBe(200);
    s.proxy.rule('eth_estimateGas', { action: 'error', code: -32005, message: 'limit exceeded', times: 8 });
    s.proxy.drop('eth_sendRawTransaction');
    await waitFor(
      async () =>
        (await s.t.store.db.selectFrom('transactions').select('id').where('payout_id', '=', res.body.data.id).execute()).length >= 2 ||
        null,
      { timeoutMs: 20_000, message: 'items recorded while broadcasts are cut' },
    );
    s.proxy.allow('eth_sendRawTransaction');
    s.proxy.allow('eth_estimateGas');
    const done = await waitFor(
      async () => {
        const p = (await s.t.request('GET', `/api/wallet/${w.id}/payout/${res.body.data.id}`, { token: s.user.token })).body.data;
        return p.status === 'completed' ? p : null;
      },
      { timeoutMs: 40_000, message: 'payout completed' },
    );
    expect(done.items.map((i: any) => [i.reference, i.status, i.failure_reason])).toEqual(
      items.map((i) => [i.reference, 'confirmed', null]),
    );
    const txs = await s.t.store.db
      .selectFrom('transactions')
      .select(['nonce', 'reference'])
      .where('payout_id', '=', res.body.data.id)
      .orderBy('nonce', 'asc')
      .execute();
    expect(txs.map((x) => x.reference)).toEqual(items.map((i) => i.reference));
    expect(await publicClient(s.chain.rpcUrl).getTransactionCount({ address: w.address })).toBe(6);
    for (const [n, address] of to.entries())
      expect(await publicClient(s.chain.rpcUrl).getBalance({ address })).toBe(parseEther(items[n]!.amount));
  }, 90_000);
});
