/**
 * POST /transaction/create, GET /transaction, GET /transaction/show on a real anvil chain
 * with the watcher running: native and ERC-20 sends confirmed and exact to the wei on chain
 * and in the API, validation wording, the order of checks, insufficient balance, the
 * Idempotency-Key, the list's pagination headers and filter, and another user's view.
 */
import { getAddress, type Address } from 'viem';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp, type TestUser } from '../helpers/app.js';
import { expectValidationError } from '../helpers/expect.js';
import { startTestChain, type TestChain } from '../helpers/chain.js';
import { deployErc20, erc20BalanceOf, mintErc20 } from '../helpers/erc20.js';
import { waitFor } from '../helpers/wait.js';
import { requestHash } from '../../src/http/idempotency.js';
import {
  dec18,
  ETH,
  eventsOf,
  fundedWallet,
  publicClient,
  RECIPIENT,
  txRows,
  waitForCursor,
  waitForStatus,
  type FundedWallet,
} from '../helpers/transfers.js';

const DATETIME = /^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}$/;
const LIST_KEYS = [
  'amount',
  'batch_index',
  'block_hash',
  'block_number',
  'block_timestamp',
  'created_at',
  'cumulative_gas_used',
  'data',
  'deposit_address_id',
  'failure_reason',
  'from',
  'gas',
  'gas_price',
  'gas_used',
  'held_by',
  'id',
  'internal',
  'nonce',
  'payout_id',
  'receipt_status',
  'reference',
  'refund_id',
  'replaced_hashes',
  'status',
  'stuck',
  'stuck_reason',
  'symbol',
  'to',
  'tx_hash',
  'type',
  'updated_at',
];

let t: TestApp;
let chain: TestChain;
let networkId: number;
let alice: TestUser;
let bob: TestUser;
let usd: Address;

beforeAll(async () => {
  t = await startTestApp({ workers: true });
  chain = await startTestChain();
  networkId = await chain.register(t);
  await waitForCursor(t, networkId);
  alice = await t.createUser();
  bob = await t.createUser();
  usd = await deployErc20(chain.rpcUrl, { name: 'Test USD', symbol: 'TUSD', decimals: 6 });
});

afterAll(async () => {
  await t?.close();
  await chain?.stop();
});

const create = (user: TestUser, walletId: number, body: unknown, headers?: Record<string, string>) =>
  t.request('POST', `/api/wallet/${walletId}/transaction/create`, { token: user.token, body, headers });

