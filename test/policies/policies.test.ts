/**
 * Spending policies and the allowlist (docs/money-out.md, "The policy"), through
 * HTTP with a real anvil, on SQLite and (DATABASE_URL) PostgreSQL:
 * - the policy and allowlist routes: defaults, changes, `null` removing a limit, 422s, login
 *   token only for changes (an API key gets 403), another user's wallet 404 on every route;
 * - each refusal (per-transaction, daily, allowlist) sends nothing (the node's nonce and the
 *   recipient's balance unchanged); accepted transfers reach the chain with their exact amounts;
 * - a contract call is policed by its value and its contract address;
 * - 20 concurrent creates against a daily limit that admits 5: exactly 5 accepted.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { getAddress, type Address } from 'viem';
import { startTestApp, type TestApp, type TestUser } from '../helpers/app.js';
import { startTestChain, type TestChain } from '../helpers/chain.js';
import { waitFor } from '../helpers/wait.js';
import { ETH, fundedWallet, publicClient, RECIPIENT, waitForCursor, waitForStatus, type FundedWallet } from '../helpers/transfers.js';
import { expectFiveUnderDaily, policyApi, race20, refusal } from './support.js';

/** An address whose code is a bare STOP: any call with any value succeeds (a payable contract). */
const SINK: Address = '0x00000000000000000000000000000000000c0de5';
const OTHER: Address = '0x1111111111111111111111111111111111111111';

let t: TestApp;
let chain: TestChain;
let user: TestUser;
let stranger: TestUser;
let networkId: number;

beforeAll(async () => {
  chain = await startTestChain();
  t = await startTestApp({ workers: true });
  networkId = await chain.register(t);
  await waitForCursor(t, networkId);
  user = await t.createUser();
  stranger = await t.createUser();
  await chain.rpc('anvil_setCode', [SINK, '0x00']);
});

afterAll(async () => {
  await t?.close();
  await chain?.stop();
});

async function apiKey(scopes: string[]): Promise<string> {
  const res = await t.request('POST', '/api/auth/key/create', { token: user.token, body: { name: `k-${scopes.join()}`, scopes } });
  expect(res.status, res.text).toBe(200);
  return res.body.data.key as string;
}

/** What the chain says about the wallet: nonce used and balances of the recipients. */
async function chainView(w: FundedWallet) {
  const c = publicClient(chain.rpcUrl);
  return {
    nonce: await c.getTransactionCount({ address: w.address }),
    recipient: await c.getBalance({ address: RECIPIENT }),
    sink: await c.getBalance({ address: SINK }),
  };
}

