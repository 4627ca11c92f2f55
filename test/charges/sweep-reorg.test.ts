/**
 * A reorg deeper than the network's confirmations removes the block of a confirmed sweep, and the
 * sweep is NOT mined again on the new chain (anvil drops the removed blocks' transactions; a real
 * node can drop them from its pool too). The rollback puts the sweep back in flight; the sweeper
 * finds it neither on the chain nor in the node's pool and sends it again as signed (same nonce,
 * same bytes: it can only mine once). The deposit address's funds reach the main address exactly
 * once, the sweep ends `confirmed` with a receipt in the current chain, and the reconciliation is
 * ok. Before the fix the sweep stayed `confirmed` forever on a hash the chain does not have, and
 * the funds stayed on the deposit address.
 *
 * The case where the removed sweep IS mined again in another block (its block and fee read again
 * from the new receipt) is test/reconciliation/reorged-sweep.test.ts.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseEther, type Address, type Hex } from 'viem';
import { ManualClock, type TestApp, type TestUser } from '../helpers/app.js';
import type { TestChain } from '../helpers/chain.js';
import { waitFor } from '../helpers/wait.js';
import { deployErc20, erc20BalanceOf, mintErc20 } from '../helpers/erc20.js';
import { sendFromOutsider, waitForCursor } from '../transactions/support.js';
import { SWEEP_RETRY_MS } from '../../src/modules/charges/charges.sweeps.js';
import { balanceOf, chargeApi, clockToChain, pay, startSweepingService } from './support.js';

type Receipt = { blockNumber: Hex; blockHash: Hex; status: Hex; gasUsed: Hex; effectiveGasPrice: Hex };

describe('charge sweeps: a confirmed sweep removed by a reorg and not mined again', () => {
  const clock = new ManualClock();
  let chain: TestChain;
  let t: TestApp;
  let alice: TestUser;
  let networkId: number;

  beforeAll(async () => {
    ({ chain, t, alice, networkId } = await startSweepingService(clock));
  });
  afterAll(async () => {
    await t?.close();
    await chain?.stop();
  });

  const sweepRows = (chargeId: number) =>
    t.store.db.selectFrom('charge_sweeps').select(['id', 'kind', 'token_id', 'amount', 'status', 'error', 'nonce', 'tx_hash', 'block_number', 'fee_paid', 'live_key']).where('charge_id', '=', chargeId).orderBy('id').execute();

  /** In the chain now: its receipt, in the block the chain has at that height. */
  async function canonicalReceipt(hash: string): Promise<Receipt | null> {
    const r = await chain.rpc<Receipt | null>('eth_getTransactionReceipt', [hash]);
    if (!r) return null;
    const b = await chain.rpc<{ hash: Hex }>('eth_getBlockByNumber', [r.blockNumber, false]);
    return b.hash === r.blockHash ? r : null;
  }

  /** No sweep of the charge is shown `confirmed` without its receipt in the chain. */
  async function expectNoPhantom(api: ReturnType<typeof chargeApi>, chargeId: number): Promise<void> {
    const shown = await api.show(chargeId);
    for (const s of shown.sweeps as Array<{ status: string; tx_hash: string }>) {
      if (s.status === 'confirmed') expect(await canonicalReceipt(s.tx_hash), `sweep ${s.tx_hash} shown confirmed`).not.toBeNull();
    }
  }

  /**
   * Removes every block from `from` to the head (same height, new empty blocks); `gone`, the
   * removed transactions, are then in neither the chain nor the node's pool (read before the
   * service's follower can have seen the reorg).
   */
  async function reorgFrom(from: number, gone: string[]): Promise<void> {
    const head = await chain.blockNumber();
    await waitForCursor(t, networkId, head);
    const seen = t.logs.filter((l) => l.includes('reorg: rolled back to the common ancestor')).length;
    await chain.rpc('anvil_reorg', [head - from + 1, []]);
    for (const h of gone) expect(await chain.rpc('eth_getTransactionByHash', [h]), h).toBeNull();
    await chain.mine(1);
    await waitFor(() => t.logs.filter((l) => l.includes('reorg: rolled back to the common ancestor')).length > seen, { timeoutMs: 15_000, message: 'the watcher saw the reorg' });
  }

  /** Every sweep and top-up of the charge final, each confirmed sweep in the chain; moves the clock on for retries. */
  async function settled(chargeId: number, message: string) {
    let last: unknown;
    return waitFor(
      async () => {
        clock.advance(SWEEP_RETRY_MS);
        const rows = await sweepRows(chargeId);
        const due = (await t.store.db.selectFrom('charges').select('sweep_due_at').where('id', '=', chargeId).executeTakeFirstOrThrow()).sweep_due_at;
        last = { rows, due };
        const confirmed = rows.filter((r) => r.kind === 'sweep' && r.status === 'confirmed');
        if (confirmed.length === 0 || due !== null || rows.some((r) => r.live_key !== null || r.status === 'pending')) return null;
        for (const r of confirmed) if (!(await canonicalReceipt(r.tx_hash!))) return null;
        return rows;
      },
      { timeoutMs: 40_000, intervalMs: 100, message },
    ).catch((e: Error) => {
      throw new Error(`${e.message}: ${JSON.stringify(last)}`);
    });
  }

  async function reconciliationOk(walletId: number) {
    let last = '';
    return waitFor(
      async () => {
        const r = await t.request('GET', `/api/wallet/${walletId}/reconciliation`, { token: alice.token });
        last = r.text;
        return r.status === 200 && r.body.data.ok === true ? r.body.data : null;
      },
      { timeoutMs: 20_000, intervalMs: 200, message: 'reconciliation ok' },
    ).catch((e: Error) => {
      throw new Error(`${e.message}: ${last}`);
    });
  }

  it('native: the sweep goes back in flight, is sent again as signed, and the funds reach the main address once', async () => {
    const wallet = (await t.request('POST', '/api/wallet/create', { token: alice.token, body: { name: 'Shop', network_id: networkId } })).body.data as { id: number; address: Address };
    const api = chargeApi(t, wallet.id, alice.token);
    await clockToChain(clock, chain);
    const c = await api.create({ amount: '0.5', token: 'ETH', expires: 600 });
    await pay(chain.rpcUrl, c.address, parseEther('0.5'));
    await api.until(c.id, (x) => x.status === 'paid', 'paid');
    const [sweep] = await settled(c.id, 'the sweep confirmed');
    expect(sweep!.status).toBe('confirmed');
    const first = (await canonicalReceipt(sweep!.tx_hash!))!;
    const block = Number(BigInt(first.blockNumber));
    expect(sweep!.block_number).toBe(block);
    const ancestor = BigInt(block - 1);
    const mainAtAncestor = BigInt(await chain.rpc<Hex>('eth_getBalance', [wallet.address, `0x${ancestor.toString(16)}`]));
    expect(BigInt(await chain.rpc<Hex>('eth_getBalance', [c.address, `0x${ancestor.toString(16)}`]))).toBe(parseEther('0.5'));

    await chain.mine(2);
    await reorgFrom(block, [sweep!.tx_hash!]);
    await expectNoPhantom(api, c.id);

    const rows = await settled(c.id, 'the sweep confirmed again on the new chain');
    await expectNoPhantom(api, c.id);
    expect(rows.map((r) => [r.kind, r.status, r.tx_hash])).toEqual([['sweep', 'confirmed', sweep!.tx_hash]]);
    const again = (await canonicalReceipt(sweep!.tx_hash!))!;
    expect(again.status).toBe('0x1');
    expect(rows[0]!.block_number).toBe(Number(BigInt(again.blockNumber)));
    expect(rows[0]!.block_number).not.toBe(block);
    expect(BigInt(rows[0]!.fee_paid!)).toBe(BigInt(again.gasUsed) * BigInt(again.effectiveGasPrice));
    // Exactly once, on the chain: the main address gained the sweep's amount, the deposit address is empty.
    expect(await balanceOf(chain, wallet.address)).toBe(mainAtAncestor + BigInt(sweep!.amount));
    expect(await balanceOf(chain, c.address)).toBe(0n);
    const r = await reconciliationOk(wallet.id);
    expect(r.unswept).toEqual([]);
  });

  it('token: the gas top-up, the token sweep and the gas remainder’s sweep all removed: swept once, every row the chain’s', async () => {
    const wallet = (await t.request('POST', '/api/wallet/create', { token: alice.token, body: { name: 'Tokens', network_id: networkId } })).body.data as { id: number; address: Address };
    await sendFromOutsider(chain.rpcUrl, wallet.address, 10n ** 18n); // gas for the deposit's token sweep (a recorded receipt)
    const usd = await deployErc20(chain.rpcUrl, { name: 'Test USD', symbol: 'TUSD', decimals: 6 });
    expect((await t.request('POST', `/api/wallet/${wallet.id}/token/add`, { token: alice.token, body: { contract: usd } })).status).toBe(200);
    const api = chargeApi(t, wallet.id, alice.token);
    await clockToChain(clock, chain);
    const c = await api.create({ amount: '5', token: 'TUSD', expires: 600 });
    await mintErc20(chain.rpcUrl, usd, c.address as Address, 5_000_000n);
    await api.until(c.id, (x) => x.status === 'paid', 'paid');
    const before = await settled(c.id, 'top-up and sweeps confirmed');
    expect(before.map((r) => [r.kind, r.status])).toEqual([
      ['gas', 'confirmed'],
      ['sweep', 'confirmed'],
      ['sweep', 'confirmed'],
    ]);
    const topUp = await t.store.db.selectFrom('charge_sweeps as w').innerJoin('transactions as x', 'x.id', 'w.transaction_id').select(['x.tx_hash', 'x.block_number']).where('w.id', '=', before[0]!.id).executeTakeFirstOrThrow();
    const from = Number(topUp.block_number);
    expect(from).toBeLessThanOrEqual(before[1]!.block_number!);
    expect(await erc20BalanceOf(chain.rpcUrl, usd, wallet.address)).toBe(5_000_000n);

    await chain.mine(2);
    await reorgFrom(from, [topUp.tx_hash!, before[1]!.tx_hash!, before[2]!.tx_hash!]);
    await expectNoPhantom(api, c.id);

    // The deposit address emptied (the gas remainder's sweep comes after the token's), then the rows settled.
    await waitFor(
      async () => {
        clock.advance(SWEEP_RETRY_MS);
        return (await balanceOf(chain, c.address)) === 0n && (await erc20BalanceOf(chain.rpcUrl, usd, c.address as Address)) === 0n ? true : null;
      },
      { timeoutMs: 40_000, intervalMs: 100, message: 'the deposit address emptied on the new chain' },
    );
    const rows = await settled(c.id, 'swept again on the new chain');
    await expectNoPhantom(api, c.id);
    // Every row is the chain's: a confirmed one mined with status 1 in a canonical block at its
    // block_number, a failed one not mined at all; the token moved once.
    for (const r of rows.filter((x) => x.kind === 'sweep')) {
      const receipt = await canonicalReceipt(r.tx_hash!);
      if (r.status === 'confirmed') expect([receipt?.status, r.block_number]).toEqual(['0x1', Number(BigInt(receipt!.blockNumber))]);
      else expect([r.status, receipt]).toEqual(['failed', null]);
    }
    // A failed sweep's nonce is taken by a confirmed one (it can never mine); one per nonce.
    const confirmedNonces = rows.filter((x) => x.kind === 'sweep' && x.status === 'confirmed').map((x) => x.nonce);
    expect(new Set(confirmedNonces).size).toBe(confirmedNonces.length);
    for (const f of rows.filter((x) => x.status === 'failed')) expect(confirmedNonces).toContain(f.nonce);
    // The top-up came back in flight and was confirmed again: no second one was sent.
    expect(rows.filter((x) => x.kind === 'gas').map((x) => x.status)).toEqual(['confirmed']);
    const tokenId = (await t.store.db.selectFrom('charges').select('token_id').where('id', '=', c.id).executeTakeFirstOrThrow()).token_id;
    const tokenSweeps = rows.filter((r) => r.kind === 'sweep' && r.token_id === tokenId && r.status === 'confirmed');
    expect(tokenSweeps.map((r) => BigInt(r.amount))).toEqual([5_000_000n]);
    expect(await erc20BalanceOf(chain.rpcUrl, usd, wallet.address)).toBe(5_000_000n);
    expect(await erc20BalanceOf(chain.rpcUrl, usd, c.address as Address)).toBe(0n);
    expect(await balanceOf(chain, c.address)).toBe(0n);
    const r = await reconciliationOk(wallet.id);
    expect(r.unswept).toEqual([]);
  });
});
