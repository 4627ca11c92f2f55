/**
 * Wallet tokens on a real anvil chain with ERC-20 contracts compiled by solc: add (metadata
 * read on chain), list, show with balance, remove, reactivate, their events, validation and
 * isolation.
 */
import { getAddress, type Address } from 'viem';
import { generatePrivateKey, privateKeyToAddress } from 'viem/accounts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp, type TestUser } from '../helpers/app.js';
import { expectValidationError } from '../helpers/expect.js';
import { startTestChain, type TestChain } from '../helpers/chain.js';
import { deployErc20, deployNotAToken, mintErc20 } from '../helpers/erc20.js';
import {
  countEvents,
  createWallet,
  DATETIME,
  eventsOf,
  expectNoHiddenFields,
  keysOf,
  TOKEN_BALANCE_KEYS,
  TOKEN_KEYS,
  ZERO_ADDRESS,
} from './support.js';

let t: TestApp;
let chain: TestChain;
let networkId: number;
let alice: TestUser;
let bob: TestUser;
let usd: Address; // 6 decimals
let gold: Address; // 18 decimals
let notAToken: Address;
let big: Address; // 24 decimals
let fakeEth: Address; // symbol ETH, like the native token

beforeAll(async () => {
  t = await startTestApp({ env: { BALANCE_MAX_AGE_S: '0' } });
  chain = await startTestChain();
  networkId = await chain.register(t);
  alice = await t.createUser();
  bob = await t.createUser();
  usd = await deployErc20(chain.rpcUrl, { name: 'Test USD', symbol: 'TUSD', decimals: 6 });
  gold = await deployErc20(chain.rpcUrl, { name: 'Gold Token', symbol: 'GLD', decimals: 18 });
  notAToken = await deployNotAToken(chain.rpcUrl);
  big = await deployErc20(chain.rpcUrl, { name: 'Too Precise', symbol: 'BIG', decimals: 24 });
  fakeEth = await deployErc20(chain.rpcUrl, { name: 'Fake Ether', symbol: 'eth', decimals: 18 });
});

afterAll(async () => {
  await t?.close();
  await chain?.stop();
});

const addToken = (user: TestUser, walletId: number, contract: unknown) =>
  t.request('POST', `/api/wallet/${walletId}/token/add`, { token: user.token, body: { contract } });