describe('the policy and allowlist routes', () => {
  let w: FundedWallet;
  let api: ReturnType<typeof policyApi>;
  beforeAll(async () => {
    w = await fundedWallet(t, chain, user, networkId, 10n * ETH);
    api = policyApi(t, w.id, user.token);
  });

  it('a new wallet has an empty policy and an empty allowlist', async () => {
    const res = await api.policy();
    expect([res.status, res.body.data]).toEqual([
      200,
      { per_transaction: {}, daily: {}, approval_above: {}, allowlist_only: false, updated_at: null },
    ]);
    expect((await api.allowlist()).body.data).toEqual([]);
  });

  it('sets limits as 18-place amounts, keeps the ones not named, removes one with null', async () => {
    const set = await api.setPolicy({
      per_transaction: { eth: '1.5' },
      daily: { ETH: 3 },
      approval_above: { ETH: '0.25' },
      allowlist_only: false,
    });
    expect(set.status, set.text).toBe(200);
    expect(set.body.data).toMatchObject({
      per_transaction: { ETH: '1.500000000000000000' },
      daily: { ETH: '3.000000000000000000' },
      approval_above: { ETH: '0.250000000000000000' },
      allowlist_only: false,
    });
    expect(set.body.data.updated_at).toMatch(/^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d$/);
    const removed = await api.setPolicy({ approval_above: { ETH: null } });
    expect(removed.body.data).toMatchObject({
      per_transaction: { ETH: '1.500000000000000000' },
      daily: { ETH: '3.000000000000000000' },
      approval_above: {},
    });
    expect((await api.policy()).body.data).toEqual(removed.body.data);
    await api.setPolicy({ per_transaction: { ETH: null }, daily: { ETH: null } });
    expect((await api.policy()).body.data).toMatchObject({ per_transaction: {}, daily: {}, approval_above: {} });
  });

  it('refuses an unknown symbol and amounts not valid for the token (422), changing nothing', async () => {
    const cases: [Record<string, unknown>, Record<string, string[]>][] = [
      [{ daily: { DAI: '1' } }, { 'daily.DAI': ['The selected token is invalid.'] }],
      [
        { per_transaction: { ETH: '0.0000000000000000001' } },
        { 'per_transaction.ETH': ['The per_transaction.ETH field must not have more than 18 decimal places.'] },
      ],
      [{ per_transaction: { ETH: '-1' } }, { 'per_transaction.ETH': ['The per_transaction.ETH field must be greater than 0.'] }],
      [{ daily: { ETH: 'lots' } }, { 'daily.ETH': ['The daily.ETH field must be a number.'] }],
    ];
    for (const [body, errors] of cases) {
      const res = await api.setPolicy(body);
      expect([res.status, res.body.data]).toEqual([422, errors]);
    }
    expect((await api.policy()).body.data).toMatchObject({ per_transaction: {}, daily: {} });
  });

  it("adds and removes allowlist entries; a bad or duplicate address is 422; another wallet's entry 404", async () => {
    const added = await api.add({ address: RECIPIENT.toLowerCase(), label: 'Supplier' });
    expect(added.status, added.text).toBe(200);
    expect(added.body.data).toMatchObject({ address: getAddress(RECIPIENT), label: 'Supplier' });
    expect(Object.keys(added.body.data).sort()).toEqual(['address', 'created_at', 'id', 'label']);
    const dup = await api.add({ address: RECIPIENT, label: 'Again' });
    expect([dup.status, dup.body.data]).toEqual([422, { address: ['The address has already been taken.'] }]);
    for (const address of ['0x123', '0x0000000000000000000000000000000000000000', 42]) {
      const bad = await api.add({ address, label: 'x' });
      expect([bad.status, bad.body.data]).toEqual([422, { address: ['The address field must be a valid address.'] }]);
    }
    expect((await api.allowlist()).body.data).toEqual([added.body.data]);

    const other = await fundedWallet(t, chain, user, networkId, 0n);
    const otherEntry = (await policyApi(t, other.id, user.token).add({ address: OTHER, label: 'Other' })).body.data;
    expect([(await api.remove(otherEntry.id)).status, (await api.remove(otherEntry.id)).body]).toEqual([
      404,
      refusal('Allowlist entry not found'),
    ]);
    expect((await api.remove(999999)).body).toEqual(refusal('Allowlist entry not found'));
    const removed = await api.remove(added.body.data.id);
    expect([removed.status, removed.body.data]).toEqual([200, added.body.data]);
    expect((await api.allowlist()).body.data).toEqual([]);
  });

  it('changes need a login token: any API key gets 403 Insufficient scope; reading needs `read`', async () => {
    const star = await apiKey(['*']);
    const read = await apiKey(['read']);
    const entry = (await api.add({ address: OTHER, label: 'x' })).body.data;
    const asKey = policyApi(t, w.id, star);
    for (const res of [
      await asKey.setPolicy({ daily: { ETH: null }, allowlist_only: false }),
      await asKey.add({ address: SINK, label: 'k' }),
      await asKey.remove(entry.id),
    ]) {
      expect([res.status, res.body]).toEqual([403, refusal('Insufficient scope')]);
    }
    const asRead = policyApi(t, w.id, read);
    expect((await asRead.policy()).status).toBe(200);
    expect((await asRead.allowlist()).body.data).toEqual([entry]);
    expect((await api.remove(entry.id)).status).toBe(200);
  });

  it("another user's wallet is 404 Wallet not found on every route", async () => {
    const asStranger = policyApi(t, w.id, stranger.token);
    const answers = [
      await asStranger.policy(),
      await asStranger.setPolicy({ allowlist_only: true }),
      await asStranger.allowlist(),
      await asStranger.add({ address: OTHER, label: 'x' }),
      await asStranger.remove(1),
    ];
    for (const res of answers) expect([res.status, res.body]).toEqual([404, refusal('Wallet not found')]);
    expect((await api.policy()).body.data.allowlist_only).toBe(false);
  });
});