describe('native transfer', () => {
  let w: FundedWallet;
  const start = 10n * ETH;
  const amount = 1_500_000_000_000_000_000n;

  beforeAll(async () => {
    w = await fundedWallet(t, chain, alice, networkId, start);
  });

  it('creates a pending transfer with the SPEC creation shape', async () => {
    const before = await publicClient(chain.rpcUrl).getBalance({ address: RECIPIENT });
    const res = await create(alice, w.id, { amount: '1.5', token: 'ETH', address: RECIPIENT });
    expect(res.status).toBe(200);
    expect(res.body.status).toBe('success');
    const d = res.body.data;
    // The creation answer: every key of a list item but `internal` (a create is outgoing, never an internal receipt).
    expect(Object.keys(d).sort()).toEqual(LIST_KEYS.filter((k) => k !== 'internal' && k !== 'deposit_address_id'));
    expect(d).toMatchObject({
      amount: '1.500000000000000000',
      type: 'transfer',
      status: 'pending',
      block_number: null,
      block_hash: null,
      nonce: 0,
      gas: 21000,
      gas_used: null,
      cumulative_gas_used: null,
      receipt_status: null,
      symbol: 'ETH',
      from: w.address,
      to: RECIPIENT,
    });
    expect(d.tx_hash).toMatch(/^0x[0-9a-f]{64}$/);
    expect(Number.isInteger(d.block_timestamp)).toBe(true);
    expect(Math.abs(d.block_timestamp - Date.now() / 1000)).toBeLessThan(60);
    expect(typeof d.gas_price).toBe('number');
    expect(d.gas_price).toBeGreaterThan(0);
    expect(d.created_at).toMatch(DATETIME);

    const confirmed = await waitForStatus(t, alice, w.id, d.id, 'confirmed');
    expect(confirmed.block_number).toBeGreaterThan(0);
    expect(confirmed.block_hash).toMatch(/^0x[0-9a-f]{64}$/);
    expect(confirmed.block_timestamp).toMatch(DATETIME);
    expect(confirmed.gas).toBe('21000.000000000000000000');
    expect(confirmed.gas_used).toBe('21000.000000000000000000');
    expect(confirmed.receipt_status).toBe(true);
    expect(confirmed.wallet_token).toMatchObject({ symbol: 'ETH', is_native: true, decimals: 18 });

    // Exact to the wei: the wallet paid amount + gas_used × gas_price (legacy: the price it set).
    const [row] = await t.store.db.selectFrom('transactions').select(['gas_price', 'gas_used']).where('id', '=', d.id).execute();
    const fee = BigInt(row!.gas_price!) * BigInt(row!.gas_used!);
    const client = publicClient(chain.rpcUrl);
    expect(await client.getBalance({ address: w.address })).toBe(start - amount - fee);
    expect(await client.getBalance({ address: RECIPIENT })).toBe(before + amount);
    const bal = await waitFor(async () => {
      const r = await t.request('GET', `/api/wallet/${w.id}/balance`, { token: alice.token });
      return r.body.data?.balance === dec18(start - amount - fee) ? r : null;
    });
    expect(bal.status).toBe(200);
    const cached = await t.services.balances.cached(w.id);
    expect([...cached.values()].map((c) => c.amount)).toContain(start - amount - fee);
  });

  it('records transaction.created then transaction.confirmed once each, in the contract shape', async () => {
    const created = await eventsOf(t, w.id, 'transaction.created');
    const confirmed = await waitFor(async () => {
      const e = await eventsOf(t, w.id, 'transaction.confirmed');
      return e.length > 0 ? e : null;
    });
    expect(created).toHaveLength(1);
    expect(confirmed).toHaveLength(1);
    // The row it was recorded with (on PostgreSQL the payload is made before the insert answers: its id drawn ahead).
    const [row] = await t.store.db
      .selectFrom('transactions')
      .select(['id', 'tx_hash'])
      .where('wallet_id', '=', w.id)
      .where('type', '=', 'transfer')
      .execute();
    expect(created[0]!.payload).toEqual({
      transaction_id: row!.id,
      wallet_id: w.id,
      amount: '1.500000000000000000',
      token: 'ETH',
      tx_hash: row!.tx_hash,
      block_number: null,
      status: 'pending',
      type: 'transfer',
      created_at: expect.stringMatching(DATETIME),
    });
    expect(confirmed[0]!.payload).toMatchObject({
      status: 'confirmed',
      type: 'transfer',
      block_number: expect.any(Number),
      confirmed_at: expect.stringMatching(DATETIME),
    });
    const balance = await eventsOf(t, w.id, 'balance.updated');
    expect(balance.length).toBeGreaterThanOrEqual(1);
  });

  it('answers 400 Insufficient balance when amount + maximum fee exceed what is left', async () => {
    const res = await create(alice, w.id, { amount: '8.5', token: 'ETH', address: RECIPIENT });
    expect(res.status).toBe(400);
    expect(res.body).toEqual({ status: 'error', message: 'Insufficient balance for transaction', data: null });
    // The whole remaining balance cannot go either: the fee is reserved on top of the amount.
    const rest = await publicClient(chain.rpcUrl).getBalance({ address: w.address });
    const all = await create(alice, w.id, { amount: dec18(rest), token: 'ETH', address: RECIPIENT });
    expect(all.status).toBe(400);
    expect(all.body.message).toBe('Insufficient balance for transaction');
  });

  it('hands out consecutive nonces', async () => {
    const a = await create(alice, w.id, { amount: 0.001, token: 'eth', address: RECIPIENT.toLowerCase() });
    const b = await create(alice, w.id, { amount: '0.002', token: 'ETH', address: RECIPIENT });
    expect([a.status, b.status]).toEqual([200, 200]);
    expect([a.body.data.nonce, b.body.data.nonce]).toEqual([1, 2]);
    expect(a.body.data.amount).toBe('0.001000000000000000');
    await waitForStatus(t, alice, w.id, b.body.data.id, 'confirmed');
  });
});