describe('POST /api/wallet/{wallet}/token/add', () => {
  it('reads name, symbol and decimals from the contract and returns the WalletToken', async () => {
    const w = await createWallet(t, alice, networkId);
    const res = await addToken(alice, w.id, usd.toLowerCase());
    expect(res.status, res.text).toBe(200);
    expect(res.body.status).toBe('success');
    expect(res.body.message).toBe('Token added');
    const tok = res.body.data;
    expect(keysOf(tok)).toEqual(TOKEN_KEYS);
    expect(tok).toEqual({
      id: tok.id,
      name: 'Test USD',
      symbol: 'TUSD',
      decimals: 6,
      is_native: false,
      is_active: true,
      is_testnet: true,
      contract: getAddress(usd), // stored EIP-55 checksummed whatever the input case
      created_at: tok.created_at,
      updated_at: tok.created_at,
    });
    expect(tok.created_at).toMatch(DATETIME);
    expectNoHiddenFields(res.text);

    const events = await eventsOf(t, w.id, 'token.added');
    expect(events).toHaveLength(1);
    expect(events[0]).toEqual({
      id: events[0]!.id,
      user_id: alice.id,
      wallet_id: w.id,
      type: 'token',
      name: 'token.added',
      dispatched_at: expect.any(Number), // no webhook: written dispatched (test/webhooks/outbox-claims.test.ts)
      payload: {
        wallet_id: w.id,
        token_id: tok.id,
        name: 'Test USD',
        symbol: 'TUSD',
        contract: getAddress(usd),
        decimals: 6,
        is_native: false,
        added_at: tok.created_at,
      },
    });
    // A zero balance on first sight is not a change: no balance.updated.
    expect(await eventsOf(t, w.id, 'balance.updated')).toEqual([]);

    const shown = await t.request('GET', `/api/wallet/${w.id}`, { token: alice.token });
    expect(shown.body.data.wallet_tokens.map((x: { symbol: string }) => x.symbol)).toEqual(['ETH', 'TUSD']);
  });

  it('stores the balance the wallet already holds when the token is added (balance.updated)', async () => {
    const w = await createWallet(t, alice, networkId);
    await mintErc20(chain.rpcUrl, gold, w.address, 10n ** 18n + 1n);
    const res = await addToken(alice, w.id, gold);
    expect(res.status, res.text).toBe(200);
    const events = await eventsOf(t, w.id, 'balance.updated');
    expect(events).toHaveLength(1);
    expect(events[0]!.payload).toEqual({
      wallet_id: w.id,
      token: 'GLD',
      old_balance: '0.000000000000000000',
      new_balance: '1.000000000000000001',
      change: '1.000000000000000001',
      block_number: expect.any(Number),
      updated_at: expect.stringMatching(DATETIME),
    });
    const cache = await t.store.db
      .selectFrom('wallet_balances')
      .select(['amount', 'last_balance'])
      .where('wallet_id', '=', w.id)
      .where('token_id', '=', res.body.data.id)
      .executeTakeFirstOrThrow();
    expect([BigInt(cache.amount), BigInt(cache.last_balance)]).toEqual([10n ** 18n + 1n, 0n]);
  });

  it('refuses a contract that is already active (any case) with 422', async () => {
    const w = await createWallet(t, alice, networkId);
    expect((await addToken(alice, w.id, usd)).status).toBe(200);
    const events = await countEvents(t);
    for (const contract of [usd, usd.toLowerCase(), getAddress(usd), `0x${usd.slice(2).toUpperCase()}`]) {
      const res = await addToken(alice, w.id, contract);
      expectValidationError(res, { contract: ['The contract has already been added.'] });
    }
    // The native token's "contract" is the zero address: it is already there.
    const native = await addToken(alice, w.id, ZERO_ADDRESS);
    expectValidationError(native, { contract: ['The contract has already been added.'] });
    expect(await countEvents(t)).toBe(events);
  });

  it('validates the contract field', async () => {
    const w = await createWallet(t, alice, networkId);
    const checksummed = getAddress(usd);
    // Flip the case of one letter: a mixed-case address with a wrong checksum.
    const i = [...checksummed].findIndex((c, k) => k > 1 && /[a-fA-F]/.test(c));
    const c = checksummed[i]!;
    const badChecksum = checksummed.slice(0, i) + (c === c.toLowerCase() ? c.toUpperCase() : c.toLowerCase()) + checksummed.slice(i + 1);
    const cases: Array<[unknown, string]> = [
      [undefined, 'The contract field is required.'],
      ['', 'The contract field is required.'],
      [42, 'The contract field must be a string.'],
      [null, 'The contract field must be a string.'],
      ['abc', 'The contract field must be a valid address.'],
      ['0x1234', 'The contract field must be a valid address.'],
      [`${checksummed}00`, 'The contract field must be a valid address.'],
      [checksummed.slice(2), 'The contract field must be a valid address.'],
      ['0xZZ00000000000000000000000000000000000000', 'The contract field must be a valid address.'],
      [badChecksum, 'The contract field must be a valid address.'],
      ['x'.repeat(101), 'The contract field must not be greater than 100 characters.'],
    ];
    const events = await countEvents(t);
    for (const [contract, message] of cases) {
      const res = await t.request('POST', `/api/wallet/${w.id}/token/add`, {
        token: alice.token,
        body: contract === undefined ? {} : { contract },
      });
      expectValidationError(res, { contract: [message] }, String(contract));
    }
    expect(await countEvents(t)).toBe(events);
    const tokens = await t.request('GET', `/api/wallet/${w.id}/tokens`, { token: alice.token });
    expect(tokens.body.data).toHaveLength(1);
  });

  it('answers an address without code or a contract that is not an ERC-20 with 422, not 500', async () => {
    const w = await createWallet(t, alice, networkId);
    const eoa = privateKeyToAddress(generatePrivateKey());
    const noCode = await addToken(alice, w.id, eoa);
    expectValidationError(noCode, { contract: ['The contract field must be the address of a deployed contract.'] });
    // The wallet's own address holds no code either.
    expectValidationError(await addToken(alice, w.id, w.address), {
      contract: ['The contract field must be the address of a deployed contract.'],
    });

    const notErc20 = await addToken(alice, w.id, notAToken);
    expectValidationError(notErc20, { contract: ['The contract field must be the address of an ERC-20 token contract.'] });
  });

  it('refuses a token with more than 18 decimals', async () => {
    const w = await createWallet(t, alice, networkId);
    const res = await addToken(alice, w.id, big);
    expectValidationError(res, { contract: ['The token must not have more than 18 decimals.'] });
  });

  it('refuses a token whose symbol an active token of the wallet already has (case-insensitive)', async () => {
    const w = await createWallet(t, alice, networkId);
    const res = await addToken(alice, w.id, fakeEth);
    expectValidationError(res, { contract: ['The symbol eth is already used by an active token of this wallet.'] });
    expect(await eventsOf(t, w.id, 'token.added')).toEqual([]);
  });
});

