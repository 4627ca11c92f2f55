/**
 * GET /api/wallet/{wallet}/balance on a real anvil chain: exact to the wei after
 * anvil_setBalance and after minting 18- and 6-decimal ERC-20 tokens, the WalletBalance cache
 * and its balance.updated events, the BALANCE_MAX_AGE_S freshness rule, and the answers while
 * the node is down (anvil stopped mid-test): cached values, or 503 when nothing is cached.
 */
import type { Address } from 'viem';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp, type TestUser } from '../helpers/app.js';
import { startTestChain, type TestChain } from '../helpers/chain.js';
import { deployErc20, mintErc20 } from '../helpers/erc20.js';
import { waitFor } from '../helpers/wait.js';
import { createWallet, DATETIME, eventsOf, expectNoHiddenFields, keysOf, TOKEN_BALANCE_KEYS } from './support.js';

const ETH = 10n ** 18n;

let t: TestApp;
let chain: TestChain;
let networkId: number;
let alice: TestUser;
let usd: Address; // 6 decimals
let gold: Address; // 18 decimals

beforeAll(async () => {
  // BALANCE_MAX_AGE_S=0: every balance request re-reads the chain.
  t = await startTestApp({ env: { BALANCE_MAX_AGE_S: '0' } });
  chain = await startTestChain();
  networkId = await chain.register(t);
  alice = await t.createUser();
  usd = await deployErc20(chain.rpcUrl, { name: 'Test USD', symbol: 'TUSD', decimals: 6 });
  gold = await deployErc20(chain.rpcUrl, { name: 'Gold Token', symbol: 'GLD', decimals: 18 });
});

afterAll(async () => {
  await t?.close();
  await chain?.stop();
});

const balanceOf = (user: TestUser, walletId: number) => t.request('GET', `/api/wallet/${walletId}/balance`, { token: user.token });

async function cacheRow(walletId: number, tokenId: number) {
  const row = await t.store.db
    .selectFrom('wallet_balances')
    .select(['amount', 'last_balance'])
    .where('wallet_id', '=', walletId)
    .where('token_id', '=', tokenId)
    .executeTakeFirst();
  return row && { amount: BigInt(row.amount), last_balance: BigInt(row.last_balance) };
}

async function addToken(walletId: number, contract: Address) {
  const res = await t.request('POST', `/api/wallet/${walletId}/token/add`, { token: alice.token, body: { contract } });
  expect(res.status, res.text).toBe(200);
  return res.body.data as { id: number };
}