describe('a row or an event that cannot be written', () => {
  // The row, its event and the commit are the transaction's last statements (on PostgreSQL sent
  // together, src/db/pipelined.ts: the event's payload made before the row's insert answers).
  // When either fails, the transfer must not be recorded, its signed bytes not sent, the nonce
  // not used.
  it.each(['events', 'transactions'])(
    'fails the create when %s refuses the write: nothing recorded, nothing sent, and the next create takes the same nonce',
    async (table) => {
      const w = await fundedWallet(t, chain, alice, networkId, 2n * ETH);
      const { sql } = await import('kysely');
      const name = sql.raw(`refuse_${table}_${w.id}`);
      const on = sql.raw(table);
      if (t.store.driver === 'postgres') {
        await sql`create function ${name}() returns trigger language plpgsql as $$ begin if new.wallet_id = ${sql.raw(String(w.id))} then raise exception 'injected: write refused'; end if; return new; end $$`.execute(
          t.store.db,
        );
        await sql`create trigger ${name} before insert on ${on} for each row execute function ${name}()`.execute(t.store.db);
      } else {
        await sql`create trigger ${name} before insert on ${on} when new.wallet_id = ${sql.raw(String(w.id))} begin select raise(abort, 'injected: write refused'); end`.execute(
          t.store.db,
        );
      }
      const refused = await create(alice, w.id, { amount: '0.5', token: 'ETH', address: RECIPIENT });
      expect(refused.status).toBe(500);
      expect(refused.body).toEqual({ status: 'error', message: 'Internal server error', data: null });
      expect(await txRows(t, w.id)).toEqual([]);
      expect(await eventsOf(t, w.id, 'transaction.created')).toEqual([]);
      expect(await publicClient(chain.rpcUrl).getTransactionCount({ address: w.address, blockTag: 'pending' })).toBe(0);
      await sql`drop trigger ${name}${sql.raw(t.store.driver === 'postgres' ? ` on ${table}` : '')}`.execute(t.store.db);
      const next = await create(alice, w.id, { amount: '0.5', token: 'ETH', address: RECIPIENT });
      expect(next.status).toBe(200);
      expect(next.body.data.nonce).toBe(0);
      await waitForStatus(t, alice, w.id, next.body.data.id, 'confirmed');
      expect((await txRows(t, w.id)).map((r) => [r.type, r.status, r.nonce])).toEqual([['transfer', 'confirmed', 0]]);
      const [created] = await eventsOf(t, w.id, 'transaction.created');
      expect(created!.payload).toMatchObject({ transaction_id: next.body.data.id, tx_hash: next.body.data.tx_hash });
    },
  );
});

