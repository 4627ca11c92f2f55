/**
 * Finality behind an RPC that is not one honest node (a real JSON-RPC proxy in front of anvil
 * answers as another node of a load balancer, a flaky one or a lagging one would):
 * - a broadcast the node took but answered with an error, or never answered: the transfer
 *   ends confirmed with the hash that mined, and its money is spent once;
 * - a head a few blocks low for a while: nothing confirmed goes back to pending, no event twice;
 * - a re-broadcast refused by a node that never saw the transfer: it stays pending and
 *   reserved until its nonce is used; used by another transaction, it fails as `dropped`;
 * - a count of the nonce that runs ahead of its block (no block holds a transaction using it)
 *   decides nothing: the transfer stays pending and confirms;
 * - a transfer refused on its first send (its row failed, its nonce given back) and created again
 *   before any block signs the very same bytes (deterministic signatures): the chain mines one
 *   transaction under the hash of both rows (docs/transactions.md, "Healing": each request keeps
 *   its own row). It is shown once: the refused row stays failed and unmined (the follower
 *   attaches the live twin, never revives the failed one), the retry confirms, the money leaves
 *   once, `transaction.confirmed` is announced once.
 */
import type { Hex } from 'viem';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestApp, TestUser } from '../helpers/app.js';
import { startTestChain, type TestChain } from '../helpers/chain.js';
import { waitFor } from '../helpers/wait.js';
import {
  dec18,
  highMaxFeePerGas,
  waitForCursor,
  ETH,
  eventsOf,
  fundedWallet,
  publicClient,
  RECIPIENT,
  RpcProxy,
  waitForStatus,
  type FundedWallet,
  startProxiedSuite,
} from '../helpers/transfers.js';

let t: TestApp;
let chain: TestChain;
let proxy: RpcProxy;
let networkId: number;
let user: TestUser;

let close: () => Promise<void>;

beforeAll(async () => {
  ({ t, chain, proxy, networkId, user, close } = await startProxiedSuite());
});

afterAll(async () => {
  await close?.();
});

const create = (w: FundedWallet, amount: string) =>
  t.request('POST', `/api/wallet/${w.id}/transaction/create`, { token: user.token, body: { amount, token: 'ETH', address: RECIPIENT } });
const client = () => publicClient(chain.rpcUrl);

async function paidFee(hash: string): Promise<bigint> {
  const r = await client().getTransactionReceipt({ hash: hash as Hex });
  return r.gasUsed * r.effectiveGasPrice;
}

/** Waits until the proxy has answered `n` more calls of `method` (it is what the rule acts on). */
async function afterCalls(method: string, n: number): Promise<void> {
  const start = proxy.calls.filter((m) => m === method).length;
  await waitFor(() => proxy.calls.filter((m) => m === method).length >= start + n, { timeoutMs: 20_000, message: `${n} more ${method}` });
}

describe('a broadcast the node took, answered badly', () => {
  for (const [name, rule] of [
    ['an error', { action: 'forward-error', message: 'internal error', code: -32603, times: 1 }],
    ['a time-out', { action: 'forward-timeout', ms: 5_500, times: 1 }],
  ] as const) {
    it(`answered with ${name}: ends confirmed with the hash that mined, spent once`, async () => {
      const w = await fundedWallet(t, chain, user, networkId, 3n * ETH);
      proxy.rule('eth_sendRawTransaction', { ...rule });
      const res = await create(w, '2');
      expect(res.status).toBe(200);
      expect(res.body.data.failure_reason).toBeNull();
      const done = await waitForStatus(t, user, w.id, res.body.data.id, 'confirmed');
      expect(done.tx_hash).toBe(res.body.data.tx_hash);
      expect(done.failure_reason).toBeNull();
      expect(await client().getTransactionCount({ address: w.address })).toBe(1);
      const left = 3n * ETH - 2n * ETH - (await paidFee(done.tx_hash));
      expect(await client().getBalance({ address: w.address })).toBe(left);
      // The same money cannot leave twice.
      const again = await create(w, '2');
      expect(again.status).toBe(400);
      expect(again.body.message).toBe('Insufficient balance for transaction');
      expect(await client().getBalance({ address: w.address })).toBe(left);
      expect((await eventsOf(t, w.id, 'transaction.confirmed')).map((e) => e.payload.tx_hash)).toEqual([res.body.data.tx_hash]);
    });
  }
});