describe('GET /api/wallet/{wallet}/balance', () => {
  it('answers a new wallet with zero, field by field', async () => {
    const w = await createWallet(t, alice, networkId);
    const res = await balanceOf(alice, w.id);
    expect(res.status).toBe(200);
    expect(res.body.status).toBe('success');
    expect(res.body.message).toBe('Balance retrieved');
    expect(keysOf(res.body.data)).toEqual(['balance', 'tokens']);
    expect(res.body.data.balance).toBe('0.000000000000000000');
    expect(res.body.data.tokens).toHaveLength(1);
    const [native] = res.body.data.tokens;
    expect(keysOf(native)).toEqual(TOKEN_BALANCE_KEYS);
    expect(native).toEqual({ ...w.wallet_tokens[0], balance: '0.000000000000000000' });
    expectNoHiddenFields(res.text);
    // Cached as WalletBalance; a zero first reading is not a change.
    expect(await cacheRow(w.id, w.wallet_tokens[0]!.id)).toEqual({ amount: 0n, last_balance: 0n });
    expect(await eventsOf(t, w.id, 'balance.updated')).toEqual([]);
  });

  it('follows anvil_setBalance exactly to the wei, caching amount and last_balance and writing balance.updated', async () => {
    const w = await createWallet(t, alice, networkId);
    const nativeId = w.wallet_tokens[0]!.id;
    await balanceOf(alice, w.id); // cache the zero

    await chain.setBalance(w.address, 1_500_000_000_000_000_001n);
    const first = await balanceOf(alice, w.id);
    expect(first.body.data.balance).toBe('1.500000000000000001');
    expect(first.body.data.tokens[0].balance).toBe('1.500000000000000001');
    expect(await cacheRow(w.id, nativeId)).toEqual({ amount: 1_500_000_000_000_000_001n, last_balance: 0n });

    await chain.setBalance(w.address, 1n);
    const down = await balanceOf(alice, w.id);
    expect(down.body.data.balance).toBe('0.000000000000000001');
    expect(await cacheRow(w.id, nativeId)).toEqual({ amount: 1n, last_balance: 1_500_000_000_000_000_001n });

    // A balance far beyond 2^64 wei stays exact.
    const huge = 123_456_789_012_345_678_901_234_567_890n;
    await chain.setBalance(w.address, huge);
    expect((await balanceOf(alice, w.id)).body.data.balance).toBe('123456789012.345678901234567890');

    // Same value again: no new event.
    await balanceOf(alice, w.id);

    const events = await eventsOf(t, w.id, 'balance.updated');
    expect(events.map((e) => e.payload)).toEqual([
      {
        wallet_id: w.id,
        token: 'ETH',
        old_balance: '0.000000000000000000',
        new_balance: '1.500000000000000001',
        change: '1.500000000000000001',
        block_number: expect.any(Number),
        updated_at: expect.stringMatching(DATETIME),
      },
      {
        wallet_id: w.id,
        token: 'ETH',
        old_balance: '1.500000000000000001',
        new_balance: '0.000000000000000001',
        change: '-1.500000000000000000',
        block_number: expect.any(Number),
        updated_at: expect.stringMatching(DATETIME),
      },
      {
        wallet_id: w.id,
        token: 'ETH',
        old_balance: '0.000000000000000001',
        new_balance: '123456789012.345678901234567890',
        change: '123456789012.345678901234567889',
        block_number: expect.any(Number),
        updated_at: expect.stringMatching(DATETIME),
      },
    ]);
    for (const e of events) expect(e).toMatchObject({ user_id: alice.id, wallet_id: w.id, type: 'balance', name: 'balance.updated' });
  });

  it('reads 18- and 6-decimal token balances after minting, scaled exactly to 18 places', async () => {
    const w = await createWallet(t, alice, networkId);
    await chain.setBalance(w.address, 3n * ETH);
    const u = await addToken(w.id, usd);
    const g = await addToken(w.id, gold);

    await mintErc20(chain.rpcUrl, usd, w.address, 1_234_567n); // 1.234567 TUSD
    await mintErc20(chain.rpcUrl, gold, w.address, ETH + 1n); // 1 GLD and 1 base unit
    const res = await balanceOf(alice, w.id);
    expect(res.status).toBe(200);
    expect(res.body.data.balance).toBe('3.000000000000000000');
    const bySymbol = Object.fromEntries(res.body.data.tokens.map((x: { symbol: string; balance: string }) => [x.symbol, x]));
    expect(Object.keys(bySymbol)).toEqual(['ETH', 'TUSD', 'GLD']);
    expect(bySymbol.ETH.balance).toBe('3.000000000000000000');
    expect(bySymbol.TUSD).toMatchObject({ id: u.id, decimals: 6, balance: '1.234567000000000000' });
    expect(bySymbol.GLD).toMatchObject({ id: g.id, decimals: 18, balance: '1.000000000000000001' });
    for (const x of res.body.data.tokens) expect(keysOf(x)).toEqual(TOKEN_BALANCE_KEYS);
    // The cache holds base units, not scaled values.
    expect(await cacheRow(w.id, u.id)).toEqual({ amount: 1_234_567n, last_balance: 0n });

    // The smallest 6-decimal unit, and a supply far beyond 2^64.
    await mintErc20(chain.rpcUrl, usd, w.address, 1n);
    expect((await balanceOf(alice, w.id)).body.data.tokens[1].balance).toBe('1.234568000000000000');
    await mintErc20(chain.rpcUrl, usd, w.address, 10n ** 30n);
    expect((await balanceOf(alice, w.id)).body.data.tokens[1].balance).toBe('1000000000000000000000001.234568000000000000');

    const usdEvents = (await eventsOf(t, w.id, 'balance.updated')).filter((e) => e.payload.token === 'TUSD');
    expect(usdEvents.map((e) => [e.payload.old_balance, e.payload.new_balance, e.payload.change])).toEqual([
      ['0.000000000000000000', '1.234567000000000000', '1.234567000000000000'],
      ['1.234567000000000000', '1.234568000000000000', '0.000001000000000000'],
      ['1.234568000000000000', '1000000000000000000000001.234568000000000000', '1000000000000000000000000.000000000000000000'],
    ]);
  });

  it('serves the cache while it is younger than BALANCE_MAX_AGE_S, and shows outside changes after that', async () => {
    const w = await createWallet(t, alice, networkId);
    await chain.setBalance(w.address, 5n * ETH);
    expect((await balanceOf(alice, w.id)).body.data.balance).toBe('5.000000000000000000');

    // A second service on the same database: one keeps the cache an hour, one a second.
    const hour = await startTestApp({ database: t.database, keepDatabase: true, env: { BALANCE_MAX_AGE_S: '3600' } });
    const second = await startTestApp({ database: t.database, keepDatabase: true, env: { BALANCE_MAX_AGE_S: '1' } });
    try {
      const get = (app: TestApp) => app.request('GET', `/api/wallet/${w.id}/balance`, { token: alice.token });
      await chain.setBalance(w.address, 7n * ETH);
      const cached = await get(hour);
      expect(cached.status).toBe(200);
      expect(cached.body.message).toBe('Balance retrieved');
      expect(cached.body.data.balance).toBe('5.000000000000000000'); // from the cache: the chain says 7

      // Within BALANCE_MAX_AGE_S=1 the outside change shows.
      await waitFor(async () => (await get(second)).body.data.balance === '7.000000000000000000', {
        timeoutMs: 5_000,
        message: 'balance 7 via max age 1',
      });
      // And the refreshed cache is what the hour-long service now serves: at once on SQLite; on
      // PostgreSQL once the other process's commit reaches it by NOTIFY (src/db/read-cache.ts),
      // milliseconds later, so polled with a short deadline.
      await waitFor(async () => (await get(hour)).body.data.balance === '7.000000000000000000', {
        timeoutMs: 2_000,
        message: 'the refreshed cache served by the hour-long service',
      });
    } finally {
      await hour.close();
      await second.close();
    }
  });

  it('answers concurrent requests on a stale cache with the same exact value and one event', async () => {
    const w = await createWallet(t, alice, networkId);
    await chain.setBalance(w.address, 42n * ETH + 7n);
    const all = await Promise.all(Array.from({ length: 20 }, () => balanceOf(alice, w.id)));
    for (const res of all) {
      expect(res.status).toBe(200);
      expect(res.body.data.balance).toBe('42.000000000000000007');
    }
    expect(await eventsOf(t, w.id, 'balance.updated')).toHaveLength(1);
  });

  it('answers from the cache, or 502 with nothing cached, when the node answers a read with an error', async () => {
    const doomed = await deployErc20(chain.rpcUrl, { name: 'Doomed', symbol: 'DOOM', decimals: 6 });
    const w = await createWallet(t, alice, networkId);
    const d = await addToken(w.id, doomed);
    await mintErc20(chain.rpcUrl, doomed, w.address, 1_000_000n);
    expect((await balanceOf(alice, w.id)).body.data.tokens[1].balance).toBe('1.000000000000000000');

    // The contract's code disappears: balanceOf now returns no data.
    await chain.rpc('anvil_setCode', [doomed, '0x']);
    const cached = await balanceOf(alice, w.id);
    expect(cached.status).toBe(200);
    expect(cached.body.message).toBe('Balance from cache: the blockchain node returned an error');
    expect(cached.body.data.tokens[1].balance).toBe('1.000000000000000000');

    await t.store.db.deleteFrom('wallet_balances').where('wallet_id', '=', w.id).where('token_id', '=', d.id).execute();
    const uncached = await balanceOf(alice, w.id);
    expect(uncached.status).toBe(502);
    expect(uncached.body).toEqual({ status: 'error', message: 'The blockchain node returned an error', data: null });
  });

  describe('with the node down (anvil stopped mid-test)', () => {
    let cachedWallet: Awaited<ReturnType<typeof createWallet>>;
    let cachedUsd: { id: number };

    beforeAll(async () => {
      cachedWallet = await createWallet(t, alice, networkId, 'Cached');
      await chain.setBalance(cachedWallet.address, 9n * ETH + 9n);
      cachedUsd = await addToken(cachedWallet.id, usd);
      await mintErc20(chain.rpcUrl, usd, cachedWallet.address, 2_500_000n);
      const res = await balanceOf(alice, cachedWallet.id);
      expect(res.body.data.balance).toBe('9.000000000000000009');
      await chain.stop();
    });

    it('answers from the cache and says so in the message', async () => {
      const res = await balanceOf(alice, cachedWallet.id);
      expect(res.status).toBe(200);
      expect(res.body.status).toBe('success');
      expect(res.body.message).toBe('Balance from cache: the blockchain node is unavailable');
      expect(res.body.data.balance).toBe('9.000000000000000009');
      expect(res.body.data.tokens.map((x: { symbol: string; balance: string }) => [x.symbol, x.balance])).toEqual([
        ['ETH', '9.000000000000000009'],
        ['TUSD', '2.500000000000000000'],
      ]);
      for (const x of res.body.data.tokens) expect(keysOf(x)).toEqual(TOKEN_BALANCE_KEYS);

      const token = await t.request('GET', `/api/wallet/${cachedWallet.id}/token/${cachedUsd.id}`, { token: alice.token });
      expect(token.status).toBe(200);
      expect(token.body.message).toBe('Balance from cache: the blockchain node is unavailable');
      expect(token.body.data.balance).toBe('2.500000000000000000');
      expect(t.logs.join('')).toContain('serving cached values');
    });

    it('answers 503 when nothing is cached, never 500', async () => {
      const fresh = await createWallet(t, alice, networkId, 'Never read');
      const res = await balanceOf(alice, fresh.id);
      expect(res.status).toBe(503);
      expect(res.body).toEqual({ status: 'error', message: 'The blockchain node is unavailable', data: null });
      const token = await t.request('GET', `/api/wallet/${fresh.id}/token/${fresh.wallet_tokens[0]!.id}`, { token: alice.token });
      expect(token.status).toBe(503);
      expect(token.body).toEqual({ status: 'error', message: 'The blockchain node is unavailable', data: null });
    });

    it('answers token add with 503, adding nothing', async () => {
      const res = await t.request('POST', `/api/wallet/${cachedWallet.id}/token/add`, { token: alice.token, body: { contract: gold } });
      expect(res.status).toBe(503);
      expect(res.body).toEqual({ status: 'error', message: 'The blockchain node is unavailable', data: null });
      const list = await t.request('GET', `/api/wallet/${cachedWallet.id}/tokens`, { token: alice.token });
      expect(list.body.data.map((x: { symbol: string }) => x.symbol)).toEqual(['ETH', 'TUSD']);
    });

    it('keeps the rest of the wallet routes working', async () => {
      expect((await t.request('GET', `/api/wallet/${cachedWallet.id}`, { token: alice.token })).status).toBe(200);
      const removed = await t.request('GET', `/api/wallet/${cachedWallet.id}/token/remove/${cachedUsd.id}`, { token: alice.token });
      expect(removed.status).toBe(200);
      const res = await balanceOf(alice, cachedWallet.id);
      expect(res.status).toBe(200);
      expect(res.body.data.tokens.map((x: { symbol: string }) => x.symbol)).toEqual(['ETH']);
    });
  });
});
