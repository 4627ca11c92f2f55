/**
 * The node goes away for real (a proxy in front of anvil closes its port) and comes back:
 * create answers 503 meanwhile, the watcher retries without moving its cursor, and after
 * recovery it records every block mined during the outage (no gap in its stored hashes) and
 * every transfer to the wallet exactly once. A broadcast cut mid-request leaves the
 * transaction pending; the watcher's periodic check sends it again without a restart.
 */
import { toHex } from 'viem';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestApp, TestUser } from '../helpers/app.js';
import type { TestChain } from '../helpers/chain.js';
import { waitFor } from '../helpers/wait.js';
import { deployErc20 } from '../helpers/erc20.js';
import {
  ETH,
  fundedWallet,
  publicClient,
  RECIPIENT,
  RpcProxy,
  sendFromOutsider,
  txRows,
  waitForCursor,
  waitForStatus,
  type FundedWallet,
  startProxiedSuite,
} from '../helpers/transfers.js';

let t: TestApp;
let chain: TestChain;
let proxy: RpcProxy;
let networkId: number;
let user: TestUser;
let w: FundedWallet;

let close: () => Promise<void>;

beforeAll(async () => {
  ({ t, chain, proxy, networkId, user, close } = await startProxiedSuite());
  w = await fundedWallet(t, chain, user, networkId, 10n * ETH);
});

afterAll(async () => {
  await close?.();
});

const create = (body: unknown) => t.request('POST', `/api/wallet/${w.id}/transaction/create`, { token: user.token, body });