describe('a lagging head', () => {
  it('a head 3 blocks low for a while un-confirms nothing and announces nothing twice', async () => {
    const w = await fundedWallet(t, chain, user, networkId, 3n * ETH);
    const a = await create(w, '0.5');
    const b = await create(w, '0.5');
    await waitForStatus(t, user, w.id, a.body.data.id, 'confirmed');
    const bDone = await waitForStatus(t, user, w.id, b.body.data.id, 'confirmed');
    // Mined in the last 3 blocks: a rollback to the lower "head" would take it back.
    expect(bDone.block_number).toBeGreaterThan((await chain.blockNumber()) - 3);

    proxy.rule('eth_blockNumber', { action: 'lower', by: 3 });
    const seen = new Set<string>();
    const watchStatuses = setInterval(() => {
      void t.store.db
        .selectFrom('transactions')
        .select(['id', 'status'])
        .where('wallet_id', '=', w.id)
        .where('type', '=', 'transfer')
        .execute()
        .then((rows) => rows.forEach((r) => seen.add(`${r.id}:${r.status}`)));
    }, 20);
    try {
      await afterCalls('eth_blockNumber', 30);
    } finally {
      clearInterval(watchStatuses);
      proxy.allow('eth_blockNumber');
    }
    // A call answered low may still be in flight, and viem shares an in-flight eth_blockNumber
    // with every caller of the same client: a transfer created now could read its balance at
    // the low head (before this wallet was funded). Wait until the watcher has asked again.
    await afterCalls('eth_blockNumber', 3);
    expect([...seen].filter((s) => s.endsWith(':pending'))).toEqual([]);
    expect(t.logs.some((l) => l.includes('reorg: rolled back'))).toBe(false);

    // The watcher goes on normally: a third transfer confirms; every transfer is announced once.
    const c = await create(w, '0.5');
    expect(c.status, c.text).toBe(200);
    await waitForStatus(t, user, w.id, c.body.data.id, 'confirmed');
    const confirmed = (await eventsOf(t, w.id, 'transaction.confirmed')).map((e) => e.payload.transaction_id);
    expect(confirmed).toEqual([a.body.data.id, b.body.data.id, c.body.data.id]);
  });
});

describe('a batch of blocks read partly from another fork', () => {
  it('records only the blocks that link up from the cursor; a transfer seen only on the other fork is never recorded', async () => {
    const w = await fundedWallet(t, chain, user, networkId, 1n * ETH);
    const fork = await startTestChain(); // another chain at the same heights: another fork
    const seen = new Set<string>();
    let phantomHash = '';
    let watch: NodeJS.Timeout | undefined;
    try {
      // Hold the watcher (no head), then: our chain H+1..H+3, the fork up to H+1 and, in its
      // H+2, a transfer to the wallet that our chain never has.
      proxy.drop('eth_blockNumber');
      await afterCalls('eth_blockNumber', 2); // the watcher is held: its cursor no longer moves
      const cursor = await waitForCursor(t, networkId);
      // The fork above the cursor, then a transfer to the wallet that only the fork has.
      const forkHead = await fork.blockNumber();
      if (forkHead <= cursor) await fork.mine(cursor + 1 - forkHead);
      const [dev] = await fork.rpc<string[]>('eth_accounts');
      const phantom = await fork.rpc<string>('eth_sendTransaction', [{ from: dev, to: w.address, value: '0xde0b6b3a7640000' }]);
      phantomHash = phantom;
      const forked = await waitFor(() => fork.rpc<{ blockNumber: string } | null>('eth_getTransactionReceipt', [phantom]), {
        timeoutMs: 10_000,
        message: 'the fork mines it',
      });
      const n = Number(BigInt(forked.blockNumber));
      expect(n).toBeGreaterThan(cursor + 1);
      // Our chain one block past it.
      const target = n + 1;
      const ours = await chain.blockNumber();
      if (ours < target) await chain.mine(target - ours);
      const h = n - 2;
      // The node answers block H+2 (and that transfer's receipt) from the fork, once.
      const at = `0x${(h + 2).toString(16)}`;
      proxy.rule('eth_getBlockByNumber', { action: 'other-node', url: fork.rpcUrl, times: 1, match: (p) => p[0] === at && p[1] === true });
      proxy.rule('eth_getTransactionReceipt', { action: 'other-node', url: fork.rpcUrl, match: (p) => p[0] === phantom });
      watch = setInterval(() => {
        void t.store.db
          .selectFrom('transactions')
          .select('tx_hash')
          .where('wallet_id', '=', w.id)
          .execute()
          .then((rows) => rows.forEach((r) => seen.add(String(r.tx_hash))));
      }, 10);
      proxy.allow('eth_blockNumber');
      const real = await publicClient(chain.rpcUrl).getBlock({ blockNumber: BigInt(target) });
      await waitFor(
        async () => {
          const c = await t.store.db
            .selectFrom('chain_cursors')
            .select(['block_number', 'block_hash'])
            .where('network_id', '=', networkId)
            .executeTakeFirst();
          return c !== undefined && Number(c.block_number) >= target;
        },
        { timeoutMs: 20_000, message: 'cursor past the fork' },
      );
      const blocks = await t.store.db
        .selectFrom('chain_blocks')
        .select('block_hash')
        .where('network_id', '=', networkId)
        .where('block_number', '=', target)
        .execute();
      expect(blocks.map((b) => b.block_hash)).toEqual([real.hash]);
    } finally {
      clearInterval(watch);
      proxy.allow('eth_getBlockByNumber');
      proxy.allow('eth_getTransactionReceipt');
      proxy.allow('eth_blockNumber');
      await fork.stop();
    }
    // The funding receipt is the wallet's only row; the fork's transfer was never recorded or announced.
    expect([...seen].filter((hash) => hash === phantomHash)).toEqual([]);
    expect((await eventsOf(t, w.id)).filter((e) => JSON.stringify(e.payload).includes(phantomHash))).toEqual([]);
  });
});

