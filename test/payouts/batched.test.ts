/**
 * Batched payouts (docs/money-out.md, "Batched payouts"): on a network with a Sweeper, a payout's
 * ERC-20 items go out PAYOUT_BATCH_MAX at a time in one `pay` call of the main address. Against a
 * real anvil with the Sweeper deployed as at the devnet's start:
 *
 * - five items, PAYOUT_BATCH_MAX 3, one recipient blacklisted by the token: one approval of the
 *   Sweeper, then two batches (3 + 2 items) and nothing else from the main address; each item its
 *   own `transfer` row with `batch_index` and the batch's `tx_hash`; the refused item fails alone
 *   (`refused`), the others are paid to the base unit; every item has its events; the wallet's
 *   books agree with the chain (each batch's fee once, the paid items' tokens out);
 * - a second payout of the token sends no second approval;
 * - the daily limit counts each item once (the batch and the unlimited approval count nothing):
 *   after a batched payout of 6 under a daily limit of 20, a transfer of 10 passes, one of 5 more
 *   does not;
 * - a reorg that removes a batch's block: its items go back to pending (`transaction.reorged`)
 *   and are confirmed again with it, each paid once;
 * - a batch whose first send was taken as refused (its items failed with it) that the chain then
 *   mines: the items come back with it and are confirmed, each paid once.
 */
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { getAddress, parseEther, type Address } from 'viem';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { ManualClock, startTestApp, type TestApp, type TestUser } from '../helpers/app.js';
import { startTestChain, type TestChain } from '../helpers/chain.js';
import { eventsOf, waitForCursor } from '../helpers/transfers.js';
import { pay } from '../charges/support.js';
import { waitFor } from '../helpers/wait.js';
import { erc20BalanceOf } from '../helpers/erc20.js';
import { findNetwork } from '../../src/modules/networks/networks.repository.js';
import { ensureDevnetSweeper } from '../../src/modules/networks/sweeper-deploy.js';
import { sweeperAddress } from '../../src/chain/sweeper.js';
import { deployPausable, pausableToken } from '../charges/pausable-token.js';

const clock = new ManualClock();
let chain: TestChain;
let t: TestApp;
let user: TestUser;
let networkId: number;
const ZERO = '0.000000000000000000';

beforeAll(async () => {
  chain = await startTestChain();
  t = await startTestApp({ clock, env: { WATCHER_POLL_MS: '50', PAYOUT_BATCH_MAX: '3' } });
  networkId = await chain.register(t);
  await ensureDevnetSweeper(t.store.db, (await findNetwork(t.store.db, networkId))!, pino({ level: 'silent' }), Date.now());
  expect((await findNetwork(t.store.db, networkId))!.sweeper).toBe(sweeperAddress());
  user = await t.createUser();
  t.startWorkers();
  await waitForCursor(t, networkId);
});

afterAll(async () => {
  await t?.close();
  await chain?.stop();
});

const fresh = (): Address => privateKeyToAccount(generatePrivateKey()).address;
const nonceOf = async (address: string) => Number(BigInt(await chain.rpc<string>('eth_getTransactionCount', [address, 'latest'])));
const show = async (walletId: number, id: number) =>
  (await t.request('GET', `/api/wallet/${walletId}/payout/${id}`, { token: user.token })).body.data;
const until = (walletId: number, id: number, status: string) =>
  waitFor(
    async () => {
      const p = await show(walletId, id);
      return p?.status === status ? p : null;
    },
    { timeoutMs: 40_000, message: `payout ${id} ${status}` },
  );
const transactions = async (walletId: number) =>
  (await t.request('GET', `/api/wallet/${walletId}/transaction?limit=100`, { token: user.token })).body.data as any[];

