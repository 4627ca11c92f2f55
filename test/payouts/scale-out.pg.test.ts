/**
 * Payouts with two service instances over one PostgreSQL (collected only with DATABASE_URL):
 * both run the payouts worker, both see the same payout at once, and every item is still sent
 * exactly once, in item order (each item is claimed under the wallet's lock in the transaction
 * that records its transfer): 30 items, 30 transactions, the wallet's nonce at 30, every
 * recipient paid its exact amount once.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseEther, type Address } from 'viem';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { startTestApp, type TestApp, type TestUser } from '../helpers/app.js';
import { startTestChain, type TestChain } from '../helpers/chain.js';
import { waitFor } from '../helpers/wait.js';
import { balanceOf } from '../charges/support.js';
import { fundedWallet, publicClient, waitForCursor } from '../helpers/transfers.js';

let chain: TestChain;
let a: TestApp;
let b: TestApp;
let user: TestUser;
let networkId: number;

beforeAll(async () => {
  chain = await startTestChain();
  a = await startTestApp({ workers: true, env: { WATCHER_POLL_MS: '50' } });
  networkId = await chain.register(a);
  await waitForCursor(a, networkId);
  b = await startTestApp({ database: a.database, keepDatabase: true, workers: true, env: { WATCHER_POLL_MS: '50' } });
  user = await a.createUser();
});

afterAll(async () => {
  await b?.close();
  await a?.close();
  await chain?.stop();
});

describe('two instances sending one payout', () => {
  it('send every item exactly once, in item order', async () => {
    const w = await fundedWallet(a, chain, user, networkId, parseEther('5'));
    const to: Address[] = Array.from({ length: 30 }, () => privateKeyToAccount(generatePrivateKey()).address);
    const items = to.map((address, n) => ({ address, amount: `0.0${String(n + 10)}`, reference: `batch-${n}` }));
    const res = await a.request('POST', `/api/wallet/${w.id}/payout/create`, { token: user.token, body: { token: 'ETH', items } });
    expect(res.status, res.text).toBe(200);
    const done = await waitFor(
      async () => {
        const r = await b.request('GET', `/api/wallet/${w.id}/payout/${res.body.data.id}`, { token: user.token });
        return r.body.data?.status === 'completed' ? r.body.data : null;
      },
      { timeoutMs: 60_000, message: 'payout completed' },
    );
    const txs = await a.store.db
      .selectFrom('transactions')
      .select(['id', 'nonce', 'reference'])
      .where('payout_id', '=', res.body.data.id)
      .orderBy('nonce', 'asc')
      .execute();
    expect(txs.map((x) => x.reference)).toEqual(items.map((i) => i.reference));
    expect(new Set(done.items.map((i: any) => i.transaction_id)).size).toBe(30);
    expect(await publicClient(chain.rpcUrl).getTransactionCount({ address: w.address })).toBe(30);
    for (const [n, address] of to.entries()) expect(await balanceOf(chain, address)).toBe(parseEther(items[n]!.amount));
  }, 90_000);
});