describe('a re-broadcast refused by a node that never saw the transfer', () => {
  it('stays pending and reserved until its nonce is used; then it confirms', async () => {
    const w = await fundedWallet(t, chain, user, networkId, 3n * ETH);
    await chain.rpc('evm_setAutomine', [false]);
    try {
      const res = await create(w, '2'); // forwarded: it waits in anvil's pool (no mining)
      expect(res.status).toBe(200);
      // From now on the service talks to "another node": it never saw the transfer and refuses it.
      proxy.rule('eth_getTransactionByHash', { action: 'null' });
      proxy.rule('eth_sendRawTransaction', { action: 'error', message: 'insufficient funds for gas * price + value' });
      await afterCalls('eth_sendRawTransaction', 3);
      const shown = await t.request('GET', `/api/wallet/${w.id}/transaction/show/${res.body.data.id}`, { token: user.token });
      expect(shown.body.data).toMatchObject({ status: 'pending', failure_reason: null });
      expect(await eventsOf(t, w.id, 'transaction.failed')).toEqual([]);
      const later = await create(w, '2');
      expect(later.status).toBe(400);
      expect(later.body.message).toBe('Insufficient balance for transaction');
      const row = await t.store.db.selectFrom('wallet_nonces').select('next_nonce').where('wallet_id', '=', w.id).executeTakeFirstOrThrow();
      expect(row.next_nonce).toBe(1);

      // The first node mines it after all.
      proxy.allow('eth_getTransactionByHash');
      proxy.allow('eth_sendRawTransaction');
      await chain.mine(1);
      const done = await waitForStatus(t, user, w.id, res.body.data.id, 'confirmed');
      expect(done.tx_hash).toBe(res.body.data.tx_hash);
      expect(await client().getBalance({ address: w.address })).toBe(3n * ETH - 2n * ETH - (await paidFee(done.tx_hash)));
    } finally {
      proxy.allow('eth_getTransactionByHash');
      proxy.allow('eth_sendRawTransaction');
      await chain.rpc('evm_setAutomine', [true]);
    }
  });

  it('its nonce used by another transaction at confirmed depth: failed as dropped, reservation released', async () => {
    const w = await fundedWallet(t, chain, user, networkId, 3n * ETH);
    await chain.rpc('evm_setAutomine', [false]);
    try {
      const res = await create(w, '2');
      expect(res.status).toBe(200);
      proxy.rule('eth_getTransactionByHash', { action: 'null' });
      proxy.rule('eth_sendRawTransaction', { action: 'error', message: 'insufficient funds for gas * price + value' });
      // Another transaction takes nonce 0 (the wallet's key used elsewhere): ours leaves the pool.
      await chain.rpc('anvil_dropTransaction', [res.body.data.tx_hash]);
      await chain.rpc('anvil_impersonateAccount', [w.address]);
      const other = await chain.rpc<string>('eth_sendTransaction', [
        { from: w.address, to: w.address, value: '0x0', nonce: '0x0', gas: '0x5208' },
      ]);
      await chain.rpc('anvil_stopImpersonatingAccount', [w.address]);
      await chain.mine(1);

      const failed = await waitForStatus(t, user, w.id, res.body.data.id, 'failed');
      expect(failed).toMatchObject({ failure_reason: 'dropped', block_number: null, tx_hash: res.body.data.tx_hash });
      const events = await eventsOf(t, w.id, 'transaction.failed');
      expect(events.map((e) => e.payload)).toEqual([
        expect.objectContaining({ transaction_id: res.body.data.id, failure_reason: 'dropped' }),
      ]);
      // Its reservation is released: the 2 ETH can be sent now (nonce 1, the next free one).
      proxy.allow('eth_getTransactionByHash');
      proxy.allow('eth_sendRawTransaction');
      await chain.rpc('evm_setAutomine', [true]);
      const balance = await client().getBalance({ address: w.address });
      expect(balance).toBe(3n * ETH - (await paidFee(other)));
      const next = await create(w, '2');
      expect(next.status).toBe(200);
      expect(next.body.data.nonce).toBe(1);
      await waitForStatus(t, user, w.id, next.body.data.id, 'confirmed');
    } finally {
      proxy.allow('eth_getTransactionByHash');
      proxy.allow('eth_sendRawTransaction');
      await chain.rpc('evm_setAutomine', [true]);
    }
  });
});