describe('ERC-20 transfer', () => {
  let w: FundedWallet;
  const minted = 1_000_000_000n; // 1000 TUSD (6 decimals)

  beforeAll(async () => {
    w = await fundedWallet(t, chain, alice, networkId, ETH);
    const add = await t.request('POST', `/api/wallet/${w.id}/token/add`, { token: alice.token, body: { contract: usd } });
    expect(add.status).toBe(200);
    await mintErc20(chain.rpcUrl, usd, w.address, minted);
  });

  it('sends a token, confirms it and leaves exact token and native balances', async () => {
    const ethBefore = await publicClient(chain.rpcUrl).getBalance({ address: w.address });
    const res = await create(alice, w.id, { amount: 12.345678, token: 'TUSD', address: RECIPIENT });
    expect(res.status).toBe(200);
    expect(res.body.data).toMatchObject({ amount: '12.345678000000000000', symbol: 'TUSD', type: 'transfer', status: 'pending' });
    expect(res.body.data.gas).toBeGreaterThan(21000);
    const done = await waitForStatus(t, alice, w.id, res.body.data.id, 'confirmed');
    expect(done.wallet_token).toMatchObject({ symbol: 'TUSD', decimals: 6, is_native: false, contract: getAddress(usd) });
    // Its event, made before the insert answered (PostgreSQL), shows the row as recorded: its id, the token's decimals.
    const [created] = await eventsOf(t, w.id, 'transaction.created');
    expect(created!.payload).toEqual({
      transaction_id: res.body.data.id,
      wallet_id: w.id,
      amount: '12.345678000000000000',
      token: 'TUSD',
      tx_hash: res.body.data.tx_hash,
      block_number: null,
      status: 'pending',
      type: 'transfer',
      created_at: expect.stringMatching(DATETIME),
    });

    expect(await erc20BalanceOf(chain.rpcUrl, usd, w.address)).toBe(minted - 12_345_678n);
    expect(await erc20BalanceOf(chain.rpcUrl, usd, RECIPIENT)).toBe(12_345_678n);
    const [row] = await t.store.db
      .selectFrom('transactions')
      .select(['gas_price', 'gas_used'])
      .where('id', '=', res.body.data.id)
      .execute();
    const fee = BigInt(row!.gas_price!) * BigInt(row!.gas_used!);
    expect(await publicClient(chain.rpcUrl).getBalance({ address: w.address })).toBe(ethBefore - fee);

    const bal = await waitFor(async () => {
      const r = await t.request('GET', `/api/wallet/${w.id}/balance`, { token: alice.token });
      const tusd = r.body.data?.tokens?.find((x: any) => x.symbol === 'TUSD');
      return tusd?.balance === '987.654322000000000000' ? r : null;
    });
    expect(bal.body.data.balance).toBe(dec18(ethBefore - fee));
  });

  it('checks decimals against the token, and token and native funds separately', async () => {
    const precise = await create(alice, w.id, { amount: '1.1234567', token: 'TUSD', address: RECIPIENT });
    expectValidationError(precise, { amount: ['The amount field must not have more than 6 decimal places.'] });

    const tooMuch = await create(alice, w.id, { amount: '5000', token: 'TUSD', address: RECIPIENT });
    expect(tooMuch.status).toBe(400);
    expect(tooMuch.body.message).toBe('Insufficient balance for transaction');

    const poor = await fundedWallet(t, chain, alice, networkId, 0n);
    await t.request('POST', `/api/wallet/${poor.id}/token/add`, { token: alice.token, body: { contract: usd } });
    await mintErc20(chain.rpcUrl, usd, poor.address, 10_000_000n);
    const noGas = await create(alice, poor.id, { amount: '1', token: 'TUSD', address: RECIPIENT });
    expect(noGas.status).toBe(400);
    expect(noGas.body.message).toBe('Insufficient balance for transaction');
  });
});

describe('validation and order of checks', () => {
  let w: FundedWallet;
  beforeAll(async () => {
    w = await fundedWallet(t, chain, alice, networkId, ETH);
  });

  it('names every missing field with the contract wording', async () => {
    const res = await create(alice, w.id, {});
    expectValidationError(res, {
      amount: ['The amount field is required.'],
      token: ['The token field is required.'],
      address: ['The address field is required.'],
    });
  });

  it.each([
    [{ amount: 'abc' }, 'amount', 'The amount field must be a number.'],
    [{ amount: true }, 'amount', 'The amount field must be a number.'],
    [{ amount: '1e3' }, 'amount', 'The amount field must be a number.'],
    [{ amount: 0 }, 'amount', 'The amount field must be greater than 0.'],
    [{ amount: '-1' }, 'amount', 'The amount field must be greater than 0.'],
    [{ amount: '0.0000000000000000001' }, 'amount', 'The amount field must not have more than 18 decimal places.'],
    [{ token: 'NOPE' }, 'token', 'The selected token is invalid.'],
    [{ token: 5 }, 'token', 'The token field must be a string.'],
    [{ address: '0x123' }, 'address', 'The address field must be a valid address.'],
    [
      { address: '0xa0ee7a142d267c1f36714e4a8f75612f20a79720'.replace('a0ee', 'A0EE') },
      'address',
      'The address field must be a valid address.',
    ],
    [{ address: 12 }, 'address', 'The address field must be a valid address.'],
  ])('%j → %s: %s', async (patch, field, message) => {
    const res = await create(alice, w.id, { amount: '0.1', token: 'ETH', address: RECIPIENT, ...patch });
    expectValidationError(res, { [field]: [message] });
  });

  it('accepts a checksummed, an all-lowercase and an all-uppercase address', async () => {
    for (const address of [RECIPIENT, RECIPIENT.toLowerCase(), `0x${RECIPIENT.slice(2).toUpperCase()}`]) {
      const res = await create(alice, w.id, { amount: '0.0001', token: 'ETH', address });
      expect(res.status, res.text).toBe(200);
    }
  });

  it('answers 404 for a wallet that is missing or not the caller’s, before validating', async () => {
    expect((await create(alice, 999999, {})).body.message).toBe('Wallet not found');
    const other = await create(bob, w.id, {});
    expect(other.status).toBe(404);
    expect(other.body.message).toBe('Wallet not found');
    expect((await t.request('GET', `/api/wallet/${w.id}/transaction`, { token: bob.token })).status).toBe(404);
  });

  it('answers 401 without a token', async () => {
    const res = await t.request('POST', `/api/wallet/${w.id}/transaction/create`, {
      body: { amount: '1', token: 'ETH', address: RECIPIENT },
    });
    expect(res.status).toBe(401);
  });
});