describe('GET /api/wallet/{wallet}/tokens and /token/{token}', () => {
  it('lists every token, active and removed, oldest first, with created_at and updated_at', async () => {
    const w = await createWallet(t, alice, networkId);
    const u = (await addToken(alice, w.id, usd)).body.data;
    const g = (await addToken(alice, w.id, gold)).body.data;
    await t.request('GET', `/api/wallet/${w.id}/token/remove/${g.id}`, { token: alice.token });
    const res = await t.request('GET', `/api/wallet/${w.id}/tokens`, { token: alice.token });
    expect(res.status).toBe(200);
    expect(res.body.message).toBe('Tokens retrieved');
    const list = res.body.data;
    expect(list.map((x: { id: number }) => x.id)).toEqual([w.wallet_tokens[0]!.id, u.id, g.id]);
    for (const x of list) expect(keysOf(x)).toEqual(TOKEN_KEYS);
    expect(list[0]).toMatchObject({ symbol: 'ETH', is_native: true, is_active: true, contract: ZERO_ADDRESS });
    expect(list[1]).toEqual(u);
    expect(list[2]).toMatchObject({ id: g.id, symbol: 'GLD', is_active: false });
    expectNoHiddenFields(res.text);
  });

  it('shows one token with its exact balance read from the chain', async () => {
    const w = await createWallet(t, alice, networkId);
    const u = (await addToken(alice, w.id, usd)).body.data;
    const first = await t.request('GET', `/api/wallet/${w.id}/token/${u.id}`, { token: alice.token });
    expect(first.status).toBe(200);
    expect(first.body.message).toBe('Token retrieved');
    expect(keysOf(first.body.data)).toEqual(TOKEN_BALANCE_KEYS);
    expect(first.body.data).toEqual({ ...u, balance: '0.000000000000000000' });
    expectNoHiddenFields(first.text);

    await mintErc20(chain.rpcUrl, usd, w.address, 1_234_567n);
    const minted = await t.request('GET', `/api/wallet/${w.id}/token/${u.id}`, { token: alice.token });
    expect(minted.body.data.balance).toBe('1.234567000000000000');

    await chain.setBalance(w.address, 2n * 10n ** 18n + 3n);
    const native = await t.request('GET', `/api/wallet/${w.id}/token/${w.wallet_tokens[0]!.id}`, { token: alice.token });
    expect(native.status).toBe(200);
    expect(native.body.data).toMatchObject({ symbol: 'ETH', is_native: true, balance: '2.000000000000000003' });
  });

  it("answers a missing, non-integer or other wallet's token with 404 Token not found", async () => {
    const w = await createWallet(t, alice, networkId);
    const other = await createWallet(t, alice, networkId, 'Other');
    const otherToken = (await addToken(alice, other.id, usd)).body.data;
    for (const id of ['999999', '0', 'abc', '1.5', '-3', String(otherToken.id), String(other.wallet_tokens[0]!.id)]) {
      for (const path of [`/api/wallet/${w.id}/token/${id}`, `/api/wallet/${w.id}/token/remove/${id}`]) {
        const res = await t.request('GET', path, { token: alice.token });
        expect(res.status, path).toBe(404);
        expect(res.body).toEqual({ status: 'error', message: 'Token not found', data: null });
      }
    }
    // The token is untouched.
    const still = await t.request('GET', `/api/wallet/${other.id}/token/${otherToken.id}`, { token: alice.token });
    expect(still.body.data.is_active).toBe(true);
  });

  it("keeps another user's tokens invisible: their wallet is 404, and their token ids are 404 on my wallet", async () => {
    const mine = await createWallet(t, bob, networkId, 'Bob');
    const theirs = await createWallet(t, alice, networkId, 'Alice');
    const theirToken = (await addToken(alice, theirs.id, usd)).body.data;
    const events = await countEvents(t);
    for (const [method, path] of [
      ['GET', `/api/wallet/${theirs.id}/tokens`],
      ['GET', `/api/wallet/${theirs.id}/token/${theirToken.id}`],
      ['GET', `/api/wallet/${theirs.id}/token/remove/${theirToken.id}`],
      ['POST', `/api/wallet/${theirs.id}/token/add`],
    ] as const) {
      const res = await t.request(method, path, { token: bob.token, body: method === 'POST' ? { contract: gold } : undefined });
      expect(res.status, path).toBe(404);
      expect(res.body).toEqual({ status: 'error', message: 'Wallet not found', data: null });
    }
    for (const path of [`/api/wallet/${mine.id}/token/${theirToken.id}`, `/api/wallet/${mine.id}/token/remove/${theirToken.id}`]) {
      const res = await t.request('GET', path, { token: bob.token });
      expect(res.status, path).toBe(404);
      expect(res.body).toEqual({ status: 'error', message: 'Token not found', data: null });
    }
    const list = await t.request('GET', `/api/wallet/${mine.id}/tokens`, { token: bob.token });
    expect(list.body.data.map((x: { id: number }) => x.id)).not.toContain(theirToken.id);
    expect(await countEvents(t)).toBe(events);
    const still = await t.request('GET', `/api/wallet/${theirs.id}/token/${theirToken.id}`, { token: alice.token });
    expect(still.body.data.is_active).toBe(true);
  });
});