describe('a nonce count that runs ahead of its block', () => {
  it('decides nothing: the transfer stays pending, then confirms under its hash, never failed', async () => {
    const w = await fundedWallet(t, chain, user, networkId, 3n * ETH);
    await chain.rpc('evm_setAutomine', [false]);
    try {
      const res = await create(w, '2');
      expect(res.status).toBe(200);
      // A node under load answers a count at its head from the block it is mining: the wallet's
      // nonce 0 looks used at every height, while no block holds a transaction using it.
      const wallet = w.address.toLowerCase();
      proxy.rule('eth_getTransactionCount', {
        action: 'result',
        result: '0x1',
        match: (p) => String(p[0]).toLowerCase() === wallet && /^0x[0-9a-f]+$/i.test(String(p[1])),
      });
      // Each round reads the count at several heights (from the confirmed one down to the genesis).
      const lies = () => proxy.seen.filter((x) => x.method === 'eth_getTransactionCount' && x.action === 'result').length;
      const during = await waitFor(
        async () => {
          const now = (await t.request('GET', `/api/wallet/${w.id}/transaction/show/${res.body.data.id}`, { token: user.token })).body.data;
          return lies() >= 12 || now.status !== 'pending' ? now : null;
        },
        { timeoutMs: 20_000, message: 'rounds read the count that runs ahead' },
      );
      expect(during).toMatchObject({ status: 'pending', failure_reason: null, tx_hash: res.body.data.tx_hash });
      expect(t.logs.some((l) => l.includes('shows no transaction using it; deciding nothing this round'))).toBe(true);

      proxy.allow('eth_getTransactionCount');
      await chain.mine(1);
      const done = await waitForStatus(t, user, w.id, res.body.data.id, 'confirmed');
      expect(done.tx_hash).toBe(res.body.data.tx_hash);
      expect(await eventsOf(t, w.id, 'transaction.failed')).toEqual([]);
    } finally {
      proxy.allow('eth_getTransactionCount');
      await chain.rpc('evm_setAutomine', [true]);
    }
  });
});

describe('a refused transfer retried to the same bytes', () => {
  it('is shown once: the refused row failed, the retry confirmed, the money spent once', async () => {
    const w = await fundedWallet(t, chain, user, networkId, 3n * ETH);
    proxy.rule('eth_sendRawTransaction', { action: 'error', message: 'insufficient funds for gas * price + value', times: 1 });
    // Explicit fees: the same bytes however the fee market moves between the two (a quote is shared
    // for a second only); twice the high level, within the fee cap.
    const perGas = 2n * (await highMaxFeePerGas(t, user, w.id));
    const fees = { max_fee_per_gas: dec18(perGas), max_priority_fee_per_gas: dec18(perGas / 2n) };
    const sameBytes = () =>
      t.request('POST', `/api/wallet/${w.id}/transaction/create`, {
        token: user.token,
        body: { amount: '1', token: 'ETH', address: RECIPIENT, ...fees },
      });
    const refused = await sameBytes();
    expect(refused.status).toBe(400);
    const retry = await sameBytes();
    expect(retry.status).toBe(200);
    const done = await waitForStatus(t, user, w.id, retry.body.data.id, 'confirmed');
    const receipt = await client().getTransactionReceipt({ hash: done.tx_hash as Hex });
    await waitForCursor(t, networkId, Number(receipt.blockNumber));
    const rows = await t.store.db
      .selectFrom('transactions')
      .select(['id', 'status', 'tx_hash', 'block_number'])
      .where('wallet_id', '=', w.id)
      .where('type', '=', 'transfer')
      .orderBy('id')
      .execute();
    const mined = rows.filter((r) => r.block_number !== null);
    expect(mined.map((r) => r.id)).toEqual([retry.body.data.id]);
    expect(rows.filter((r) => r.status === 'confirmed').map((r) => r.id)).toEqual([retry.body.data.id]);
    // The refused row: failed, under the very hash that mined (the case this test is about).
    expect(rows.filter((r) => r.id !== retry.body.data.id).map((r) => [r.status, r.tx_hash])).toEqual([['failed', done.tx_hash]]);
    expect((await eventsOf(t, w.id, 'transaction.confirmed')).map((e) => e.payload.transaction_id)).toEqual([retry.body.data.id]);
    expect(await client().getBalance({ address: w.address })).toBe(3n * ETH - ETH - receipt.gasUsed * receipt.effectiveGasPrice);
  });
});
