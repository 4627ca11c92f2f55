/**
 * Sweeps follow the chain (real anvil with automining switched off where the test needs a
 * transaction to wait in the pool):
 * - a sweep is listed `pending` while in the pool and `confirmed` once mined;
 * - a sweep the node no longer takes (dropped, its nonce used) is `failed` (`dropped`) once its
 *   nonce is used at confirmed depth (a refused re-send alone is not final), and swept again;
 * - a wrong token received by a native charge is swept too (its gas paid from the ether on the
 *   address, so no top-up), then the ether;
 * - another token arriving after the charge was swept makes it due again: swept after one gas
 *   top-up from the main wallet.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseEther, type Address, type Hex } from 'viem';
import { ManualClock, startTestApp, type TestApp, type TestUser } from '../helpers/app.js';
import { startTestChain, type TestChain } from '../helpers/chain.js';
import { deployErc20, erc20BalanceOf, mintErc20 } from '../helpers/erc20.js';
import { waitFor } from '../helpers/wait.js';
import { SWEEP_RETRY_MS } from '../../src/modules/charges/charges.sweeps.js';
import { startChargeWorker } from '../../src/workers/charges.js';
import { balanceOf, chargeApi, clockToChain, DATETIME, pay } from './support.js';

describe('charge sweeps', () => {
  const clock = new ManualClock();
  let chain: TestChain;
  let t: TestApp;
  let user: TestUser;
  let wallet: { id: number; address: string };
  let api: ReturnType<typeof chargeApi>;
  let networkId: number;

  beforeAll(async () => {
    chain = await startTestChain();
    t = await startTestApp({ clock, env: { CHARGES_POLL_MS: '50', WATCHER_POLL_MS: '50' } });
    networkId = await chain.register(t);
    user = await t.createUser();
    wallet = (await t.request('POST', '/api/wallet/create', { token: user.token, body: { name: 'Shop', network_id: networkId } })).body
      .data;
    api = chargeApi(t, wallet.id, user.token);
    t.startWorkers();
    await waitFor(
      () => t.store.db.selectFrom('chain_cursors').select('block_number').where('network_id', '=', networkId).executeTakeFirst(),
      { message: 'watcher cursor' },
    );
  });
  afterAll(async () => {
    await t?.close();
    await chain?.stop();
  });

  /** Pays a charge in full with automining off, mines the payment, and returns the sweep waiting in the pool. */
  async function paidWithSweepInPool(amount: string) {
    await clockToChain(clock, chain);
    const c = await api.create({ amount, token: 'ETH', expires: 600 });
    await chain.rpc('evm_setAutomine', [false]);
    await pay(chain.rpcUrl, c.address, parseEther(amount));
    await chain.mine(1);
    const pending = await api.until(c.id, (x) => x.status === 'paid' && x.sweeps.length === 1, 'paid, sweep recorded');
    // The sweep is recorded before it is sent: wait until the node has it.
    await waitFor(() => chain.rpc('eth_getTransactionByHash', [pending.sweeps[0].tx_hash]), {
      timeoutMs: 10_000,
      message: 'sweep in the pool',
    });
    return { c, sweep: pending.sweeps[0] };
  }

  it('a sweep is pending while in the pool, confirmed once mined', async () => {
    try {
      const { c, sweep } = await paidWithSweepInPool('0.4');
      expect(sweep).toEqual({
        tx_hash: expect.stringMatching(/^0x[0-9a-f]{64}$/),
        token: 'ETH',
        amount: expect.any(String),
        status: 'pending',
        reason: null,
        created_at: expect.stringMatching(DATETIME),
      });
      const pool = await chain.rpc<{ pending: Record<string, unknown> }>('txpool_content');
      expect(Object.keys(pool.pending).map((a) => a.toLowerCase())).toContain(c.address.toLowerCase());
      expect(await balanceOf(chain, c.address)).toBe(parseEther('0.4'));

      await chain.mine(1);
      const done = await api.until(c.id, (x) => x.sweeps[0].status === 'confirmed', 'sweep confirmed');
      expect(done.sweeps).toEqual([{ ...sweep, status: 'confirmed' }]);
      expect(await balanceOf(chain, c.address)).toBe(0n);
    } finally {
      await chain.rpc('evm_setAutomine', [true]);
    }
  });

  it('a sweep the node drops is failed, then swept again and confirmed', async () => {
    try {
      const { c, sweep } = await paidWithSweepInPool('0.7');
      // The address's key used elsewhere: another transaction at the sweep's nonce, at twice its
      // fees, replaces it in the pool (so a re-send of the sweep can only be refused) and mines.
      const pooled = await chain.rpc<{ nonce: Hex; maxFeePerGas: Hex }>('eth_getTransactionByHash', [sweep.tx_hash]);
      const fee = `0x${(2n * BigInt(pooled.maxFeePerGas)).toString(16)}`;
      await chain.rpc('anvil_impersonateAccount', [c.address]);
      const other = await chain.rpc<Hex>('eth_sendTransaction', [
        { from: c.address, to: c.address, value: '0x0', nonce: pooled.nonce, gas: '0x5208', maxFeePerGas: fee, maxPriorityFeePerGas: fee },
      ]);
      await chain.rpc('anvil_stopImpersonatingAccount', [c.address]);
      await chain.mine(1);
      // Failed (`dropped`) because its nonce is used at confirmed depth by that transaction; a
      // refused re-send alone is not final (sweep-faults.test.ts).
      const failed = await api.until(c.id, (x) => x.sweeps[0].status === 'failed', 'sweep failed');
      expect(failed.sweeps).toHaveLength(1);
      const row = await t.store.db
        .selectFrom('charge_sweeps')
        .select('error')
        .where('tx_hash', '=', sweep.tx_hash)
        .executeTakeFirstOrThrow();
      expect(row.error).toBe('dropped');
      expect(t.logs.some((l) => l.includes('(dropped)') && l.includes(other))).toBe(true);

      clock.advance(SWEEP_RETRY_MS);
      const retried = await api.until(c.id, (x) => x.sweeps.length === 2, 'swept again');
      expect(retried.sweeps[1].status).toBe('pending');
      expect(retried.sweeps[1].tx_hash).not.toBe(sweep.tx_hash);
      // Recorded before it is sent, as the first: mine only once the node has it.
      await waitFor(() => chain.rpc('eth_getTransactionByHash', [retried.sweeps[1].tx_hash]), {
        timeoutMs: 10_000,
        message: 'second sweep in the pool',
      });
      await chain.mine(1);
      const done = await api.until(c.id, (x) => x.sweeps[1].status === 'confirmed', 'second sweep confirmed');
      expect(done.sweeps.map((x: { status: string }) => x.status)).toEqual(['failed', 'confirmed']);
      expect(await balanceOf(chain, c.address)).toBe(0n);
    } finally {
      await chain.rpc('evm_setAutomine', [true]);
    }
  });

  it('a wrong token sent to a native charge is swept too, its gas paid from the charge’s own ether', async () => {
    const dai = await deployErc20(chain.rpcUrl, { name: 'Dai', symbol: 'DAI', decimals: 18 });
    expect((await t.request('POST', `/api/wallet/${wallet.id}/token/add`, { token: user.token, body: { contract: dai } })).status).toBe(
      200,
    );
    await clockToChain(clock, chain);
    const c = await api.create({ amount: '0.1', token: 'ETH', expires: 600 });
    await mintErc20(chain.rpcUrl, dai, c.address, 5n * 10n ** 18n); // the wrong token
    await pay(chain.rpcUrl, c.address, parseEther('0.1'));
    await api.until(c.id, (x) => x.status === 'paid', 'paid');

    const swept = (x: any, token: string) =>
      x.sweeps.some((w: { token: string; status: string }) => w.token === token && w.status === 'confirmed');
    const done = await api.until(c.id, (x) => swept(x, 'DAI') && swept(x, 'ETH'), 'DAI then ETH swept', 20_000);
    expect(done.sweeps.map((w: { token: string }) => w.token)).toEqual(['DAI', 'ETH']);
    expect(done.payments).toHaveLength(1); // the DAI is not a payment of an ETH charge
    expect(await erc20BalanceOf(chain.rpcUrl, dai, c.address as Address)).toBe(0n);
    expect(await erc20BalanceOf(chain.rpcUrl, dai, wallet.address as Address)).toBe(5n * 10n ** 18n);
    expect(await balanceOf(chain, c.address)).toBe(0n);
    const topUps = await t.store.db
      .selectFrom('transactions')
      .select('type')
      .where('wallet_id', '=', wallet.id)
      .where('to_address', '=', c.address)
      .execute();
    expect(topUps).toEqual([]);
  });

  it('another token arriving after the sweep is swept as well, with one gas top-up from the main wallet', async () => {
    const eur = await deployErc20(chain.rpcUrl, { name: 'Euro Coin', symbol: 'EURC', decimals: 6 });
    expect((await t.request('POST', `/api/wallet/${wallet.id}/token/add`, { token: user.token, body: { contract: eur } })).status).toBe(
      200,
    );
    await chain.setBalance(wallet.address, parseEther('1'));
    await clockToChain(clock, chain);
    const c = await api.create({ amount: '0.05', token: 'ETH', expires: 600 });
    await pay(chain.rpcUrl, c.address, parseEther('0.05'));
    await api.until(c.id, (x) => x.status === 'paid' && x.sweeps[0]?.status === 'confirmed', 'paid and swept');
    expect(await balanceOf(chain, c.address)).toBe(0n);

    await mintErc20(chain.rpcUrl, eur, c.address, 3_000_000n); // later, and not the charge's token
    const done = await api.until(
      c.id,
      (x) => x.sweeps.some((w: { token: string; status: string }) => w.token === 'EURC' && w.status === 'confirmed'),
      'EURC swept',
      20_000,
    );
    expect(done.payments).toHaveLength(1);
    expect(await erc20BalanceOf(chain.rpcUrl, eur, c.address as Address)).toBe(0n);
    expect(await erc20BalanceOf(chain.rpcUrl, eur, wallet.address as Address)).toBe(3_000_000n);
    const topUps = await t.store.db
      .selectFrom('transactions')
      .select('type')
      .where('wallet_id', '=', wallet.id)
      .where('to_address', '=', c.address)
      .execute();
    expect(topUps).toEqual([{ type: 'transfer' }]);
  });

  it('a sweep is confirmed at no more than the height its tick settled at (the payments it swept are confirmed first)', async () => {
    const workers = t.workers!;
    const i = workers.list.findIndex((w) => w.name === 'charges');
    try {
      const { c, sweep } = await paidWithSweepInPool('0.3');
      // From here the charge worker is driven by hand: settlement and sweeping see different heights.
      await workers.list[i]!.stop();
      await chain.mine(1);
      const receipt = await chain.rpc<{ blockNumber: Hex }>('eth_getTransactionReceipt', [sweep.tx_hash]);
      const block = Number(receipt.blockNumber);
      // The follower has recorded the sweep's block: by its cursor the sweep is final.
      await waitFor(
        async () =>
          (
            await t.store.db
              .selectFrom('chain_cursors')
              .select('block_number')
              .where('network_id', '=', networkId)
              .executeTakeFirstOrThrow()
          ).block_number >= block
            ? true
            : undefined,
        { message: 'cursor at the sweep' },
      );
      // A tick whose settlement saw the chain one block lower does not confirm it.
      await t.services.charges.sweep(() => false, new Map([[networkId, block - 1]]));
      expect((await api.show(c.id)).sweeps[0].status).toBe('pending');
      // The next tick settles at the cursor and confirms it.
      await t.services.charges.tick();
      expect((await api.show(c.id)).sweeps).toEqual([{ ...sweep, status: 'confirmed' }]);
    } finally {
      await chain.rpc('evm_setAutomine', [true]);
      workers.list[i] = startChargeWorker(t.ctx, t.services.charges);
    }
  });
});