/** A wallet with ETH for fees and 100 units of a new pausable token (received from outside: its books start exact). */
async function tokenWallet(symbol: string) {
  const wallet = (await t.request('POST', '/api/wallet/create', { token: user.token, body: { name: symbol, network_id: networkId } })).body
    .data as { id: number; address: Address };
  await pay(chain.rpcUrl, wallet.address, parseEther('10'));
  const usd = await deployPausable(chain.rpcUrl, { name: `${symbol} token`, symbol, decimals: 6 });
  const added = await t.request('POST', `/api/wallet/${wallet.id}/token/add`, { token: user.token, body: { contract: usd } });
  expect(added.status, added.text).toBe(200);
  const token = pausableToken(chain.rpcUrl, usd);
  await token.mint(wallet.address, 100_000_000n);
  await chain.mine(1);
  await waitForCursor(t, networkId, await chain.blockNumber());
  return { wallet, usd, token };
}

describe('batched payouts', () => {
  it('five items in two batches after one approval; a refused item fails alone; exact amounts; the books agree', async () => {
    const { wallet, usd, token } = await tokenWallet('BUSD');
    const to = [fresh(), fresh(), fresh(), fresh(), fresh()];
    await token.blacklist(to[1]!, true);
    const res = await t.request('POST', `/api/wallet/${wallet.id}/payout/create`, {
      token: user.token,
      body: { token: 'BUSD', items: to.map((address, i) => ({ address, amount: String(i + 1), reference: `b-${i}` })) },
    });
    expect(res.status, res.text).toBe(200);
    const payout = await until(wallet.id, res.body.data.id, 'partially_failed');

    // The chain: every paid recipient its amount to the base unit, the refused one nothing.
    expect(await Promise.all(to.map((a) => erc20BalanceOf(chain.rpcUrl, usd, a)))).toEqual([
      1_000_000n,
      0n,
      3_000_000n,
      4_000_000n,
      5_000_000n,
    ]);
    expect(await erc20BalanceOf(chain.rpcUrl, usd, wallet.address)).toBe(87_000_000n);
    // The main address sent three transactions: the approval and two batches.
    expect(await nonceOf(wallet.address)).toBe(3);

    const items = payout.items as any[];
    expect(items.map((i) => [i.reference, i.status, i.failure_reason])).toEqual([
      ['b-0', 'confirmed', null],
      ['b-1', 'failed', 'refused'],
      ['b-2', 'confirmed', null],
      ['b-3', 'confirmed', null],
      ['b-4', 'confirmed', null],
    ]);
    const [h1, h2] = [items[0].tx_hash, items[3].tx_hash];
    expect(items.map((i) => i.tx_hash)).toEqual([h1, h1, h1, h2, h2]);
    expect(h1).not.toBe(h2);
    for (const h of [h1, h2]) {
      const sent = await chain.rpc<{ from: string; to: string }>('eth_getTransactionByHash', [h]);
      expect([getAddress(sent.from), getAddress(sent.to)]).toEqual([wallet.address, sweeperAddress()]);
    }

    // Each item its own row: transfer, batch_index, payout_id, reference, the batch's hash, no fee of its own.
    const list = await transactions(wallet.id);
    const rows = items.map((i) => list.find((x) => x.id === i.transaction_id));
    expect(rows.map((r) => [r.type, r.batch_index, r.payout_id, r.reference, r.tx_hash, r.status, r.amount, r.nonce])).toEqual([
      ['transfer', 0, payout.id, 'b-0', h1, 'confirmed', '1.000000000000000000', null],
      ['transfer', 1, payout.id, 'b-1', h1, 'failed', '2.000000000000000000', null],
      ['transfer', 2, payout.id, 'b-2', h1, 'confirmed', '3.000000000000000000', null],
      ['transfer', 0, payout.id, 'b-3', h2, 'confirmed', '4.000000000000000000', null],
      ['transfer', 1, payout.id, 'b-4', h2, 'confirmed', '5.000000000000000000', null],
    ]);
    // The batches and the approval: the wallet's contract transactions, each with its nonce.
    const calls = list.filter((x) => x.type === 'contract');
    expect(calls.map((x) => [x.nonce, x.status, x.payout_id, x.amount]).sort()).toEqual([
      [0, 'confirmed', null, ZERO],
      [1, 'confirmed', payout.id, ZERO],
      [2, 'confirmed', payout.id, ZERO],
    ]);
    // Every item told of: created, then confirmed or failed (refused).
    const events = await eventsOf(t, wallet.id);
    for (const [k, i] of items.entries()) {
      const own = events.filter((e) => e.payload.transaction_id === i.transaction_id).map((e) => e.name);
      expect(own).toEqual(['transaction.created', k === 1 ? 'transaction.failed' : 'transaction.confirmed']);
    }

    // The books: each batch's fee and the approval's once, the paid items' tokens out.
    await chain.mine(1);
    await waitForCursor(t, networkId, await chain.blockNumber());
    const rec = await waitFor(
      async () => {
        const r = await t.request('GET', `/api/wallet/${wallet.id}/reconciliation`, { token: user.token });
        return r.status === 200 ? r.body.data : null;
      },
      { message: 'reconciliation answered' },
    );
    const main = rec.addresses.find((a: any) => a.address === wallet.address);
    expect(main.tokens.map((x: any) => [x.token, x.difference])).toEqual([
      ['ETH', ZERO],
      ['BUSD', ZERO],
    ]);

    // A second payout of the token: no second approval, one batch.
    const again = await t.request('POST', `/api/wallet/${wallet.id}/payout/create`, {
      token: user.token,
      body: {
        token: 'BUSD',
        items: [
          { address: fresh(), amount: '1' },
          { address: fresh(), amount: '2' },
        ],
      },
    });
    expect(again.status, again.text).toBe(200);
    const second = await until(wallet.id, again.body.data.id, 'completed');
    expect(new Set(second.items.map((i: any) => i.tx_hash)).size).toBe(1);
    expect(await nonceOf(wallet.address)).toBe(4);
  });

  it('a batch removed by a reorg: its items pending again, then confirmed with it; each paid once', async () => {
    const { wallet, usd } = await tokenWallet('RBUSD');
    const to = [fresh(), fresh()];
    const res = await t.request('POST', `/api/wallet/${wallet.id}/payout/create`, {
      token: user.token,
      body: { token: 'RBUSD', items: to.map((address, i) => ({ address, amount: String(i + 1) })) },
    });
    expect(res.status, res.text).toBe(200);
    const first = await until(wallet.id, res.body.data.id, 'completed');
    const hash = first.items[0].tx_hash as string;
    const mined = await chain.rpc<{ blockNumber: string }>('eth_getTransactionReceipt', [hash]);

    const head = await chain.blockNumber();
    await waitForCursor(t, networkId, head);
    const seen = t.logs.filter((l) => l.includes('reorg: rolled back to the common ancestor')).length;
    await chain.rpc('anvil_reorg', [head - Number(BigInt(mined.blockNumber)) + 1, []]);
    expect(await erc20BalanceOf(chain.rpcUrl, usd, to[0]!)).toBe(0n);
    await chain.mine(1);
    await waitFor(() => t.logs.filter((l) => l.includes('reorg: rolled back to the common ancestor')).length > seen, {
      timeoutMs: 15_000,
      message: 'the watcher saw the reorg',
    });

    // Sent again as signed (the node no longer knows it) and confirmed anew; the test's clock moves the re-checks on.
    await waitFor(
      async () => {
        clock.advance(5_000);
        const p = await show(wallet.id, res.body.data.id);
        if (p.status !== 'completed') return null;
        const r = await chain.rpc<{ blockHash: string; blockNumber: string } | null>('eth_getTransactionReceipt', [hash]);
        return r ? p : null;
      },
      { timeoutMs: 40_000, intervalMs: 100, message: 'the batch confirmed in the new chain' },
    );
    expect(await Promise.all(to.map((a) => erc20BalanceOf(chain.rpcUrl, usd, a)))).toEqual([1_000_000n, 2_000_000n]);
    const events = await eventsOf(t, wallet.id);
    for (const i of first.items) {
      const own = events.filter((e) => e.payload.transaction_id === i.transaction_id).map((e) => e.name);
      expect(own).toEqual(['transaction.created', 'transaction.confirmed', 'transaction.reorged', 'transaction.confirmed']);
    }
  });

  it('the daily limit counts each batched item once, and the Sweeper’s approval not at all', async () => {
    const { wallet } = await tokenWallet('DBUSD');
    const set = await t.request('POST', `/api/wallet/${wallet.id}/policy`, { token: user.token, body: { daily: { DBUSD: '20' } } });
    expect(set.status, set.text).toBe(200);
    const res = await t.request('POST', `/api/wallet/${wallet.id}/payout/create`, {
      token: user.token,
      body: { token: 'DBUSD', items: [fresh(), fresh(), fresh()].map((address) => ({ address, amount: '2' })) },
    });
    expect(res.status, res.text).toBe(200);
    const payout = await until(wallet.id, res.body.data.id, 'completed');
    expect(new Set(payout.items.map((i: any) => i.tx_hash)).size).toBe(1);
    const send = (amount: string) =>
      t.request('POST', `/api/wallet/${wallet.id}/transaction/create`, {
        token: user.token,
        body: { token: 'DBUSD', amount, address: fresh() },
      });
    const ten = await send('10');
    expect(ten.status, ten.text).toBe(200);
    const five = await send('5');
    expect([five.status, five.body.message]).toEqual([400, 'Policy: over the daily limit']);
  });

  it('items failed with a batch taken as refused come back when the chain mines it: confirmed, each paid once', async () => {
    const { wallet, usd } = await tokenWallet('FBUSD');
    // The approval first (and a batch of one), so the timed batch is the only one in flight.
    const warm = await t.request('POST', `/api/wallet/${wallet.id}/payout/create`, {
      token: user.token,
      body: { token: 'FBUSD', items: [{ address: fresh(), amount: '1' }] },
    });
    await until(wallet.id, warm.body.data.id, 'completed');
    const to = [fresh(), fresh()];
    await chain.rpc('evm_setAutomine', [false]);
    try {
      const res = await t.request('POST', `/api/wallet/${wallet.id}/payout/create`, {
        token: user.token,
        body: { token: 'FBUSD', items: to.map((address, i) => ({ address, amount: String(i + 2) })) },
      });
      expect(res.status, res.text).toBe(200);
      const sent = await waitFor(
        async () => {
          const p = await show(wallet.id, res.body.data.id);
          return p.items.every((i: any) => i.tx_hash !== null) ? p : null;
        },
        { message: 'the batch sent' },
      );
      const hash = sent.items[0].tx_hash as string;
      const batch = await t.store.db
        .selectFrom('transactions')
        .select('id')
        .where('wallet_id', '=', wallet.id)
        .where('type', '=', 'contract')
        .where('tx_hash', '=', hash)
        .executeTakeFirstOrThrow();
      // The fault: its first send taken as refused everywhere (failed unmined), while the node has it.
      await t.store.db
        .updateTable('transactions')
        .set({ status: 'failed', failure_reason: 'rejected', error: 'injected: first send refused', failed_at: Date.now() })
        .where('id', '=', batch.id)
        .execute();
      const failed = await until(wallet.id, res.body.data.id, 'failed');
      expect(failed.items.map((i: any) => [i.status, i.failure_reason])).toEqual([
        ['failed', 'rejected'],
        ['failed', 'rejected'],
      ]);
      // The chain mines it after all: the batch and its items come back, and are confirmed.
      await chain.rpc('evm_setAutomine', [true]);
      await chain.mine(1);
      const done = await until(wallet.id, res.body.data.id, 'completed');
      expect(done.items.map((i: any) => [i.status, i.tx_hash])).toEqual([
        ['confirmed', hash],
        ['confirmed', hash],
      ]);
      expect(await Promise.all(to.map((a) => erc20BalanceOf(chain.rpcUrl, usd, a)))).toEqual([2_000_000n, 3_000_000n]);
      const events = await eventsOf(t, wallet.id);
      for (const i of done.items) {
        const own = events.filter((e) => e.payload.transaction_id === i.transaction_id).map((e) => e.name);
        expect(own).toEqual(['transaction.created', 'transaction.failed', 'transaction.confirmed']);
      }
    } finally {
      await chain.rpc('evm_setAutomine', [true]);
    }
  });
});
