/**
 * Two balance refreshes of one wallet race (issue 18): the first reads the head, then its
 * eth_getBalance is held by a JSON-RPC proxy while a transfer to the wallet mines a block and a
 * second refresh reads and stores the newer balance. The held reading (of the older block)
 * arrives last: it is not stored and emits nothing; balance.updated carries `block_number`, the
 * block `new_balance` was read at, and never goes down for the wallet's token.
 */
import type { Address } from 'viem';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp, type TestUser } from '../helpers/app.js';
import { startTestChain, type TestChain } from '../helpers/chain.js';
import { deployErc20 } from '../helpers/erc20.js';
import { waitFor } from '../helpers/wait.js';
import { upsertNetwork } from '../../src/modules/networks/networks.repository.js';
import { ETH, RpcProxy, sendFromOutsider } from '../helpers/transfers.js';
import { createWallet, DATETIME, eventsOf } from './support.js';

let t: TestApp;
let chain: TestChain;
let proxy: RpcProxy;
let networkId: number;
let alice: TestUser;
let gold: Address;

beforeAll(async () => {
  // BALANCE_MAX_AGE_S=0: every balance request re-reads the chain. No workers: only the two
  // requests below refresh the balance.
  t = await startTestApp({ env: { BALANCE_MAX_AGE_S: '0' } });
  chain = await startTestChain();
  proxy = await RpcProxy.start(chain.rpcUrl);
  const n = await upsertNetwork(
    t.store.db,
    {
      name: 'Proxied devnet',
      rpc_url: proxy.url,
      chain_id: 31337,
      currency_symbol: 'ETH',
      block_explorer: '',
      is_mainnet: false,
      confirmations: 1,
    },
    Date.now(),
  );
  networkId = n.id;
  alice = await t.createUser();
  gold = await deployErc20(chain.rpcUrl, { name: 'Gold Token', symbol: 'GLD', decimals: 18 });
});

afterAll(async () => {
  await t?.close();
  await proxy?.down();
  await chain?.stop();
});

async function cacheRow(walletId: number, tokenId: number) {
  const row = await t.store.db
    .selectFrom('wallet_balances')
    .select(['amount', 'block_number'])
    .where('wallet_id', '=', walletId)
    .where('token_id', '=', tokenId)
    .executeTakeFirstOrThrow();
  return { amount: BigInt(row.amount), block_number: row.block_number === null ? null : Number(row.block_number) };
}

describe('two balance refreshes racing', () => {
  it('the older reading, stored last, is neither stored nor announced', async () => {
    const w = await createWallet(t, alice, networkId);
    const nativeId = w.wallet_tokens[0]!.id;
    // A second active token: the balance route then reads {ETH, GLD}, the token route {ETH},
    // two different reads (concurrent requests for the same set would share one).
    const added = await t.request('POST', `/api/wallet/${w.id}/token/add`, { token: alice.token, body: { contract: gold } });
    expect(added.status, added.text).toBe(200);
    await chain.setBalance(w.address, 1n * ETH);
    const first = await t.request('GET', `/api/wallet/${w.id}/balance`, { token: alice.token });
    expect(first.body.data.balance).toBe('1.000000000000000000');
    const n = await chain.blockNumber();
    expect(await cacheRow(w.id, nativeId)).toEqual({ amount: 1n * ETH, block_number: n });

    // The balance route's native read is held 1.5 s (the head it read is block n).
    proxy.calls = [];
    proxy.rule('eth_getBalance', { times: 1, delayMs: 1_500, action: 'other-node', url: chain.rpcUrl });
    const slow = t.request('GET', `/api/wallet/${w.id}/balance`, { token: alice.token });
    await waitFor(async () => proxy.calls.includes('eth_getBalance'), { timeoutMs: 10_000, message: 'the held read sent' });

    // Meanwhile a transfer mines block n + 1, and the token route reads and stores it.
    await sendFromOutsider(chain.rpcUrl, w.address, ETH / 2n);
    expect(await chain.blockNumber()).toBe(n + 1);
    const fast = await t.request('GET', `/api/wallet/${w.id}/token/${nativeId}`, { token: alice.token });
    expect(fast.status, fast.text).toBe(200);
    expect(fast.body.data.balance).toBe('1.500000000000000000');
    expect(await cacheRow(w.id, nativeId)).toEqual({ amount: (3n * ETH) / 2n, block_number: n + 1 });

    // The held reading (block n, 1 ETH) arrives last.
    const late = await slow;
    expect(late.status, late.text).toBe(200);
    expect(await cacheRow(w.id, nativeId)).toEqual({ amount: (3n * ETH) / 2n, block_number: n + 1 });
    const events = (await eventsOf(t, w.id, 'balance.updated')).filter((e) => e.payload.token === 'ETH');
    expect(events.map((e) => e.payload)).toEqual([
      {
        wallet_id: w.id,
        token: 'ETH',
        old_balance: '0.000000000000000000',
        new_balance: '1.000000000000000000',
        change: '1.000000000000000000',
        block_number: n,
        updated_at: expect.stringMatching(DATETIME),
      },
      {
        wallet_id: w.id,
        token: 'ETH',
        old_balance: '1.000000000000000000',
        new_balance: '1.500000000000000000',
        change: '0.500000000000000000',
        block_number: n + 1,
        updated_at: expect.stringMatching(DATETIME),
      },
    ]);

    // The next refresh reads block n + 1 again: same value, nothing emitted, nothing goes back.
    await t.request('GET', `/api/wallet/${w.id}/balance`, { token: alice.token });
    expect(await eventsOf(t, w.id, 'balance.updated').then((e) => e.filter((x) => x.payload.token === 'ETH').length)).toBe(2);
  });
});