describe('GET /api/wallet/{wallet}/token/remove/{token}', () => {
  it('marks the token inactive, writes token.removed, and a second removal changes nothing', async () => {
    const w = await createWallet(t, alice, networkId);
    const u = (await addToken(alice, w.id, usd)).body.data;
    const res = await t.request('GET', `/api/wallet/${w.id}/token/remove/${u.id}`, { token: alice.token });
    expect(res.status).toBe(200);
    expect(res.body.message).toBe('Token removed');
    expect(keysOf(res.body.data)).toEqual(TOKEN_KEYS);
    expect(res.body.data).toEqual({ ...u, is_active: false, updated_at: res.body.data.updated_at });

    const events = await eventsOf(t, w.id, 'token.removed');
    expect(events).toHaveLength(1);
    expect(events[0]).toEqual({
      id: events[0]!.id,
      user_id: alice.id,
      wallet_id: w.id,
      type: 'token',
      name: 'token.removed',
      dispatched_at: expect.any(Number), // no webhook: written dispatched (test/webhooks/outbox-claims.test.ts)
      payload: {
        wallet_id: w.id,
        token_id: u.id,
        name: 'Test USD',
        symbol: 'TUSD',
        contract: getAddress(usd),
        decimals: 6,
        is_native: false,
        removed_at: res.body.data.updated_at,
      },
    });

    const again = await t.request('GET', `/api/wallet/${w.id}/token/remove/${u.id}`, { token: alice.token });
    expect(again.status).toBe(200);
    expect(again.body.data).toEqual(res.body.data);
    expect(await eventsOf(t, w.id, 'token.removed')).toHaveLength(1);

    // A removed token leaves the balance response but stays in the token list and can be shown.
    const balance = await t.request('GET', `/api/wallet/${w.id}/balance`, { token: alice.token });
    expect(balance.body.data.tokens.map((x: { symbol: string }) => x.symbol)).toEqual(['ETH']);
    const shown = await t.request('GET', `/api/wallet/${w.id}/token/${u.id}`, { token: alice.token });
    expect(shown.status).toBe(200);
    expect(shown.body.data.is_active).toBe(false);
  });

  it('refuses to remove the native token with 422', async () => {
    const w = await createWallet(t, alice, networkId);
    const res = await t.request('GET', `/api/wallet/${w.id}/token/remove/${w.wallet_tokens[0]!.id}`, { token: alice.token });
    expectValidationError(res, { token: ['The native token cannot be removed.'] });
    const shown = await t.request('GET', `/api/wallet/${w.id}`, { token: alice.token });
    expect(shown.body.data.wallet_tokens[0].is_active).toBe(true);
    expect(await eventsOf(t, w.id, 'token.removed')).toEqual([]);
  });

  it('reactivates a removed token when its contract is added again (same id, token.added again)', async () => {
    const w = await createWallet(t, alice, networkId);
    const u = (await addToken(alice, w.id, usd)).body.data;
    await t.request('GET', `/api/wallet/${w.id}/token/remove/${u.id}`, { token: alice.token });
    const res = await addToken(alice, w.id, usd.toLowerCase());
    expect(res.status, res.text).toBe(200);
    expect(res.body.data).toEqual({ ...u, updated_at: res.body.data.updated_at });
    expect(res.body.data.is_active).toBe(true);
    const added = await eventsOf(t, w.id, 'token.added');
    expect(added).toHaveLength(2);
    expect(added[1]!.payload).toEqual({ ...added[0]!.payload, added_at: res.body.data.updated_at });
    const list = await t.request('GET', `/api/wallet/${w.id}/tokens`, { token: alice.token });
    expect(list.body.data).toHaveLength(2);
  });

  it('frees the symbol of a removed token, and then refuses to reactivate it while the symbol is taken', async () => {
    const w = await createWallet(t, alice, networkId);
    const first = (await addToken(alice, w.id, usd)).body.data;
    await t.request('GET', `/api/wallet/${w.id}/token/remove/${first.id}`, { token: alice.token });
    const usd2 = await deployErc20(chain.rpcUrl, { name: 'Test USD v2', symbol: 'TUSD', decimals: 6 });
    const second = await addToken(alice, w.id, usd2);
    expect(second.status, second.text).toBe(200);
    expect(second.body.data.symbol).toBe('TUSD');
    const back = await addToken(alice, w.id, usd);
    expectValidationError(back, { contract: ['The symbol TUSD is already used by an active token of this wallet.'] });
  });
});
