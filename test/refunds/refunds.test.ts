/**
 * Refunds (docs/money-out.md, "Refunds"), through HTTP with a real anvil, on SQLite and (DATABASE_URL)
 * PostgreSQL, the chain checked every time:
 * - a charge with no payment: 400 `Nothing to refund`; another user's wallet: 404;
 * - with an address: a transfer of the charge's token from the main address (`refund_id` on it
 *   and in its events), the exact amount at the recipient, `refunds` on the charge, and
 *   `charge.refunded` once it confirms;
 * - the bound: the default amount is what is left; passing it is 400 `Refund exceeds the amount
 *   received` with nothing recorded or sent; two requests for the whole amount with different
 *   Idempotency-Keys: one 200, one 400, one transfer on chain; the same key replays;
 * - a claim: `claim_url`, the public JSON, 422 on a bad address, sent once (a second claim, or
 *   two at once: 400 `Refund already claimed`), `expired` after REFUND_CLAIM_TTL_S and then no
 *   longer counted; the claim page is served with its own strict CSP;
 * - the wallet's policy applies to refunds.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseEther, type Address } from 'viem';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { ManualClock, startTestApp, type TestApp, type TestUser } from '../helpers/app.js';
import { startTestChain, type TestChain } from '../helpers/chain.js';
import { waitFor } from '../helpers/wait.js';
import { expectValidationError } from '../helpers/expect.js';
import { balanceOf, chargeApi, clockToChain, DATETIME, pay } from '../charges/support.js';
import { eventsOf, waitForStatus } from '../helpers/transfers.js';

const clock = new ManualClock();
let chain: TestChain;
let t: TestApp;
let user: TestUser;
let stranger: TestUser;
let networkId: number;

beforeAll(async () => {
  chain = await startTestChain();
  t = await startTestApp({ clock, env: { CHARGES_POLL_MS: '50', WATCHER_POLL_MS: '50', REFUND_CLAIM_TTL_S: '3600' } });
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

/** A wallet with `eth` ETH on its main address (for the refunds' gas) and a charge paid `paid` ETH. */
async function paidCharge(paid: string, eth = '1') {
  const w = (
    await t.request('POST', '/api/wallet/create', { token: user.token, body: { name: `shop-${Date.now()}`, network_id: networkId } })
  ).body.data;
  await chain.setBalance(w.address, parseEther(eth));
  const api = chargeApi(t, w.id, user.token);
  await clockToChain(clock, chain);
  const c = await api.create({ amount: paid, token: 'ETH', expires: 3600 });
  await pay(chain.rpcUrl, c.address, parseEther(paid));
  await api.until(c.id, (x) => x.status === 'paid', 'charge paid');
  return { wallet: w as { id: number; address: string }, charge: c, api };
}

const refund = (walletId: number, charge: number | string, body: Record<string, unknown>, opts: { token?: string; key?: string } = {}) =>
  t.request('POST', `/api/wallet/${walletId}/charge/${charge}/refund`, {
    token: opts.token ?? user.token,
    body,
    headers: opts.key ? { 'idempotency-key': opts.key } : {},
  });

const refusal = (message: string) => ({ status: 'error', message, data: null });

async function refundRows(chargeId: number) {
  return t.store.db.selectFrom('refunds').select(['id', 'amount', 'address']).where('charge_id', '=', chargeId).execute();
}