describe('enforcement on creates', () => {
  it('over the per-transaction limit: 400, nothing sent; at the limit: sent exactly', async () => {
    const w = await fundedWallet(t, chain, user, networkId, 10n * ETH);
    const api = policyApi(t, w.id, user.token);
    expect((await api.setPolicy({ per_transaction: { ETH: '1' } })).status).toBe(200);
    const before = await chainView(w);
    const refused = await api.create({ amount: '1.000000000000000001', token: 'ETH', address: RECIPIENT });
    expect([refused.status, refused.body]).toEqual([400, refusal('Policy: over the per-transaction limit')]);
    expect(await chainView(w)).toEqual(before);
    const rows = await t.store.db.selectFrom('transactions').select('id').where('wallet_id', '=', w.id).execute();
    expect(rows).toEqual([]);

    const sent = await api.create({ amount: '1', token: 'ETH', address: RECIPIENT });
    expect(sent.status, sent.text).toBe(200);
    const tx = await publicClient(chain.rpcUrl).waitForTransactionReceipt({ hash: sent.body.data.tx_hash });
    expect(tx.status).toBe('success');
    expect((await chainView(w)).recipient).toBe(before.recipient + ETH);
  });

  it('over the daily limit (pending and confirmed of the last 24 hours counted): 400, nothing sent', async () => {
    const w = await fundedWallet(t, chain, user, networkId, 10n * ETH);
    const api = policyApi(t, w.id, user.token);
    expect((await api.setPolicy({ daily: { ETH: '2' } })).status).toBe(200);
    const start = await chainView(w);
    expect((await api.create({ amount: '1.5', token: 'ETH', address: RECIPIENT })).status).toBe(200);
    expect((await api.create({ amount: '0.5', token: 'ETH', address: RECIPIENT })).status).toBe(200);
    // Both mined before the chain is read (a broadcast under load can land after the 200; once in CI it read nonce 1).
    const before = await waitFor(async () => {
      const v = await chainView(w);
      return v.nonce >= 2 ? v : null;
    });
    const refused = await api.create({ amount: '0.000000000000000001', token: 'ETH', address: RECIPIENT });
    expect([refused.status, refused.body]).toEqual([400, refusal('Policy: over the daily limit')]);
    expect(await chainView(w)).toEqual(before);
    expect(before.recipient).toBe(start.recipient + 2n * ETH);
    expect(before.nonce).toBe(2);

    // Raising the limit lets the next one through.
    await api.setPolicy({ daily: { ETH: '2.5' } });
    expect((await api.create({ amount: '0.5', token: 'ETH', address: RECIPIENT })).status).toBe(200);
  });

  it('the daily sum counts a pending transfer, and not a failed one (a cancelled transfer frees its share)', async () => {
    const w = await fundedWallet(t, chain, user, networkId, 10n * ETH);
    const api = policyApi(t, w.id, user.token);
    await api.setPolicy({ daily: { ETH: '1' } });
    await chain.rpc('evm_setAutomine', [false]);
    try {
      const first = await api.create({ amount: '1', token: 'ETH', address: RECIPIENT });
      expect(first.status, first.text).toBe(200);
      // In the pool, not mined: counted.
      expect((await api.create({ amount: '0.1', token: 'ETH', address: RECIPIENT })).body).toEqual(refusal('Policy: over the daily limit'));
      const cancel = await t.request('POST', `/api/wallet/${w.id}/transaction/${first.body.data.id}/cancel`, {
        token: user.token,
        body: {},
      });
      expect(cancel.status, cancel.text).toBe(200);
      await chain.mine(1);
      expect(await waitForStatus(t, user, w.id, first.body.data.id, 'failed')).toMatchObject({ failure_reason: 'cancelled' });
    } finally {
      await chain.rpc('evm_setAutomine', [true]);
    }
    const before = await chainView(w);
    const again = await api.create({ amount: '1', token: 'ETH', address: RECIPIENT });
    expect(again.status, again.text).toBe(200);
    await publicClient(chain.rpcUrl).waitForTransactionReceipt({ hash: again.body.data.tx_hash });
    expect((await chainView(w)).recipient).toBe(before.recipient + ETH);
  });

  it('with allowlist_only, an address not on the list: 400, nothing sent; once listed: sent', async () => {
    const w = await fundedWallet(t, chain, user, networkId, 10n * ETH);
    const api = policyApi(t, w.id, user.token);
    expect((await api.setPolicy({ allowlist_only: true })).body.data.allowlist_only).toBe(true);
    const before = await chainView(w);
    const refused = await api.create({ amount: '0.1', token: 'ETH', address: RECIPIENT });
    expect([refused.status, refused.body]).toEqual([400, refusal('Policy: address not on the allowlist')]);
    expect(await chainView(w)).toEqual(before);

    expect((await api.add({ address: RECIPIENT.toLowerCase(), label: 'Supplier' })).status).toBe(200);
    const sent = await api.create({ amount: '0.1', token: 'ETH', address: RECIPIENT });
    expect(sent.status, sent.text).toBe(200);
    await publicClient(chain.rpcUrl).waitForTransactionReceipt({ hash: sent.body.data.tx_hash });
    expect((await chainView(w)).recipient).toBe(before.recipient + ETH / 10n);
    // Validation comes first: a bad body is 422, not the policy's 400.
    expect((await api.create({ amount: '0.1', token: 'ETH', address: '0x12' })).status).toBe(422);
  });

  it('a contract call is policed by its value and its contract address', async () => {
    const w = await fundedWallet(t, chain, user, networkId, 10n * ETH);
    const api = policyApi(t, w.id, user.token);
    await api.setPolicy({ per_transaction: { ETH: '1' }, allowlist_only: true });
    const call = (amount: string) => api.create({ amount, token: 'ETH', address: SINK, data: '0x12345678' });
    const before = await chainView(w);
    expect((await call('0.5')).body).toEqual(refusal('Policy: address not on the allowlist'));
    await api.add({ address: SINK, label: 'Payable contract' });
    expect((await call('2')).body).toEqual(refusal('Policy: over the per-transaction limit'));
    expect(await chainView(w)).toEqual(before);
    const sent = await call('0.5');
    expect(sent.status, sent.text).toBe(200);
    expect(sent.body.data.type).toBe('contract');
    await publicClient(chain.rpcUrl).waitForTransactionReceipt({ hash: sent.body.data.tx_hash });
    expect((await chainView(w)).sink).toBe(before.sink + ETH / 2n);
  });

  it('20 concurrent creates against a daily limit that admits 5: exactly 5 accepted', async () => {
    const w = await fundedWallet(t, chain, user, networkId, 10n * ETH);
    await policyApi(t, w.id, user.token).setPolicy({ daily: { ETH: '0.5' } });
    const before = (await chainView(w)).recipient;
    await expectFiveUnderDaily(chain, w, await race20([t], user, w.id), before);
  });
});
