/**
 * A transfer whose first send a node refused (its row failed, its nonce given back), created
 * again with the same amount, recipient and fees before any block: the retry signs the very same
 * bytes (same nonce; signatures are deterministic), so the chain mines one transaction under the
 * hash of both rows (docs/transactions.md, "Healing": each request keeps its own row). The wallet
 * must show that transfer once: the refused row stays failed and unmined (the follower attaches
 * the live twin, never revives the failed one), the retry confirms, the money leaves once, and
 * `transaction.confirmed` is announced once, for the retry.
 */
import type { Hex } from 'viem';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestApp, TestUser } from '../helpers/app.js';
import type { TestChain } from '../helpers/chain.js';
import { ETH, eventsOf, fundedWallet, publicClient, RECIPIENT, RpcProxy, startProxiedSuite, waitForCursor, waitForStatus } from './support.js';

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

describe('a refused transfer retried to the same bytes', () => {
  it('is shown once: the refused row failed, the retry confirmed, the money spent once', async () => {
    const w = await fundedWallet(t, chain, user, networkId, 3n * ETH);
    const body = { amount: '1', token: 'ETH', address: RECIPIENT };
    proxy.rule('eth_sendRawTransaction', { action: 'error', message: 'insufficient funds for gas * price + value', times: 1 });
    const refused = await t.request('POST', `/api/wallet/${w.id}/transaction/create`, { token: user.token, body });
    expect(refused.status).toBe(400);
    const retry = await t.request('POST', `/api/wallet/${w.id}/transaction/create`, { token: user.token, body });
    expect(retry.status).toBe(200);
    const done = await waitForStatus(t, user, w.id, retry.body.data.id, 'confirmed');
    const client = publicClient(chain.rpcUrl);
    const receipt = await client.getTransactionReceipt({ hash: done.tx_hash as Hex });
    await waitForCursor(t, networkId, Number(receipt.blockNumber));
    const rows = await t.store.db.selectFrom('transactions').select(['id', 'status', 'tx_hash', 'block_number']).where('wallet_id', '=', w.id).where('type', '=', 'transfer').orderBy('id').execute();
    const mined = rows.filter((r) => r.block_number !== null);
    expect(mined.map((r) => r.id)).toEqual([retry.body.data.id]);
    expect(rows.filter((r) => r.status === 'confirmed').map((r) => r.id)).toEqual([retry.body.data.id]);
    // The refused row: failed, under the very hash that mined (the case this test is about).
    expect(rows.filter((r) => r.id !== retry.body.data.id).map((r) => [r.status, r.tx_hash])).toEqual([['failed', done.tx_hash]]);
    expect((await eventsOf(t, w.id, 'transaction.confirmed')).map((e) => e.payload.transaction_id)).toEqual([retry.body.data.id]);
    expect(await client.getBalance({ address: w.address })).toBe(3n * ETH - ETH - receipt.gasUsed * receipt.effectiveGasPrice);
  });
});