describe('refund routes', () => {
  it('a charge with no payment has nothing to refund; another user sees no wallet; an unknown charge is 404', async () => {
    const w = (await t.request('POST', '/api/wallet/create', { token: user.token, body: { name: 'empty', network_id: networkId } })).body
      .data;
    await clockToChain(clock, chain);
    const c = await chargeApi(t, w.id, user.token).create({ amount: '0.1', token: 'ETH', expires: 3600 });
    const none = await refund(w.id, c.id, { address: freshAddress() });
    expect([none.status, none.body]).toEqual([400, refusal('Nothing to refund')]);
    const other = await refund(w.id, c.id, {}, { token: stranger.token });
    expect([other.status, other.body.message]).toEqual([404, 'Wallet not found']);
    const unknown = await refund(w.id, 999_999, {});
    expect([unknown.status, unknown.body.message]).toEqual([404, 'Charge not found']);
    const bad = await refund(w.id, c.uuid, { amount: '-1', address: '0x123', reason: 5 });
    expect(bad.status, bad.text).toBe(422);
    expect(Object.keys(bad.body.data)).toEqual(['amount', 'address', 'reason']);
    expect(await refundRows(c.id)).toEqual([]);
  });

  it('with an address: the exact amount from the main address, refund_id on its transaction and events, charge.refunded once confirmed', async () => {
    const { wallet, charge, api } = await paidCharge('0.4');
    const to = freshAddress();
    const res = await refund(wallet.id, charge.uuid, { amount: '0.1', address: to, reason: 'Damaged item' });
    expect(res.status, res.text).toBe(200);
    expect(res.body.message).toBe('Refund created');
    const r = res.body.data;
    expect(r).toEqual({
      id: expect.any(Number),
      uuid: expect.stringMatching(/^[0-9a-f-]{36}$/),
      amount: '0.100000000000000000',
      address: to,
      status: 'pending',
      transaction_id: expect.any(Number),
      tx_hash: expect.stringMatching(/^0x[0-9a-f]{64}$/),
      reason: 'Damaged item',
      claim_url: null,
      expires_at: null,
      created_at: expect.stringMatching(DATETIME),
    });
    const tx = await waitForStatus(t, user, wallet.id, r.transaction_id, 'confirmed');
    expect(tx).toMatchObject({ refund_id: r.id, amount: '0.100000000000000000', symbol: 'ETH', tx_hash: r.tx_hash });
    expect(await balanceOf(chain, to)).toBe(parseEther('0.1'));
    const receipt = await chain.rpc<{ from: string; to: string }>('eth_getTransactionReceipt', [r.tx_hash]);
    expect([receipt.from.toLowerCase(), receipt.to.toLowerCase()]).toEqual([wallet.address.toLowerCase(), to.toLowerCase()]);

    const shown = await api.until(charge.id, (c) => c.refunds[0]?.status === 'confirmed', 'refund confirmed on the charge');
    expect(shown.refunds).toEqual([{ ...r, status: 'confirmed' }]);
    const list = await t.request('GET', `/api/wallet/${wallet.id}/transaction`, { token: user.token });
    expect(list.body.data.find((x: any) => x.id === r.transaction_id).refund_id).toBe(r.id);

    const created = await eventsOf(t, wallet.id, 'transaction.created');
    expect(created.find((e) => e.payload.transaction_id === r.transaction_id)!.payload.refund_id).toBe(r.id);
    const refunded = await waitFor(async () => (await eventsOf(t, wallet.id, 'charge.refunded'))[0], { message: 'charge.refunded' });
    expect(refunded.payload).toMatchObject({
      charge_id: charge.id,
      status: 'paid',
      paid_amount: '0.400000000000000000',
      refund: { ...r, status: 'confirmed' },
      refunded_at: expect.stringMatching(DATETIME),
    });
  });

  it('the bound: the default is what is left, more is 400 with nothing sent, the same key replays', async () => {
    const { wallet, charge } = await paidCharge('0.3');
    const to = freshAddress();
    const first = await refund(wallet.id, charge.id, { amount: '0.1', address: to }, { key: 'refund-a' });
    expect(first.status, first.text).toBe(200);
    const replay = await refund(wallet.id, charge.id, { amount: '0.1', address: to }, { key: 'refund-a' });
    expect([replay.status, replay.headers.get('idempotent-replayed'), replay.body]).toEqual([200, 'true', first.body]);
    const over = await refund(wallet.id, charge.id, { amount: '0.200000000000000001', address: to });
    expect([over.status, over.body]).toEqual([400, refusal('Refund exceeds the amount received')]);
    const rest = await refund(wallet.id, charge.id, { address: to });
    expect([rest.status, rest.body.data?.amount], rest.text).toEqual([200, '0.200000000000000000']);
    const more = await refund(wallet.id, charge.id, { address: to });
    expect([more.status, more.body]).toEqual([400, refusal('Refund exceeds the amount received')]);
    await waitForStatus(t, user, wallet.id, rest.body.data.transaction_id, 'confirmed');
    await waitForStatus(t, user, wallet.id, first.body.data.transaction_id, 'confirmed');
    expect(await balanceOf(chain, to)).toBe(parseEther('0.3'));
    expect((await refundRows(charge.id)).map((x) => x.amount)).toEqual([String(parseEther('0.1')), String(parseEther('0.2'))]);
  });

  it('two requests for the whole amount with different keys: one 200, one 400, one transfer', async () => {
    const { wallet, charge } = await paidCharge('0.25');
    const to = freshAddress();
    const answers = await Promise.all([
      refund(wallet.id, charge.id, { address: to }, { key: 'race-1' }),
      refund(wallet.id, charge.id, { address: to }, { key: 'race-2' }),
    ]);
    expect(answers.map((a) => a.status).sort()).toEqual([200, 400]);
    const won = answers.find((a) => a.status === 200)!;
    expect(answers.find((a) => a.status === 400)!.body).toEqual(refusal('Refund exceeds the amount received'));
    await waitForStatus(t, user, wallet.id, won.body.data.transaction_id, 'confirmed');
    expect(await balanceOf(chain, to)).toBe(parseEther('0.25'));
    expect(await refundRows(charge.id)).toHaveLength(1);
  });

  it('the wallet’s policy applies: over per_transaction is refused with nothing recorded', async () => {
    const { wallet, charge } = await paidCharge('0.5');
    const set = await t.request('POST', `/api/wallet/${wallet.id}/policy`, {
      token: user.token,
      body: { per_transaction: { ETH: '0.2' } },
    });
    expect(set.status, set.text).toBe(200);
    const res = await refund(wallet.id, charge.id, { address: freshAddress() });
    expect([res.status, res.body]).toEqual([400, refusal('Policy: over the per-transaction limit')]);
    expect(await refundRows(charge.id)).toEqual([]);
  });
});

