/**
 * Payouts (docs/money-out.md, "Payouts", and a payout's approval), through HTTP with a real anvil, on
 * SQLite and (DATABASE_URL) PostgreSQL, the chain checked every time:
 * - validation names `items.N.<field>`; 1 to 500 items; a reference is unique per wallet (a
 *   repeat in the request or of an earlier payout is 422 on `items.N.reference`);
 * - the total and every item's maximum fee are checked at once: 400 `Insufficient balance for
 *   payout` with nothing recorded or sent;
 * - each item becomes a transaction of its own, in item order (nonces in item order), carrying
 *   `payout_id` and `reference` in its object and its events; exact amounts at the recipients
 *   (native and ERC-20); the payout goes `processing` → `completed`;
 * - an item refused when its turn comes fails alone, the others go on: `partially_failed`;
 * - a total over `approval_above` waits (nothing sent): approve (login token only) sends it,
 *   reject fails it with nothing sent, APPROVAL_TTL_S expires it;
 * - another user's wallet is 404, another wallet's payout is 404.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseEther, parseUnits, type Address } from 'viem';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { ManualClock, startTestApp, type TestApp, type TestUser } from '../helpers/app.js';
import { startTestChain, type TestChain } from '../helpers/chain.js';
import { waitFor } from '../helpers/wait.js';
import { expectValidationError } from '../helpers/expect.js';
import { deployErc20, erc20BalanceOf, mintErc20 } from '../helpers/erc20.js';
import { balanceOf } from '../charges/support.js';
import { eventsOf, fundedWallet, type FundedWallet } from '../helpers/transfers.js';

const clock = new ManualClock();
let chain: TestChain;
let t: TestApp;
let user: TestUser;
let stranger: TestUser;
let networkId: number;

beforeAll(async () => {
  chain = await startTestChain();
  t = await startTestApp({ clock, env: { WATCHER_POLL_MS: '50', APPROVAL_TTL_S: '600' } });
  networkId = await chain.register(t);
  user = await t.createUser();
  stranger = await t.createUser();
  t.startWorkers();
  await waitFor(
    () => t.store.db.selectFrom('chain_cursors').select('block_number').where('network_id', '=', networkId).executeTakeFirst(),
    { message: 'watcher cursor' },
  );
});

afterAll(async () => {
  await t?.close();
  await chain?.stop();
});

const fresh = (): Address => privateKeyToAccount(generatePrivateKey()).address;
const refusal = (message: string) => ({ status: 'error', message, data: null });
const create = (w: { id: number }, body: Record<string, unknown>, token = user.token) =>
  t.request('POST', `/api/wallet/${w.id}/payout/create`, { token, body });
const show = (w: { id: number }, id: number, token = user.token) => t.request('GET', `/api/wallet/${w.id}/payout/${id}`, { token });
const until = (w: { id: number }, id: number, status: string) =>
  waitFor(
    async () => {
      const r = await show(w, id);
      return r.body.data?.status === status ? r.body.data : null;
    },
    { timeoutMs: 30_000, message: `payout ${id} ${status}` },
  );
const sentCount = async (walletId: number) =>
  (await t.store.db.selectFrom('transactions').select('id').where('wallet_id', '=', walletId).where('type', '!=', 'receipt').execute())
    .length;

describe('payout create', () => {
  let w: FundedWallet;
  beforeAll(async () => {
    w = await fundedWallet(t, chain, user, networkId, parseEther('2'));
  });

  it('names every failing field items.N.<field>, and takes 1 to 500 items', async () => {
    const res = await create(w, {
      token: 'ETH',
      items: [
        { address: fresh(), amount: '0.1', reference: 'a' },
        { address: '0x12', amount: '-1' },
        { address: fresh(), amount: '0.1', reference: 'a' },
        'x',
      ],
    });
    expect(res.status, res.text).toBe(422);
    expect(res.body.data).toEqual({
      'items.1.address': ['The items.1.address field must be a valid address.'],
      'items.1.amount': [expect.stringMatching(/^The items\.1\.amount field must be/)],
      'items.2.reference': ['The items.2.reference field has already been taken.'],
      'items.3': ['The items.3 field must be an object.'],
    });
    expectValidationError(await create(w, { token: 'ETH', items: [] }), { items: ['The items field must have at least 1 items.'] });
    const many = Array.from({ length: 501 }, () => ({ address: fresh(), amount: '0.000001' }));
    expectValidationError(await create(w, { token: 'ETH', items: many }), {
      items: ['The items field must not have more than 500 items.'],
    });
    expectValidationError(await create(w, { token: 'DOGE', items: [{ address: fresh(), amount: '1' }] }), {
      token: ['The selected token is invalid.'],
    });
    expect(await sentCount(w.id)).toBe(0);
  });

  it('refuses a total the balance does not cover, with nothing recorded or sent', async () => {
    const res = await create(w, {
      token: 'ETH',
      items: [
        { address: fresh(), amount: '1.5' },
        { address: fresh(), amount: '0.5' },
      ],
    });
    expect([res.status, res.body]).toEqual([400, refusal('Insufficient balance for payout')]);
    expect(await t.store.db.selectFrom('payouts').select('id').where('wallet_id', '=', w.id).execute()).toEqual([]);
    expect(await sentCount(w.id)).toBe(0);
  });

  it('sends each item as its own transaction in item order, with payout_id and reference, exact amounts', async () => {
    const to = [fresh(), fresh(), fresh()];
    const res = await create(w, {
      token: 'ETH',
      fee_level: 'high',
      items: [
        { address: to[0], amount: '0.1', reference: 'inv-1' },
        { address: to[1], amount: '0.2', reference: 'inv-2' },
        { address: to[2], amount: '0.000000000000000001' },
      ],
    });
    expect(res.status, res.text).toBe(200);
    expect(res.body.message).toBe('Payout created');
    const p = res.body.data;
    expect(p).toMatchObject({ token: 'ETH', status: 'processing', total: '0.300000000000000001', completed_at: null });
    expect(p.items.map((i: any) => [i.address, i.amount, i.reference, i.status])).toEqual([
      [to[0], '0.100000000000000000', 'inv-1', 'queued'],
      [to[1], '0.200000000000000000', 'inv-2', 'queued'],
      [to[2], '0.000000000000000001', null, 'queued'],
    ]);
    const done = await until(w, p.id, 'completed');
    expect(done.completed_at).toMatch(/^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d$/);
    expect([await balanceOf(chain, to[0]!), await balanceOf(chain, to[1]!), await balanceOf(chain, to[2]!)]).toEqual([
      parseEther('0.1'),
      parseEther('0.2'),
      1n,
    ]);
    const txs = await Promise.all(
      done.items.map((i: any) => t.request('GET', `/api/wallet/${w.id}/transaction/show/${i.transaction_id}`, { token: user.token })),
    );
    expect(txs.map((x) => [x.body.data.payout_id, x.body.data.reference, x.body.data.status])).toEqual([
      [p.id, 'inv-1', 'confirmed'],
      [p.id, 'inv-2', 'confirmed'],
      [p.id, null, 'confirmed'],
    ]);
    const nonces = txs.map((x) => x.body.data.nonce);
    expect(nonces).toEqual([...nonces].sort((a, b) => a - b));
    expect(done.items.map((i: any) => i.tx_hash)).toEqual(txs.map((x) => x.body.data.tx_hash));
    const created = (await eventsOf(t, w.id, 'transaction.created')).filter((e) => e.payload.payout_id === p.id);
    expect(created.map((e) => e.payload.reference)).toEqual(['inv-1', 'inv-2', null]);
    // The list, newest first, and a repeated reference.
    const list = await t.request('GET', `/api/wallet/${w.id}/payout`, { token: user.token });
    expect(list.body.data[0]).toEqual(done);
    const again = await create(w, { token: 'ETH', items: [{ address: fresh(), amount: '0.01', reference: 'inv-2' }] });
    expectValidationError(again, { 'items.0.reference': ['The items.0.reference has already been taken.'] });
  });

  it('an item refused when its turn comes fails alone: partially_failed', async () => {
    const contract = await deployErc20(chain.rpcUrl, { name: 'Sink', symbol: 'SNK', decimals: 18 }); // takes no ether: its transfer would revert
    const to = [fresh(), fresh()];
    const res = await create(w, {
      token: 'ETH',
      items: [
        { address: to[0], amount: '0.01' },
        { address: contract, amount: '0.01' },
        { address: to[1], amount: '0.02' },
      ],
    });
    expect(res.status, res.text).toBe(200);
    const done = await until(w, res.body.data.id, 'partially_failed');
    expect(done.items.map((i: any) => [i.status, i.failure_reason])).toEqual([
      ['confirmed', null],
      ['failed', 'refused'],
      ['confirmed', null],
    ]);
    expect(done.items[1].transaction_id).toBeNull();
    expect(done.items[1].error).toMatch(/revert|Insufficient/i);
    expect([await balanceOf(chain, to[0]!), await balanceOf(chain, contract), await balanceOf(chain, to[1]!)]).toEqual([
      parseEther('0.01'),
      0n,
      parseEther('0.02'),
    ]);
  });

  it('pays ERC-20 items to the base unit', async () => {
    const token = await deployErc20(chain.rpcUrl, { name: 'Payout USD', symbol: 'PUSD', decimals: 6 });
    await mintErc20(chain.rpcUrl, token, w.address, parseUnits('100', 6));
    const added = await t.request('POST', `/api/wallet/${w.id}/token/add`, { token: user.token, body: { contract: token } });
    expect(added.status, added.text).toBe(200);
    const to = [fresh(), fresh()];
    const res = await create(w, {
      token: 'PUSD',
      items: [
        { address: to[0], amount: '12.345678' },
        { address: to[1], amount: '0.000001' },
      ],
    });
    expect(res.status, res.text).toBe(200);
    await until(w, res.body.data.id, 'completed');
    expect([await erc20BalanceOf(chain.rpcUrl, token, to[0]!), await erc20BalanceOf(chain.rpcUrl, token, to[1]!)]).toEqual([
      12_345_678n,
      1n,
    ]);
  });

  it('hides payouts from another user and another wallet', async () => {
    const p = (await t.store.db.selectFrom('payouts').select('id').where('wallet_id', '=', w.id).executeTakeFirstOrThrow()).id;
    expect((await show(w, Number(p), stranger.token)).body.message).toBe('Wallet not found');
    const other = await fundedWallet(t, chain, user, networkId, parseEther('1'));
    const r = await show(other, Number(p));
    expect([r.status, r.body.message]).toEqual([404, 'Payout not found']);
    expect((await t.request('GET', `/api/wallet/${other.id}/payout`, { token: user.token })).body.data).toEqual([]);
  });
});

describe('payout approval', () => {
  let w: FundedWallet;
  beforeAll(async () => {
    w = await fundedWallet(t, chain, user, networkId, parseEther('3'));
    const set = await t.request('POST', `/api/wallet/${w.id}/policy`, { token: user.token, body: { approval_above: { ETH: '0.5' } } });
    expect(set.status, set.text).toBe(200);
  });

  it('a total over approval_above waits with nothing sent; an API key cannot approve; approve sends it', async () => {
    const to = [fresh(), fresh()];
    const res = await create(w, {
      token: 'ETH',
      items: [
        { address: to[0], amount: '0.3' },
        { address: to[1], amount: '0.3' },
      ],
    });
    expect([res.status, res.body.data?.status], res.text).toEqual([200, 'awaiting_approval']);
    expect(res.body.data.items.map((i: any) => i.status)).toEqual(['awaiting_approval', 'awaiting_approval']);
    const key = (await t.request('POST', '/api/auth/key/create', { token: user.token, body: { name: 'payouts', scopes: ['*'] } })).body.data
      .key;
    const byKey = await t.request('POST', `/api/wallet/${w.id}/payout/${res.body.data.id}/approve`, { token: key, body: {} });
    expect([byKey.status, byKey.body.message]).toEqual([403, 'Insufficient scope']);
    await new Promise((r) => setTimeout(r, 500)); // the worker's passes: still nothing may go out
    expect(await sentCount(w.id)).toBe(0);
    const ok = await t.request('POST', `/api/wallet/${w.id}/payout/${res.body.data.id}/approve`, { token: user.token, body: {} });
    expect([ok.status, ok.body.message, ok.body.data.status], ok.text).toEqual([200, 'Payout approved', 'processing']);
    await until(w, res.body.data.id, 'completed');
    expect([await balanceOf(chain, to[0]!), await balanceOf(chain, to[1]!)]).toEqual([parseEther('0.3'), parseEther('0.3')]);
    const twice = await t.request('POST', `/api/wallet/${w.id}/payout/${res.body.data.id}/approve`, { token: user.token, body: {} });
    expect([twice.status, twice.body]).toEqual([400, refusal('Payout is not awaiting approval')]);
  });

  it('reject fails it with nothing sent; undecided within APPROVAL_TTL_S it expires', async () => {
    const before = await sentCount(w.id);
    const a = (await create(w, { token: 'ETH', items: [{ address: fresh(), amount: '0.6' }] })).body.data;
    const rejected = await t.request('POST', `/api/wallet/${w.id}/payout/${a.id}/reject`, { token: user.token, body: {} });
    expect([rejected.status, rejected.body.data.status, rejected.body.data.items[0].failure_reason]).toEqual([
      200,
      'failed',
      'rejected_by_approver',
    ]);
    const b = (await create(w, { token: 'ETH', items: [{ address: fresh(), amount: '0.7' }] })).body.data;
    clock.advance(600_000);
    const expired = await until(w, b.id, 'failed');
    expect(expired.items[0].failure_reason).toBe('approval_expired');
    const late = await t.request('POST', `/api/wallet/${w.id}/payout/${b.id}/approve`, { token: user.token, body: {} });
    expect([late.status, late.body]).toEqual([400, refusal('Payout is not awaiting approval')]);
    expect(await sentCount(w.id)).toBe(before);
  });
});
