/**
 * A payout reserves what it has not sent (docs/money-out.md, "Payouts",
 * "Approvals"), through HTTP with a real anvil, on SQLite and (DATABASE_URL) PostgreSQL:
 * - held for approval, its total and every item's maximum fee count against the wallet's
 *   balance as a held transfer's amount and fee do: a transfer or another payout that would leave
 *   too little for it is 400, native and ERC-20;
 * - approved, every item is sent and confirms, each taking over its own reservation (a wallet
 *   that holds little more than the payout still pays every item); an item that cannot be paid
 *   is refused for its own reason, not for a balance its own reservation seemed to take;
 * - rejected, or not decided within APPROVAL_TTL_S, it reserves nothing: the transfer fits.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseEther, parseUnits, type Address } from 'viem';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { ManualClock, startTestApp, type TestApp, type TestUser } from '../helpers/app.js';
import { startTestChain, type TestChain } from '../helpers/chain.js';
import { waitFor } from '../helpers/wait.js';
import { deployErc20, deployNotAToken, erc20BalanceOf, mintErc20 } from '../helpers/erc20.js';
import { balanceOf } from '../charges/support.js';
import { fundedWallet, waitForStatus, type FundedWallet } from '../helpers/transfers.js';

const clock = new ManualClock();
let chain: TestChain;
let t: TestApp;
let user: TestUser;
let networkId: number;

beforeAll(async () => {
  chain = await startTestChain();
  t = await startTestApp({ clock, env: { WATCHER_POLL_MS: '50', APPROVAL_TTL_S: '600' } });
  networkId = await chain.register(t);
  user = await t.createUser();
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
const payout = (w: { id: number }, body: Record<string, unknown>) =>
  t.request('POST', `/api/wallet/${w.id}/payout/create`, { token: user.token, body });
const transfer = (w: { id: number }, body: Record<string, unknown>) =>
  t.request('POST', `/api/wallet/${w.id}/transaction/create`, { token: user.token, body });
const decide = (w: { id: number }, id: number, what: 'approve' | 'reject') =>
  t.request('POST', `/api/wallet/${w.id}/payout/${id}/${what}`, { token: user.token, body: {} });
const until = (w: { id: number }, id: number, status: string) =>
  waitFor(
    async () => {
      const r = await t.request('GET', `/api/wallet/${w.id}/payout/${id}`, { token: user.token });
      return r.body.data?.status === status ? r.body.data : null;
    },
    { timeoutMs: 30_000, message: `payout ${id} ${status}` },
  );

/** A wallet holding 2 ETH whose policy holds totals over 1.5 ETH, and a held payout of 2 × 0.9 ETH (to `to`, else two new addresses). */
async function heldPayout(to: Address[] = [fresh(), fresh()]): Promise<{ w: FundedWallet; id: number; to: Address[] }> {
  const w = await fundedWallet(t, chain, user, networkId, parseEther('2'));
  const set = await t.request('POST', `/api/wallet/${w.id}/policy`, { token: user.token, body: { approval_above: { ETH: '1.5' } } });
  expect(set.status, set.text).toBe(200);
  const res = await payout(w, { token: 'ETH', items: to.map((address) => ({ address, amount: '0.9' })) });
  expect([res.status, res.body.data?.status], res.text).toEqual([200, 'awaiting_approval']);
  return { w, id: res.body.data.id, to };
}