describe('refund claims', () => {
  it('a claim: its public JSON and page, 422 on a bad address, sent once to the payer’s address', async () => {
    const { wallet, charge, api } = await paidCharge('0.2');
    const res = await refund(wallet.id, charge.id, { amount: '0.15' });
    expect(res.status, res.text).toBe(200);
    const r = res.body.data;
    expect(r).toMatchObject({
      status: 'claimable',
      address: null,
      transaction_id: null,
      tx_hash: null,
      amount: '0.150000000000000000',
      expires_at: expect.stringMatching(DATETIME),
    });
    expect(r.claim_url).toBe(`${t.ctx.config.publicUrl.replace(/\/+$/, '')}/refund/${r.uuid}`);

    const pub = await t.request('GET', `/api/refund/${r.uuid}`);
    expect([pub.status, pub.body.data]).toEqual([
      200,
      {
        uuid: r.uuid,
        status: 'claimable',
        amount: '0.150000000000000000',
        token: 'ETH',
        network: expect.any(String),
        reason: r.reason,
        address: null,
        tx_hash: null,
        tx_url: null,
        expires_at: r.expires_at,
      },
    ]);
    const page = await t.request('GET', `/refund/${r.uuid}`);
    expect(page.status).toBe(200);
    expect(page.headers.get('content-security-policy')).toMatch(
      /^default-src 'self'; script-src 'sha256-[^']+'; style-src 'sha256-[^']+' 'sha256-[^']+';/,
    );
    expect(page.text).toContain('Your refund of 0.15 ETH');
    expect((await t.request('GET', '/refund/00000000-0000-4000-8000-000000000000')).status).toBe(404);
    expect((await t.request('GET', '/api/refund/00000000-0000-4000-8000-000000000000')).body.message).toBe('Refund not found');

    const bad = await t.request('POST', `/api/refund/${r.uuid}`, { body: { address: '0xnope' } });
    expectValidationError(bad, { address: ['The address field must be a valid address.'] });
    const to = freshAddress();
    const claimed = await t.request('POST', `/api/refund/${r.uuid}`, { body: { address: to } });
    expect([claimed.status, claimed.body.message, claimed.body.data.status], claimed.text).toEqual([200, 'Refund claimed', 'pending']);
    const again = await t.request('POST', `/api/refund/${r.uuid}`, { body: { address: freshAddress() } });
    expect([again.status, again.body]).toEqual([400, refusal('Refund already claimed')]);
    const done = await api.until(charge.id, (c) => c.refunds[0]?.status === 'confirmed', 'claimed refund confirmed');
    expect(done.refunds[0]).toMatchObject({ id: r.id, address: to, transaction_id: expect.any(Number), status: 'confirmed' });
    expect(await balanceOf(chain, to)).toBe(parseEther('0.15'));
    // Once sent, the payer sees where it went and in which transaction (no explorer configured: no link).
    expect((await t.request('GET', `/api/refund/${r.uuid}`)).body.data).toMatchObject({
      status: 'confirmed',
      address: done.refunds[0].address,
      tx_hash: done.refunds[0].tx_hash,
      tx_url: null,
    });
  });

  it('two claims at once send once', async () => {
    const { wallet, charge } = await paidCharge('0.2');
    const r = (await refund(wallet.id, charge.id, {})).body.data;
    const [a, b] = [freshAddress(), freshAddress()];
    const answers = await Promise.all([
      t.request('POST', `/api/refund/${r.uuid}`, { body: { address: a } }),
      t.request('POST', `/api/refund/${r.uuid}`, { body: { address: b } }),
    ]);
    expect(answers.map((x) => x.status).sort()).toEqual([200, 400]);
    expect(answers.find((x) => x.status === 400)!.body).toEqual(refusal('Refund already claimed'));
    const txs = await t.store.db.selectFrom('transactions').select(['id']).where('refund_id', '=', r.id).execute();
    expect(txs).toHaveLength(1);
    await waitForStatus(t, user, wallet.id, Number(txs[0]!.id), 'confirmed');
    expect([await balanceOf(chain, a), await balanceOf(chain, b)].sort()).toEqual([0n, parseEther('0.2')]);
  });

  it('an unused claim expires after REFUND_CLAIM_TTL_S: 400 to claim, and it no longer counts', async () => {
    const { wallet, charge } = await paidCharge('0.2');
    const r = (await refund(wallet.id, charge.id, {})).body.data;
    const blocked = await refund(wallet.id, charge.id, { address: freshAddress() });
    expect([blocked.status, blocked.body]).toEqual([400, refusal('Refund exceeds the amount received')]);
    clock.advance(3600 * 1000);
    expect((await t.request('GET', `/api/refund/${r.uuid}`)).body.data.status).toBe('expired');
    const late = await t.request('POST', `/api/refund/${r.uuid}`, { body: { address: freshAddress() } });
    expect([late.status, late.body]).toEqual([400, refusal('Refund claim expired')]);
    const to = freshAddress();
    const again = await refund(wallet.id, charge.id, { address: to });
    expect([again.status, again.body.data?.amount], again.text).toEqual([200, '0.200000000000000000']);
    await waitForStatus(t, user, wallet.id, again.body.data.transaction_id, 'confirmed');
    expect(await balanceOf(chain, to)).toBe(parseEther('0.2'));
  });
});
