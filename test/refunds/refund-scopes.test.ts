/**
 * Who may refund, and who sees a refund's link (docs/money-out.md, "Refunds"; issue 47), through
 * HTTP with a real anvil, on SQLite and (DATABASE_URL) PostgreSQL:
 * - a refund with an `address` moves money at once: an API key needs `transactions:write` as
 *   well as the route's `charges:write` (403 `Insufficient scope` with either alone, nothing
 *   recorded or sent); both scopes, `*` or a login token send it;
 * - that 403 comes right after the route's scope: before the wallet's 404 (another user's
 *   wallet), the 422 of a malformed address and the Idempotency-Key (a 403 is not stored);
 * - a claim (no address) still needs `charges:write` only;
 * - a refund's `uuid` and `claim_url` are null to a key without `charges:write` or
 *   `transactions:write` (a `read` key, `read` with `webhooks:write`) on the charge list and the
 *   charge detail; a login token and keys with either scope see them.
 * Each test fails without the fix: a `charges:write` key's refund with an address was sent, and
 * a `read` key saw every claim link.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseEther, type Address } from 'viem';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import type { KeyScope } from '../../src/modules/keys/keys.scopes.js';
import { ManualClock, startTestApp, type TestApp, type TestUser } from '../helpers/app.js';
import { startTestChain, type TestChain } from '../helpers/chain.js';
import { waitFor } from '../helpers/wait.js';
import { balanceOf, chargeApi, clockToChain, pay } from '../charges/support.js';
import { waitForStatus } from '../helpers/transfers.js';

const clock = new ManualClock();
let chain: TestChain;
let t: TestApp;
let user: TestUser;
let stranger: TestUser;
let networkId: number;

beforeAll(async () => {
  chain = await startTestChain();
  t = await startTestApp({ clock, env: { CHARGES_POLL_MS: '50', WATCHER_POLL_MS: '50' } });
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

const freshAddress = (): Address => privateKeyToAccount(generatePrivateKey()).address;
const insufficientScope = { status: 'error', message: 'Insufficient scope', data: null };

async function apiKey(scopes: KeyScope[], owner: TestUser = user): Promise<string> {
  const res = await t.request('POST', '/api/auth/key/create', { token: owner.token, body: { name: `key ${scopes.join(' ')}`, scopes } });
  expect(res.status, res.text).toBe(200);
  return res.body.data.key;
}

/** A wallet of `owner` with 1 ETH on its main address (the refunds' gas) and a charge paid `paid` ETH. */
async function paidCharge(paid: string, owner: TestUser = user) {
  const w = (
    await t.request('POST', '/api/wallet/create', { token: owner.token, body: { name: `shop-${Date.now()}`, network_id: networkId } })
  ).body.data;
  await chain.setBalance(w.address, parseEther('1'));
  const api = chargeApi(t, w.id, owner.token);
  await clockToChain(clock, chain);
  const c = await api.create({ amount: paid, token: 'ETH', expires: 3600 });
  await pay(chain.rpcUrl, c.address, parseEther(paid));
  await api.until(c.id, (x) => x.status === 'paid', 'charge paid');
  return { walletId: w.id as number, charge: c as { id: number; uuid: string } };
}

const refund = (walletId: number, charge: number, body: Record<string, unknown>, token: string, headers: Record<string, string> = {}) =>
  t.request('POST', `/api/wallet/${walletId}/charge/${charge}/refund`, { token, body, headers });

/** What the refund attempts left: refund rows of the charge, and transfers of the wallet. */
async function recorded(walletId: number, chargeId: number) {
  const refunds = await t.store.db.selectFrom('refunds').select('id').where('charge_id', '=', chargeId).execute();
  const transfers = await t.store.db
    .selectFrom('transactions')
    .select('id')
    .where('wallet_id', '=', walletId)
    .where('type', '=', 'transfer')
    .execute();
  return { refunds: refunds.length, transfers: transfers.length };
}