describe('a held payout reserves its total and its items’ fees', () => {
  it('refuses what would leave too little for it; approved, every item confirms', async () => {
    const { w, id, to } = await heldPayout();
    // 2 ETH less the payout's 1.8 and its fees leaves less than 1.1 (half the payout more than the rest).
    const refused = await transfer(w, { token: 'ETH', amount: '1.1', address: fresh() });
    expect([refused.status, refused.body]).toEqual([400, refusal('Insufficient balance for transaction')]);
    const other = await payout(w, { token: 'ETH', items: [{ address: fresh(), amount: '1.1' }] });
    expect([other.status, other.body]).toEqual([400, refusal('Insufficient balance for payout')]);
    // What is left beside it still goes out.
    const small = await transfer(w, { token: 'ETH', amount: '0.1', address: fresh() });
    expect(small.status, small.text).toBe(200);
    await waitForStatus(t, user, w.id, small.body.data.id, 'confirmed');

    const ok = await decide(w, id, 'approve');
    expect([ok.status, ok.body.data?.status], ok.text).toEqual([200, 'processing']);
    const done = await until(w, id, 'completed');
    expect(done.items.map((i: { status: string }) => i.status)).toEqual(['confirmed', 'confirmed']);
    expect([await balanceOf(chain, to[0]!), await balanceOf(chain, to[1]!)]).toEqual([parseEther('0.9'), parseEther('0.9')]);
  });

  it('approved, an item whose transfer would fail is refused for that, and the other is paid', async () => {
    // A contract without a receive function: a plain transfer of ether to it reverts.
    const noReceive = await deployNotAToken(chain.rpcUrl);
    const other = fresh();
    const { w, id } = await heldPayout([other, noReceive]);
    expect((await decide(w, id, 'approve')).status).toBe(200);
    const done = await until(w, id, 'partially_failed');
    expect(done.items.map((i: { status: string; failure_reason: string | null }) => [i.status, i.failure_reason])).toEqual([
      ['confirmed', null],
      ['failed', 'refused'],
    ]);
    expect(done.items[1].error).toMatch(/^The transaction would fail/);
    expect(await balanceOf(chain, other)).toBe(parseEther('0.9'));
  });

  it('rejected, it reserves nothing: the transfer it refused fits', async () => {
    const { w, id } = await heldPayout();
    expect((await transfer(w, { token: 'ETH', amount: '1.1', address: fresh() })).body).toEqual(
      refusal('Insufficient balance for transaction'),
    );
    const rejected = await decide(w, id, 'reject');
    expect([rejected.status, rejected.body.data?.status], rejected.text).toEqual([200, 'failed']);
    const to = fresh();
    const res = await transfer(w, { token: 'ETH', amount: '1.1', address: to });
    expect(res.status, res.text).toBe(200);
    await waitForStatus(t, user, w.id, res.body.data.id, 'confirmed');
    expect(await balanceOf(chain, to)).toBe(parseEther('1.1'));
  });

  it('not decided within APPROVAL_TTL_S, it reserves nothing', async () => {
    const { w, id } = await heldPayout();
    expect((await transfer(w, { token: 'ETH', amount: '1.1', address: fresh() })).body).toEqual(
      refusal('Insufficient balance for transaction'),
    );
    clock.advance(600_000);
    const expired = await until(w, id, 'failed');
    expect(expired.items[0].failure_reason).toBe('approval_expired');
    const res = await transfer(w, { token: 'ETH', amount: '1.1', address: fresh() });
    expect(res.status, res.text).toBe(200);
  });

  it('of an ERC-20: its total against the token, its fees against the native balance', async () => {
    const usd = await deployErc20(chain.rpcUrl, { name: 'Held USD', symbol: 'HUSD', decimals: 6 });
    const w = await fundedWallet(t, chain, user, networkId, parseEther('1'));
    expect((await t.request('POST', `/api/wallet/${w.id}/token/add`, { token: user.token, body: { contract: usd } })).status).toBe(200);
    await mintErc20(chain.rpcUrl, usd, w.address, parseUnits('100', 6));
    expect(
      (await t.request('POST', `/api/wallet/${w.id}/policy`, { token: user.token, body: { approval_above: { HUSD: '60' } } })).status,
    ).toBe(200);
    const to = [fresh(), fresh()];
    const held = await payout(w, { token: 'HUSD', items: to.map((address) => ({ address, amount: '45' })) });
    expect([held.status, held.body.data?.status], held.text).toEqual([200, 'awaiting_approval']);

    expect((await transfer(w, { token: 'HUSD', amount: '55', address: fresh() })).body).toEqual(
      refusal('Insufficient balance for transaction'),
    );
    const ok = await decide(w, held.body.data.id, 'approve');
    expect(ok.status, ok.text).toBe(200);
    await until(w, held.body.data.id, 'completed');
    expect([await erc20BalanceOf(chain.rpcUrl, usd, to[0]!), await erc20BalanceOf(chain.rpcUrl, usd, to[1]!)]).toEqual([
      parseUnits('45', 6),
      parseUnits('45', 6),
    ]);
  });
});