describe('Idempotency-Key', () => {
  let w: FundedWallet;
  beforeAll(async () => {
    w = await fundedWallet(t, chain, alice, networkId, ETH);
  });

  it('replays the first response for the same key and body and sends nothing again', async () => {
    const body = { amount: '0.25', token: 'ETH', address: RECIPIENT };
    const first = await create(alice, w.id, body, { 'idempotency-key': 'pay-1' });
    expect(first.status).toBe(200);
    // Same request with its keys in another order: the same request.
    const again = await create(alice, w.id, { address: RECIPIENT, token: 'ETH', amount: '0.25' }, { 'idempotency-key': 'pay-1' });
    expect(again.status).toBe(200);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(again.text).toBe(first.text);
    await waitForStatus(t, alice, w.id, first.body.data.id, 'confirmed');
    const rows = await txRows(t, w.id);
    expect(rows).toHaveLength(1);
    expect(await publicClient(chain.rpcUrl).getTransactionCount({ address: w.address })).toBe(1);
    expect(await eventsOf(t, w.id, 'transaction.created')).toHaveLength(1);
  });

  it('refuses the same key with another body (422), and keeps keys per user', async () => {
    const res = await create(alice, w.id, { amount: '0.3', token: 'ETH', address: RECIPIENT }, { 'idempotency-key': 'pay-1' });
    expectValidationError(res, { 'Idempotency-Key': ['Idempotency-Key already used with a different request.'] });
    const bobWallet = await fundedWallet(t, chain, bob, networkId, ETH);
    const bobs = await create(bob, bobWallet.id, { amount: '0.01', token: 'ETH', address: RECIPIENT }, { 'idempotency-key': 'pay-1' });
    expect(bobs.status).toBe(200);
  });

  it('replays a 400 business answer, does not store a validation failure of the key itself', async () => {
    const body = { amount: '100', token: 'ETH', address: RECIPIENT };
    const first = await create(alice, w.id, body, { 'idempotency-key': 'too-much' });
    expect(first.status).toBe(400);
    await chain.setBalance(w.address, 1000n * ETH);
    const again = await create(alice, w.id, body, { 'idempotency-key': 'too-much' });
    expect(again.status).toBe(400);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    const bad = await create(alice, w.id, body, { 'idempotency-key': 'x'.repeat(300) });
    expectValidationError(bad, { 'Idempotency-Key': ['The Idempotency-Key header must be 1 to 255 visible ASCII characters.'] });
  });

  it('replays what a create committed even if its process died before answering, and lets a dead claim be retried', async () => {
    const user = await t.store.db.selectFrom('users').select('id').where('email', '=', alice.email).executeTakeFirstOrThrow();
    const path = `/api/wallet/${w.id}/transaction/create`;
    const body = { amount: '0.02', token: 'ETH', address: RECIPIENT };
    const now = Date.now();
    // A request that committed its transaction (the response is stored in the same database
    // transaction) and then died: the retry gets that response, and nothing is sent again.
    const stored = JSON.stringify({ status: 'success', message: 'Transaction created', data: { id: 424242 } });
    await t.store.db
      .insertInto('idempotency_keys')
      .values({
        user_id: user.id,
        key: 'died-after-commit',
        request_hash: requestHash('POST', path, body),
        response_status: 200,
        response_body: stored,
        created_at: now,
        expires_at: now + 60_000,
      })
      .execute();
    const replay = await create(alice, w.id, body, { 'idempotency-key': 'died-after-commit' });
    expect(replay.status).toBe(200);
    expect(replay.text).toBe(stored);
    // A request that died before committing anything, over a minute ago: the retry runs.
    await t.store.db
      .insertInto('idempotency_keys')
      .values({
        user_id: user.id,
        key: 'died-before-commit',
        request_hash: requestHash('POST', path, body),
        response_status: null,
        response_body: null,
        created_at: now - 61_000,
        expires_at: now + 60_000,
      })
      .execute();
    const before = (await txRows(t, w.id)).length;
    const retried = await create(alice, w.id, body, { 'idempotency-key': 'died-before-commit' });
    expect(retried.status).toBe(200);
    expect(retried.headers.get('idempotent-replayed')).toBeNull();
    expect((await txRows(t, w.id)).length).toBe(before + 1);
    // The same claim still young: 409.
    await t.store.db
      .insertInto('idempotency_keys')
      .values({
        user_id: user.id,
        key: 'still-running',
        request_hash: requestHash('POST', path, body),
        response_status: null,
        response_body: null,
        created_at: now,
        expires_at: now + 60_000,
      })
      .execute();
    const busy = await create(alice, w.id, body, { 'idempotency-key': 'still-running' });
    expect(busy.status).toBe(409);
  });

  it('answers 409 to a duplicate while the first is in flight', async () => {
    const body = { amount: '0.01', token: 'ETH', address: RECIPIENT };
    const results = await Promise.all([1, 2, 3, 4].map(() => create(alice, w.id, body, { 'idempotency-key': 'race-1' })));
    const statuses = results.map((r) => r.status).sort();
    expect(statuses.filter((s) => s === 200).length).toBeGreaterThanOrEqual(1);
    expect(statuses.every((s) => s === 200 || s === 409)).toBe(true);
    const ids = new Set(results.filter((r) => r.status === 200).map((r) => r.body.data.id));
    expect(ids.size).toBe(1);
  });
});