describe('who may refund', () => {
  it('a refund with an address needs transactions:write besides charges:write: 403 with either alone, nothing recorded or sent', async () => {
    const { walletId, charge } = await paidCharge('0.4');
    const to = freshAddress();
    for (const scopes of [
      ['charges:write'],
      ['read', 'charges:write', 'wallets:write', 'webhooks:write'],
      ['transactions:write'],
    ] as KeyScope[][]) {
      const res = await refund(walletId, charge.id, { amount: '0.1', address: to }, await apiKey(scopes));
      expect([res.status, res.body], `${scopes.join(',')}: ${res.text}`).toEqual([403, insufficientScope]);
    }
    expect(await recorded(walletId, charge.id)).toEqual({ refunds: 0, transfers: 0 });
    expect(await balanceOf(chain, to)).toBe(0n);

    // Both scopes, `*`, a login token: sent, each 0.1 ETH.
    const sent = [];
    for (const token of [await apiKey(['charges:write', 'transactions:write']), await apiKey(['*']), user.token]) {
      const res = await refund(walletId, charge.id, { amount: '0.1', address: to }, token);
      expect(res.status, res.text).toBe(200);
      expect(res.body.data).toMatchObject({ address: to, uuid: expect.stringMatching(/^[0-9a-f-]{36}$/), claim_url: null });
      sent.push(res.body.data.transaction_id as number);
    }
    for (const id of sent) await waitForStatus(t, user, walletId, id, 'confirmed');
    expect(await balanceOf(chain, to)).toBe(parseEther('0.3'));
    expect(await recorded(walletId, charge.id)).toEqual({ refunds: 3, transfers: 3 });
  });

  it('the address check comes before the wallet’s 404, the 422 and the Idempotency-Key; a claim needs charges:write only', async () => {
    const { walletId, charge } = await paidCharge('0.2');
    const other = await paidCharge('0.1', stranger);
    const key = await apiKey(['charges:write']);

    // Another user's wallet and charge: 403, not 404 (scope before path objects).
    const foreign = await refund(other.walletId, other.charge.id, { address: freshAddress() }, key);
    expect([foreign.status, foreign.body], foreign.text).toEqual([403, insufficientScope]);
    // A malformed address is still a refund with an address: 403, not 422.
    const malformed = await refund(walletId, charge.id, { amount: '-1', address: '0xnope' }, key);
    expect([malformed.status, malformed.body], malformed.text).toEqual([403, insufficientScope]);
    // With an Idempotency-Key: 403, and the key is not taken (the login token's refund uses it).
    const keyed = await refund(walletId, charge.id, { amount: '0.05', address: freshAddress() }, key, { 'idempotency-key': 'scope-1' });
    expect([keyed.status, keyed.body], keyed.text).toEqual([403, insufficientScope]);
    expect(await recorded(walletId, charge.id)).toEqual({ refunds: 0, transfers: 0 });

    // A claim with the same key: created, its link shown (the key may write charges).
    const claim = await refund(walletId, charge.id, { amount: '0.05', reason: 'Out of stock' }, key, { 'idempotency-key': 'scope-1' });
    expect(claim.status, claim.text).toBe(200);
    expect(claim.headers.get('idempotent-replayed')).toBeNull();
    expect(claim.body.data).toMatchObject({ status: 'claimable', address: null, transaction_id: null, reason: 'Out of stock' });
    expect(claim.body.data.claim_url).toBe(`${t.ctx.config.publicUrl.replace(/\/+$/, '')}/refund/${claim.body.data.uuid}`);
    // An address given as null is a claim too.
    const nullAddress = await refund(walletId, charge.id, { amount: '0.05', address: null }, key);
    expect([nullAddress.status, nullAddress.body.data?.status], nullAddress.text).toEqual([200, 'claimable']);
    expect(await recorded(walletId, charge.id)).toEqual({ refunds: 2, transfers: 0 });
    // The public side of the claim works with the uuid the key was shown.
    const pub = await t.request('GET', `/api/refund/${claim.body.data.uuid}`);
    expect([pub.status, pub.body.data?.status]).toEqual([200, 'claimable']);
  });
});

describe('who sees a refund’s link', () => {
  it('a read key sees uuid and claim_url as null on the charge list and detail; a login token and keys that write charges or transactions see them', async () => {
    const { walletId, charge } = await paidCharge('0.2');
    const claim = await refund(walletId, charge.id, { amount: '0.1' }, await apiKey(['charges:write']));
    expect(claim.status, claim.text).toBe(200);
    const r = claim.body.data;
    expect(r.uuid).toMatch(/^[0-9a-f-]{36}$/);
    const hidden = { ...r, uuid: null, claim_url: null };

    const seen = async (token: string) => {
      const detail = await t.request('GET', `/api/wallet/${walletId}/charge/show/${charge.id}`, { token });
      const byUuid = await t.request('GET', `/api/wallet/${walletId}/charge/show/${charge.uuid}`, { token });
      const list = await t.request('GET', `/api/wallet/${walletId}/charge`, { token });
      for (const res of [detail, byUuid, list]) expect(res.status, res.text).toBe(200);
      const listed = (list.body.data as Array<{ id: number; refunds: unknown[] }>).find((c) => c.id === charge.id)!;
      return [detail.body.data.refunds, byUuid.body.data.refunds, listed.refunds];
    };

    for (const scopes of [['read'], ['read', 'webhooks:write'], ['read', 'wallets:write']] as KeyScope[][]) {
      expect(await seen(await apiKey(scopes)), scopes.join(',')).toEqual([[hidden], [hidden], [hidden]]);
    }
    for (const scopes of [['read', 'charges:write'], ['read', 'transactions:write'], ['*']] as KeyScope[][]) {
      expect(await seen(await apiKey(scopes)), scopes.join(',')).toEqual([[r], [r], [r]]);
    }
    expect(await seen(user.token), 'login token').toEqual([[r], [r], [r]]);
  });
});
