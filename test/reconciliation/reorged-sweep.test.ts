/**
 * A reorg deeper than the network's confirmations removes the block of a confirmed sweep, and the
 * sweep is mined again in another block at another base fee (a real node puts removed
 * transactions back in its pool). The fee the sweep really paid is the new block's: the
 * reconciliation must count that one, not the one recorded from the first receipt (found by the
 * fault simulation, seed 1801 under load: a deposit address off by the sweep's gas × the
 * difference of the two blocks' fees). The sweep's row follows: back in flight with the
 * rollback, then confirmed again with the new block and the new receipt's fee.
 *
 * The second test is the race the first can meet under load (a fresh-clone CI run failed on it):
 * the sweeper looks at the deposit address on the new chain before the watcher has seen the
 * reorg, finds the gas remainder unswept there (its sweep was in a removed block) and sweeps it
 * anew at the same nonce. Made certain here by stopping the watcher over the reorg. One
 * transaction per nonce: the old sweep, sent again, is refused and fails `dropped`; nothing is
 * swept twice and nothing is left behind.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Address, Hex } from 'viem';
import { ManualClock, type TestApp, type TestUser } from '../helpers/app.js';
import type { TestChain } from '../helpers/chain.js';
import { waitFor } from '../helpers/wait.js';
import { startSweepingService, tokenChargePaid } from '../charges/support.js';
import { waitForCursor } from '../helpers/transfers.js';
import { rawOf, type RpcTx } from '../../sim/chain.js';
import { startWatcherWorker } from '../../src/workers/watcher.js';

const ZERO = '0.000000000000000000';

interface Swept {
  wallet: { id: number; address: Address };
  c: { id: number; address: string };
  /** The token sweep's row, confirmed. */
  sweep: { tx_hash: string | null; fee_paid: string | null };
  first: { blockNumber: Hex; effectiveGasPrice: Hex };
  /** The token sweep as signed (to mine it again after the reorg). */
  raw: Hex;
}

/** A wallet's charge paid in a token on `chain` and its token sweep confirmed. */
async function paidAndSwept(t: TestApp, chain: TestChain, alice: TestUser, networkId: number, clock: ManualClock): Promise<Swept> {
  // Gas for the deposit's token sweep, set on the chain.
  const { wallet, c } = await tokenChargePaid(t, chain, alice, {
    networkId,
    clock,
    name: 'Shop',
    fund: (a) => chain.setBalance(a, 10n ** 18n),
  });
  const tokenId = (await t.store.db.selectFrom('charges').select('token_id').where('id', '=', c.id).executeTakeFirstOrThrow()).token_id;
  const sweep = await waitFor(
    async () =>
      (await t.store.db
        .selectFrom('charge_sweeps')
        .selectAll()
        .where('charge_id', '=', c.id)
        .where('kind', '=', 'sweep')
        .where('token_id', '=', tokenId)
        .where('status', '=', 'confirmed')
        .executeTakeFirst()) ?? null,
    { timeoutMs: 20_000, message: 'the token sweep confirmed' },
  );
  expect(sweep.fee_paid).not.toBeNull();
  const first = await chain.rpc<{ blockNumber: Hex; effectiveGasPrice: Hex }>('eth_getTransactionReceipt', [sweep.tx_hash]);
  const tx = await chain.rpc<RpcTx>('eth_getTransactionByHash', [sweep.tx_hash]);
  const raw = rawOf(tx);
  expect(raw).not.toBeNull();
  return { wallet, c, sweep, first, raw: raw! };
}