describe('RPC outage', () => {
  it('answers 503 while the node is down, then catches up on every block without a gap', async () => {
    const before = await waitForCursor(t, networkId, await chain.blockNumber());
    await proxy.down();
    const res = await create({ amount: '1', token: 'ETH', address: RECIPIENT });
    expect(res.status).toBe(503);
    expect(res.body).toEqual({ status: 'error', message: 'The blockchain node is unavailable', data: null });
    await waitFor(() => t.logs.some((l) => l.includes('watcher tick failed')), { message: 'the watcher notices the outage' });

    // The chain moves on without us: three transfers to the wallet and some empty blocks.
    const hashes: string[] = [];
    for (const i of [1n, 2n, 3n]) hashes.push(await sendFromOutsider(chain.rpcUrl, w.address, i * (ETH / 10n)));
    await chain.mine(5);
    const head = await chain.blockNumber();
    expect(await waitForCursor(t, networkId)).toBe(before); // no progress while down

    await proxy.up();
    await waitForCursor(t, networkId, head);
    const rows = await waitFor(async () => {
      const r = await txRows(t, w.id);
      return hashes.every((h) => r.some((x) => x.tx_hash === h)) ? r : null;
    });
    for (const h of hashes) expect(rows.filter((r) => r.tx_hash === h)).toHaveLength(1);
    expect(rows.map((r) => r.amount).sort()).toEqual(['100000000000000000', '200000000000000000', '300000000000000000']);

    // Every block from before the outage to the head was processed, with the chain's own hash.
    const stored = await t.store.db
      .selectFrom('chain_blocks')
      .select(['block_number', 'block_hash'])
      .where('network_id', '=', networkId)
      .where('block_number', '>', before)
      .where('block_number', '<=', head)
      .orderBy('block_number', 'asc')
      .execute();
    expect(stored.map((b) => Number(b.block_number))).toEqual(Array.from({ length: head - before }, (_, i) => before + 1 + i));
    const client = publicClient(chain.rpcUrl);
    for (const b of stored) expect(b.block_hash).toBe((await client.getBlock({ blockNumber: BigInt(b.block_number) })).hash);
    // The recovery is logged at the end of the tick that caught up.
    await waitFor(async () => t.logs.some((l) => l.includes('watcher recovered')), { message: 'watcher recovered logged' });

    const ok = await create({ amount: '1', token: 'ETH', address: RECIPIENT });
    expect(ok.status).toBe(200);
    await waitForStatus(t, user, w.id, ok.body.data.id, 'confirmed');
  });

  it('a broadcast cut mid-request leaves the transaction pending; the watcher sends it again', async () => {
    proxy.drop('eth_sendRawTransaction');
    const res = await create({ amount: '0.5', token: 'ETH', address: RECIPIENT });
    expect(res.status).toBe(200);
    expect(res.body.data.status).toBe('pending');
    expect(await chain.rpc('eth_getTransactionByHash', [res.body.data.tx_hash])).toBeNull();
    proxy.allow('eth_sendRawTransaction');
    const done = await waitForStatus(t, user, w.id, res.body.data.id, 'confirmed');
    expect(done.tx_hash).toBe(res.body.data.tx_hash);
    expect(await publicClient(chain.rpcUrl).getTransactionCount({ address: w.address })).toBe(2);
  });

  it('a node that no longer has the head it just gave (a reorg lowering its height; a backend behind): the create reads again, and answers 503 if that fails too, never 400', async () => {
    const pinned = (p: unknown[]) => typeof p[1] === 'string' && /^0x/.test(p[1]);
    const outOfRange = (times?: number) =>
      proxy.rule('eth_getTransactionCount', {
        action: 'error',
        code: -32602,
        message: 'BlockOutOfRangeError: block height is 1 but requested was 2',
        match: pinned,
        times,
      });
    outOfRange(1);
    const once = await create({ amount: '0.01', token: 'ETH', address: RECIPIENT });
    expect(once.status, JSON.stringify(once.body)).toBe(200);
    outOfRange();
    const always = await create({ amount: '0.01', token: 'ETH', address: RECIPIENT });
    proxy.allow('eth_getTransactionCount');
    expect(always.status, JSON.stringify(always.body)).toBe(503);
    expect(always.body).toEqual({ status: 'error', message: 'The blockchain node is unavailable', data: null });
    await waitForStatus(t, user, w.id, once.body.data.id, 'confirmed');
  });

  /**
   * A reorg lowering the node's height by one, met by a read pinned to the head it gave just
   * before: that read is refused as out of range, and the head reads one lower from then on
   * (rules of the proxy, lifted by the returned function).
   */
  async function headFallsOn(method: string): Promise<() => void> {
    const h = await chain.blockNumber();
    proxy.rule('eth_blockNumber', { action: 'result', result: toHex(h) });
    const atH = (p: unknown[]) => {
      if (p[1] !== toHex(h)) return false;
      proxy.rule('eth_blockNumber', { action: 'result', result: toHex(h - 1) });
      return true;
    };
    proxy.rule(method, {
      action: 'error',
      code: -32602,
      message: `BlockOutOfRangeError: block height is ${h - 1} but requested was ${h}`,
      match: atH,
    });
    return () => {
      proxy.allow(method);
      proxy.allow('eth_blockNumber');
    };
  }

  /**
   * `request` made twice: with every read of `method` at a block refused as out of range (503, the
   * usual envelope), then with the node's head falling by one as it is read (the answer returned).
   */
  async function refusedThenReadAgain(method: string, request: () => Promise<{ status: number; body: any }>) {
    const pinned = (p: unknown[]) => typeof p[1] === 'string' && /^0x/.test(p[1]);
    proxy.rule(method, {
      action: 'error',
      code: -32602,
      message: 'BlockOutOfRangeError: block height is 1 but requested was 2',
      match: pinned,
    });
    const refused = await request();
    proxy.allow(method);
    expect(refused.status, JSON.stringify(refused.body)).toBe(503);
    expect(refused.body).toEqual({ status: 'error', message: 'The blockchain node is unavailable', data: null });
    const lift = await headFallsOn(method);
    const answer = await request();
    lift();
    expect(answer.status, JSON.stringify(answer.body)).toBe(200);
    return answer;
  }

  it('a speed-up, a balance read and a token add whose head the node no longer has read again at the new head, and answer 503 if that fails too', async () => {
    // A speed-up reads the wallet's mined nonce and balance at one head.
    await chain.rpc('evm_setAutomine', [false]);
    try {
      const sent = await create({ amount: '0.02', token: 'ETH', address: RECIPIENT });
      expect(sent.status, JSON.stringify(sent.body)).toBe(200);
      const fast = await refusedThenReadAgain('eth_getTransactionCount', () =>
        t.request('POST', `/api/wallet/${w.id}/transaction/${sent.body.data.id}/speed-up`, { token: user.token, body: {} }),
      );
      expect(fast.body.message).toBe('Transaction sped up');
      expect(fast.body.data.replaced_hashes).toEqual([sent.body.data.tx_hash]);
      await chain.mine(1);
      const done = await waitForStatus(t, user, w.id, sent.body.data.id, 'confirmed');
      expect(done.tx_hash).toBe(fast.body.data.tx_hash);
    } finally {
      await chain.rpc('evm_setAutomine', [true]);
    }

    // A balance with nothing cached reads every token at one head.
    const fresh = await fundedWallet(t, chain, user, networkId, 3n * ETH);
    const gold = await deployErc20(chain.rpcUrl, { name: 'Gold Token', symbol: 'GLD', decimals: 18 });
    await chain.mine(1); // the contract below the head the node falls back to
    const read = await refusedThenReadAgain('eth_getBalance', () =>
      t.request('GET', `/api/wallet/${fresh.id}/balance`, { token: user.token }),
    );
    expect(read.body.data.balance).toBe('3.000000000000000000');

    // A token add reads the wallet's balance of it at one head (its checkpoint).
    const added = await refusedThenReadAgain('eth_call', () =>
      t.request('POST', `/api/wallet/${fresh.id}/token/add`, { token: user.token, body: { contract: gold } }),
    );
    expect(added.body.data.symbol).toBe('GLD');
  });
});
