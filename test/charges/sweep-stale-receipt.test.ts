/**
 * A sweep that mined, while the node (one URL whose backends lag each other, behind a real
 * JSON-RPC proxy in front of anvil) answers `null` to its receipt for a while: the nonce read at
 * the confirmed height shows it used, and the absence of a receipt from a node that may not have
 * the block is no answer. The block that used the nonce, read by number, holds this very sweep:
 * it stays in flight, and ends `confirmed` once the receipt is served, never `dropped`.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseEther } from 'viem';
import { ManualClock, startTestApp, type TestApp, type TestUser } from '../helpers/app.js';
import { startTestChain, type TestChain } from '../helpers/chain.js';
import { waitFor } from '../helpers/wait.js';
import { upsertNetwork } from '../../src/modules/networks/networks.repository.js';
import { RpcProxy, waitForCursor } from '../helpers/transfers.js';
import { balanceOf, chargeApi, clockToChain, pay } from './support.js';

describe('a mined sweep whose receipt the node does not serve for a while', () => {
  const clock = new ManualClock();
  let chain: TestChain;
  let proxy: RpcProxy;
  let t: TestApp;
  let user: TestUser;
  let networkId: number;

  beforeAll(async () => {
    chain = await startTestChain();
    proxy = await RpcProxy.start(chain.rpcUrl);
    t = await startTestApp({ clock, workers: true, env: { CHARGES_POLL_MS: '50', WATCHER_POLL_MS: '50' } });
    // Two confirmations: the follower reads the sweep's block (and its receipt) before the
    // sweep's nonce is used at the confirmed height, which is when a missing receipt is judged.
    const n = await upsertNetwork(
      t.store.db,
      {
        name: 'Lagging backends',
        rpc_url: proxy.url,
        chain_id: 31337,
        currency_symbol: 'ETH',
        block_explorer: '',
        is_mainnet: false,
        confirmations: 2,
      },
      Date.now(),
    );
    networkId = n.id;
    await waitForCursor(t, networkId);
    user = await t.createUser();
  });
  afterAll(async () => {
    await t?.close();
    await proxy?.down();
    await chain?.stop();
  });

  it('its nonce used at the confirmed height, its receipt null: confirmed once served, not dropped', async () => {
    const wallet = (await t.request('POST', '/api/wallet/create', { token: user.token, body: { name: 'Shop', network_id: networkId } }))
      .body.data as { id: number; address: string };
    const api = chargeApi(t, wallet.id, user.token);
    await clockToChain(clock, chain);
    const c = await api.create({ amount: '0.5', token: 'ETH', expires: 600 });
    await chain.rpc('evm_setAutomine', [false]);
    try {
      await pay(chain.rpcUrl, c.address, parseEther('0.5'));
      await chain.mine(2);
      const paid = await api.until(c.id, (x) => x.status === 'paid' && x.sweeps.length === 1, 'paid, sweep recorded', 20_000);
      const sweep = paid.sweeps[0] as { tx_hash: string; status: string };
      await waitFor(() => chain.rpc('eth_getTransactionByHash', [sweep.tx_hash]), { timeoutMs: 10_000, message: 'sweep in the pool' });

      // The sweep mines; the follower reads its block (the receipt is served to it).
      await chain.mine(1);
      const mined = Number(BigInt((await chain.rpc<{ blockNumber: string }>('eth_getTransactionReceipt', [sweep.tx_hash])).blockNumber));
      await waitForCursor(t, networkId, mined);
      // From here the node's backend that answers receipts lags: null for the sweep's.
      let nulls = 0;
      proxy.rule('eth_getTransactionReceipt', {
        action: 'null',
        match: (p) => String(p[0]).toLowerCase() === sweep.tx_hash.toLowerCase() && ++nulls > 0,
      });
      await chain.mine(1); // the sweep's block is now at the confirmed height
      await waitForCursor(t, networkId, mined + 1);
      const seen = nulls;
      await waitFor(async () => nulls >= seen + 10 || (await api.show(c.id)).sweeps[0].status !== 'pending', {
        timeoutMs: 15_000,
        message: 'the sweep followed with its receipt missing',
      });
      expect((await api.show(c.id)).sweeps).toEqual([sweep]);

      proxy.allow('eth_getTransactionReceipt');
      const done = await api.until(c.id, (x) => x.sweeps[0]?.status !== 'pending', 'sweep final', 20_000);
      expect(done.sweeps).toEqual([{ ...sweep, status: 'confirmed' }]);
      expect(await balanceOf(chain, c.address)).toBe(0n);
      const row = await t.store.db
        .selectFrom('charge_sweeps')
        .select(['status', 'error', 'block_number'])
        .where('tx_hash', '=', sweep.tx_hash)
        .executeTakeFirstOrThrow();
      expect({ ...row, block_number: Number(row.block_number) }).toEqual({ status: 'confirmed', error: null, block_number: mined });
    } finally {
      proxy.allow('eth_getTransactionReceipt');
      await chain.rpc('evm_setAutomine', [true]);
    }
  });
});