describe('reconciliation: a sweep mined again after a reorg', () => {
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

  it('counts the fee of the block it was mined in again, not the first receipt’s: every difference zero', async () => {
    const { wallet, c, sweep, first, raw } = await paidAndSwept(t, chain, alice, networkId, clock);
    // Let the rest settle (the gas left is swept too), two blocks on top, then a reorg removing
    // everything from the token sweep's block on; the token sweep alone is mined again.
    await settled(t, c.id);
    await chain.mine(2);
    await waitForCursor(t, networkId, await chain.blockNumber());
    const again = await reorgMiningAgain(chain, first, raw, sweep.tx_hash);
    await chain.mine(2);
    await sawReorg(t, 1);
    await waitForCursor(t, networkId, await chain.blockNumber());

    // The row went back in flight with the rollback and is confirmed again, once, from its new
    // receipt: the new block and the fee paid there (before, it kept the removed block).
    const reconfirmed = await waitFor(
      async () => {
        const rows = await t.store.db
          .selectFrom('charge_sweeps')
          .select(['status', 'block_number', 'fee_paid', 'live_key'])
          .where('tx_hash', '=', sweep.tx_hash)
          .execute();
        return rows.length === 1 && rows[0]!.status === 'confirmed' && rows[0]!.block_number === Number(BigInt(again.blockNumber))
          ? rows[0]!
          : null;
      },
      { timeoutMs: 20_000, message: 'the sweep confirmed again in its new block' },
    );
    expect(BigInt(reconfirmed.fee_paid!)).toBe(BigInt(again.gasUsed) * BigInt(again.effectiveGasPrice));
    // The gas remainder's sweep, removed with it and not sent again by the test, is sent again by
    // the sweeper (it came back in flight under its own key while the token sweep held the
    // kind's), or, if the sweeper met the new chain before the watcher saw the reorg, swept anew
    // (the second test).
    await finalSweeps(t, chain, c.id);
    await waitForCursor(t, networkId, await chain.blockNumber());
    await expectReconciled(t, alice, wallet.id);
  });

  it('the remainder swept anew on the new chain before the watcher sees the reorg: one transaction at its nonce, the old sweep fails dropped, every difference zero', async () => {
    const { wallet, c, sweep, first, raw } = await paidAndSwept(t, chain, alice, networkId, clock);
    await settled(t, c.id);
    const [remainder, ...others] = await t.store.db
      .selectFrom('charge_sweeps')
      .selectAll()
      .where('charge_id', '=', c.id)
      .where('kind', '=', 'sweep')
      .where('tx_hash', '!=', sweep.tx_hash)
      .execute();
    expect(others).toEqual([]);
    expect(remainder).toMatchObject({ status: 'confirmed', nonce: 1 });
    await chain.mine(2);
    await waitForCursor(t, networkId, await chain.blockNumber());
    // The watcher stopped over the reorg: the sweeper alone meets the new chain, where the token
    // sweep is mined again and the remainder's sweep is nowhere.
    await t.workers!.list.find((w) => w.name === 'watcher')!.stop();
    await reorgMiningAgain(chain, first, raw, sweep.tx_hash);
    expect(await chain.rpc('eth_getTransactionReceipt', [remainder!.tx_hash])).toBeNull();
    // The look at the charge that the remainder's confirmation schedules, run now.
    await t.store.db.updateTable('charges').set({ sweep_due_at: clock.nowMs() }).where('id', '=', c.id).execute();
    const anew = await waitFor(
      async () => {
        const row = await t.store.db
          .selectFrom('charge_sweeps')
          .selectAll()
          .where('charge_id', '=', c.id)
          .where('kind', '=', 'sweep')
          .where('id', '>', remainder!.id)
          .executeTakeFirst();
        return row && (await chain.rpc('eth_getTransactionReceipt', [row.tx_hash])) ? row : null;
      },
      { timeoutMs: 20_000, message: 'the remainder swept anew and mined on the new chain' },
    );
    expect(anew.nonce).toBe(remainder!.nonce);
    expect(anew.token_id).toBe(remainder!.token_id);

    // The watcher back: it rolls back to the common ancestor; the old sweep, back in flight, is
    // sent again and refused (its nonce is used), and fails once that nonce is used at the
    // confirmed height with no receipt of its own.
    t.workers!.list.push(startWatcherWorker(t.ctx, { balances: t.services.balances, transactions: t.services.transactions }));
    await chain.mine(2);
    await sawReorg(t, 2);
    await waitForCursor(t, networkId, await chain.blockNumber());
    const rows = await finalSweeps(t, chain, c.id);
    expect(rows.find((r) => r.tx_hash === remainder!.tx_hash)).toMatchObject({ status: 'failed', error: 'dropped' });
    expect(rows.find((r) => r.tx_hash === anew.tx_hash)).toMatchObject({ status: 'confirmed' });
    expect(rows.find((r) => r.tx_hash === sweep.tx_hash)).toMatchObject({ status: 'confirmed' });
    await waitForCursor(t, networkId, await chain.blockNumber());
    await expectReconciled(t, alice, wallet.id);
  });
});