describe('list and show', () => {
  let w: FundedWallet;
  const ids: number[] = [];

  beforeAll(async () => {
    w = await fundedWallet(t, chain, alice, networkId, 10n * ETH);
    await t.request('POST', `/api/wallet/${w.id}/token/add`, { token: alice.token, body: { contract: usd } });
    await mintErc20(chain.rpcUrl, usd, w.address, 100_000_000n);
    // The mint is an incoming Transfer: the watcher records it as the wallet's first row.
    const minted = await waitFor(async () => (await txRows(t, w.id)).find((r) => r.type === 'receipt'));
    ids.push(minted.id);
    for (const [amount, token] of [
      ['0.1', 'ETH'],
      ['1', 'TUSD'],
      ['0.2', 'ETH'],
      ['2', 'TUSD'],
      ['0.3', 'ETH'],
    ] as const) {
      const r = await create(alice, w.id, { amount, token, address: RECIPIENT });
      expect(r.status, r.text).toBe(200);
      ids.push(r.body.data.id);
    }
  });

  it('lists newest first with pagination headers and a Link header', async () => {
    const p1 = await t.request('GET', `/api/wallet/${w.id}/transaction?limit=2`, { token: alice.token });
    expect(p1.status).toBe(200);
    expect(p1.body.data.map((x: any) => x.id)).toEqual([ids[5], ids[4]]);
    expect(Object.keys(p1.body.data[0]).sort()).toEqual(LIST_KEYS);
    expect(p1.body.data[0].gas).toBe('21000.000000000000000000');
    expect(p1.body.data[0].gas_price).toMatch(/^0\.\d{18}$/);
    expect(p1.headers.get('x-pagination-page')).toBe('1');
    expect(p1.headers.get('x-pagination-limit')).toBe('2');
    expect(p1.headers.get('x-pagination-total')).toBe('6');
    expect(p1.headers.get('x-pagination-pages')).toBe('3');
    const base = `/api/wallet/${w.id}/transaction`;
    expect(p1.headers.get('link')).toBe(
      `<${base}?page=1&limit=2>; rel="first", <${base}?page=2&limit=2>; rel="next", <${base}?page=3&limit=2>; rel="last"`,
    );

    const p3 = await t.request('GET', `/api/wallet/${w.id}/transaction?page=3&limit=2`, { token: alice.token });
    expect(p3.body.data.map((x: any) => x.id)).toEqual([ids[1], ids[0]]);
    expect(p3.body.data[1]).toMatchObject({ type: 'receipt', status: 'confirmed', symbol: 'TUSD', amount: '100.000000000000000000' });
    expect(p3.headers.get('link')).toBe(
      `<${base}?page=1&limit=2>; rel="first", <${base}?page=2&limit=2>; rel="prev", <${base}?page=3&limit=2>; rel="last"`,
    );
    const p2 = await t.request('GET', `/api/wallet/${w.id}/transaction?page=2&limit=2`, { token: alice.token });
    expect(p2.headers.get('link')).toContain('rel="next"');
    expect(p2.headers.get('link')).toContain('rel="prev"');

    const past = await t.request('GET', `/api/wallet/${w.id}/transaction?page=9&limit=2`, { token: alice.token });
    expect(past.status).toBe(200);
    expect(past.body.data).toEqual([]);

    const all = await t.request('GET', `/api/wallet/${w.id}/transaction`, { token: alice.token });
    expect(all.headers.get('x-pagination-limit')).toBe('10');
    expect(all.body.data).toHaveLength(6);
  });

  it('filters by token symbol', async () => {
    const res = await t.request('GET', `/api/wallet/${w.id}/transaction?token=tusd&limit=1`, { token: alice.token });
    expect(res.body.data.map((x: any) => x.id)).toEqual([ids[4]]);
    expect(res.body.data[0].symbol).toBe('TUSD');
    expect(res.headers.get('x-pagination-total')).toBe('3');
    const last = await t.request('GET', `/api/wallet/${w.id}/transaction?token=TUSD&limit=1&page=3`, { token: alice.token });
    expect(last.body.data.map((x: any) => x.id)).toEqual([ids[0]]);
    expect(res.headers.get('link')).toContain(`</api/wallet/${w.id}/transaction?token=tusd&page=2&limit=1>; rel="next"`);
    const none = await t.request('GET', `/api/wallet/${w.id}/transaction?token=NOPE`, { token: alice.token });
    expect(none.body.data).toEqual([]);
    expect(none.headers.get('x-pagination-total')).toBe('0');
  });

  it.each([
    ['page=0', 'page', 'The page field must be at least 1.'],
    ['page=abc', 'page', 'The page field must be an integer.'],
    ['page=1.5', 'page', 'The page field must be an integer.'],
    ['limit=1001', 'limit', 'The limit field must not be greater than 1000.'],
    ['limit=0', 'limit', 'The limit field must be at least 1.'],
  ])('?%s → 422 %s', async (qs, field, message) => {
    const res = await t.request('GET', `/api/wallet/${w.id}/transaction?${qs}`, { token: alice.token });
    expectValidationError(res, { [field]: [message] });
  });

  it('shows one transaction with its wallet_token, 404 otherwise', async () => {
    const res = await t.request('GET', `/api/wallet/${w.id}/transaction/show/${ids[2]}`, { token: alice.token });
    expect(res.status).toBe(200);
    expect(Object.keys(res.body.data).sort()).toEqual([...LIST_KEYS, 'wallet_token'].sort());
    expect(res.body.data.wallet_token).toMatchObject({ symbol: 'TUSD', contract: getAddress(usd) });
    for (const path of [`show/999999`, `show/abc`, `show/0`]) {
      const r = await t.request('GET', `/api/wallet/${w.id}/transaction/${path}`, { token: alice.token });
      expect(r.status).toBe(404);
      expect(r.body).toEqual({ status: 'error', message: 'Transaction not found', data: null });
    }
    // Another wallet's transaction is not found through this wallet.
    const other = await fundedWallet(t, chain, alice, networkId, 0n);
    expect((await t.request('GET', `/api/wallet/${other.id}/transaction/show/${ids[1]}`, { token: alice.token })).status).toBe(404);
    // Another user: the wallet is not found first.
    const bobs = await t.request('GET', `/api/wallet/${w.id}/transaction/show/${ids[1]}`, { token: bob.token });
    expect(bobs.body.message).toBe('Wallet not found');
  });

  it('never returns raw_tx, wallet_id, token_id, input or info', async () => {
    const res = await t.request('GET', `/api/wallet/${w.id}/transaction?limit=100`, { token: alice.token });
    for (const field of ['raw_tx', 'wallet_id', 'token_id', 'input', 'info', 'error', 'seq']) expect(res.text).not.toContain(`"${field}"`);
  });
});