/** The watcher has logged its `n`th rollback to a common ancestor. */
async function sawReorg(t: TestApp, n: number): Promise<void> {
  const count = () => t.logs.filter((l) => l.includes('reorg: rolled back to the common ancestor')).length;
  await waitFor(() => count() >= n, { timeoutMs: 15_000, message: `the watcher saw reorg ${n}` });
}

/** Nothing more due for the charge and none of its sweeps in flight. */
async function settled(t: TestApp, chargeId: number): Promise<void> {
  await waitFor(
    async () => {
      const due = (await t.store.db.selectFrom('charges').select('sweep_due_at').where('id', '=', chargeId).executeTakeFirstOrThrow())
        .sweep_due_at;
      const live = await t.store.db
        .selectFrom('charge_sweeps')
        .select('id')
        .where('charge_id', '=', chargeId)
        .where('live_key', 'is not', null)
        .executeTakeFirst();
      return due === null && live === undefined;
    },
    { timeoutMs: 20_000, message: 'nothing more due, nothing in flight' },
  );
}

/**
 * A reorg removing everything from the token sweep's block on, then the token sweep alone mined
 * again at a third of its first base fee. Returns its new receipt.
 */
async function reorgMiningAgain(
  chain: TestChain,
  first: Swept['first'],
  raw: Hex,
  txHash: string | null,
): Promise<{ blockNumber: Hex; gasUsed: Hex; effectiveGasPrice: Hex }> {
  const depth = (await chain.blockNumber()) - Number(BigInt(first.blockNumber)) + 1;
  await chain.rpc('anvil_reorg', [depth, []]);
  await chain.rpc('anvil_setNextBlockBaseFeePerGas', [`0x${(BigInt(first.effectiveGasPrice) / 3n).toString(16)}`]);
  await chain.rpc('eth_sendRawTransaction', [raw]);
  // Polled: anvil mines a transaction just after answering its send, not always before.
  const again = await waitFor(
    () => chain.rpc<{ blockNumber: Hex; gasUsed: Hex; effectiveGasPrice: Hex } | null>('eth_getTransactionReceipt', [txHash]),
    { message: 'the sweep mined again' },
  );
  expect(BigInt(again.effectiveGasPrice)).not.toBe(BigInt(first.effectiveGasPrice));
  expect(again.blockNumber).not.toBe(first.blockNumber);
  return again;
}

/**
 * Every sweep of the charge final on the chain as it is: each confirmed one mined, each failed
 * one nowhere, `dropped`, and its nonce used by a confirmed sweep (one transaction per nonce:
 * nothing swept twice, nothing left behind).
 */
async function finalSweeps(t: TestApp, chain: TestChain, chargeId: number) {
  return waitFor(
    async () => {
      const rows = await t.store.db
        .selectFrom('charge_sweeps')
        .select(['status', 'tx_hash', 'live_key', 'nonce', 'error'])
        .where('charge_id', '=', chargeId)
        .where('kind', '=', 'sweep')
        .execute();
      if (rows.some((r) => r.live_key !== null || (r.status !== 'confirmed' && r.status !== 'failed'))) return null;
      for (const r of rows) {
        const mined = (await chain.rpc('eth_getTransactionReceipt', [r.tx_hash])) !== null;
        if (mined !== (r.status === 'confirmed')) return null;
        if (r.status === 'failed' && !(r.error === 'dropped' && rows.some((o) => o.status === 'confirmed' && o.nonce === r.nonce)))
          return null;
      }
      return rows;
    },
    { timeoutMs: 20_000, message: 'every sweep of the charge final on the new chain' },
  );
}

/** The deposit address's ETH: what the service recorded equals the chain's balance. */
async function expectReconciled(t: TestApp, alice: TestUser, walletId: number): Promise<void> {
  const r = (await t.request('GET', `/api/wallet/${walletId}/reconciliation`, { token: alice.token })).body.data;
  const deposit = r.addresses.find((a: { kind: string }) => a.kind === 'deposit');
  const eth = deposit.tokens.find((x: { token: string }) => x.token === 'ETH');
  expect(eth.difference, JSON.stringify(eth)).toBe(ZERO);
  expect(eth.recorded_change).toBe(eth.chain_balance);
}
