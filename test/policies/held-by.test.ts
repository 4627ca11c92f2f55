/**
 * `held_by` (docs/transactions.md, "Held for approval"; migration 039), through HTTP on a real
 * anvil, on SQLite and (DATABASE_URL) PostgreSQL: the rule that held a transfer or payout for
 * approval is recorded with its row, shown on the create's answer, the show route and the list,
 * kept as it was at the hold when the policy changes, and kept once the row is approved or
 * rejected (an expiry fails the row as a reject does, leaving it too).
 * - a transfer over `approval_above`: that threshold and its token;
 * - a contract call whose `transfer` calldata moves a token over that token's threshold: the
 *   token's threshold, not the native coin's (the row's own token is ETH);
 * - a contract call the policy cannot read, to a contract not on the allowlist: `contract_call`;
 * - a payout whose total is over `approval_above`: that threshold on the Payout;
 * - a transfer never held: null.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { encodeFunctionData, parseAbi, type Address } from 'viem';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { startTestApp, type TestApp, type TestUser } from '../helpers/app.js';
import { startTestChain, type TestChain } from '../helpers/chain.js';
import { deployErc20, deployNotAToken, mintErc20 } from '../helpers/erc20.js';
import { ETH, fundedWallet, RECIPIENT, waitForCursor, waitForStatus, type FundedWallet } from '../helpers/transfers.js';
import { policyApi } from './support.js';

/** 1 TUSD (6 places). */
const USD = 1_000_000n;

let t: TestApp;
let chain: TestChain;
let user: TestUser;
let networkId: number;
let usd: Address;
let notAToken: Address;

beforeAll(async () => {
  chain = await startTestChain();
  t = await startTestApp({ workers: true });
  networkId = await chain.register(t);
  await waitForCursor(t, networkId);
  user = await t.createUser();
  usd = await deployErc20(chain.rpcUrl, { name: 'Test USD', symbol: 'TUSD', decimals: 6 });
  notAToken = await deployNotAToken(chain.rpcUrl);
});

afterAll(async () => {
  await t?.close();
  await chain?.stop();
});

const fresh = (): Address => privateKeyToAccount(generatePrivateKey()).address;

/** A wallet holding 2 ETH and 500 TUSD (the token added), its policy `policy`. */
async function walletWith(policy: Record<string, unknown>): Promise<FundedWallet & { api: ReturnType<typeof policyApi> }> {
  const w = await fundedWallet(t, chain, user, networkId, 2n * ETH);
  const api = policyApi(t, w.id, user.token);
  const added = await t.request('POST', `/api/wallet/${w.id}/token/add`, { token: user.token, body: { contract: usd } });
  expect(added.status, added.text).toBe(200);
  await mintErc20(chain.rpcUrl, usd, w.address, 500n * USD);
  const set = await api.setPolicy(policy);
  expect(set.status, set.text).toBe(200);
  return { ...w, api };
}

const decide = (walletId: number, txId: number, kind: 'approve' | 'reject') =>
  t.request('POST', `/api/wallet/${walletId}/transaction/${txId}/${kind}`, { token: user.token, body: {} });

/** `held_by` of the transaction as the show route and the list show it (the two must agree). */
async function shownHeldBy(walletId: number, txId: number): Promise<unknown> {
  const shown = await t.request('GET', `/api/wallet/${walletId}/transaction/show/${txId}`, { token: user.token });
  expect(shown.status, shown.text).toBe(200);
  const listed = await t.request('GET', `/api/wallet/${walletId}/transaction?limit=100`, { token: user.token });
  expect(listed.status, listed.text).toBe(200);
  const item = listed.body.data.find((x: { id: number }) => x.id === txId);
  expect(item.held_by).toEqual(shown.body.data.held_by);
  return shown.body.data.held_by;
}

const overEth = { rule: 'approval_above', limit: '0.500000000000000000', token: 'ETH' };

describe('held_by', () => {
  it('a transfer over approval_above shows that threshold and token; kept as at the hold when the policy changes, and once approved', async () => {
    const w = await walletWith({ approval_above: { ETH: '0.5' } });
    const res = await w.api.create({ amount: '0.7', token: 'ETH', address: RECIPIENT });
    expect([res.status, res.body.data?.status], res.text).toEqual([200, 'awaiting_approval']);
    expect(res.body.data.held_by).toEqual(overEth);
    const id = res.body.data.id as number;
    expect(await shownHeldBy(w.id, id)).toEqual(overEth);

    // The threshold raised since: the row still says what held it.
    expect((await w.api.setPolicy({ approval_above: { ETH: '1' } })).status).toBe(200);
    expect(await shownHeldBy(w.id, id)).toEqual(overEth);

    const approved = await decide(w.id, id, 'approve');
    expect([approved.status, approved.body.data?.status], approved.text).toEqual([200, 'pending']);
    expect(approved.body.data.held_by).toEqual(overEth);
    await waitForStatus(t, user, w.id, id, 'confirmed');
    expect(await shownHeldBy(w.id, id)).toEqual(overEth);

    // Under the threshold: sent, never held.
    const sent = await w.api.create({ amount: '0.1', token: 'ETH', address: RECIPIENT });
    expect([sent.status, sent.body.data?.status, sent.body.data?.held_by], sent.text).toEqual([200, 'pending', null]);
    expect(await shownHeldBy(w.id, sent.body.data.id)).toBeNull();
  });

  it("a token transfer sent as a contract call names the token's threshold, not the native coin's", async () => {
    const w = await walletWith({ approval_above: { ETH: '0.5', TUSD: '100' } });
    const data = encodeFunctionData({
      abi: parseAbi(['function transfer(address to, uint256 amount) returns (bool)']),
      functionName: 'transfer',
      args: [fresh(), 250n * USD],
    });
    const res = await w.api.create({ amount: '0', token: 'ETH', address: usd, data });
    expect([res.status, res.body.data?.status, res.body.data?.type], res.text).toEqual([200, 'awaiting_approval', 'contract']);
    const byToken = { rule: 'approval_above', limit: '100.000000000000000000', token: 'TUSD' };
    expect(res.body.data.held_by).toEqual(byToken);
    expect(await shownHeldBy(w.id, res.body.data.id)).toEqual(byToken);
  });

  it('a contract call the policy cannot read shows contract_call; kept once rejected', async () => {
    const w = await walletWith({ per_transaction: { ETH: '5' } });
    const res = await w.api.create({ amount: '0', token: 'ETH', address: notAToken, function: 'ping()', args: [] });
    expect([res.status, res.body.data?.status], res.text).toEqual([200, 'awaiting_approval']);
    const unreadable = { rule: 'contract_call', limit: null, token: null };
    expect(res.body.data.held_by).toEqual(unreadable);
    const rejected = await decide(w.id, res.body.data.id, 'reject');
    expect([rejected.status, rejected.body.data?.failure_reason], rejected.text).toEqual([200, 'rejected_by_approver']);
    expect(rejected.body.data.held_by).toEqual(unreadable);
    expect(await shownHeldBy(w.id, res.body.data.id)).toEqual(unreadable);
  });

  it('a payout whose total is over approval_above shows that threshold on the Payout, kept once approved; one under it, null', async () => {
    const w = await walletWith({ approval_above: { TUSD: '100' } });
    const items = [
      { address: fresh(), amount: '60' },
      { address: fresh(), amount: '50' },
    ];
    const res = await t.request('POST', `/api/wallet/${w.id}/payout/create`, { token: user.token, body: { token: 'TUSD', items } });
    expect([res.status, res.body.data?.status], res.text).toEqual([200, 'awaiting_approval']);
    const byTotal = { rule: 'approval_above', limit: '100.000000000000000000', token: 'TUSD' };
    expect(res.body.data.held_by).toEqual(byTotal);
    const approved = await t.request('POST', `/api/wallet/${w.id}/payout/${res.body.data.id}/approve`, { token: user.token, body: {} });
    expect(approved.status, approved.text).toBe(200);
    const shown = await t.request('GET', `/api/wallet/${w.id}/payout/${res.body.data.id}`, { token: user.token });
    expect([shown.body.data.status, shown.body.data.held_by]).toEqual(['processing', byTotal]);
    const small = await t.request('POST', `/api/wallet/${w.id}/payout/create`, {
      token: user.token,
      body: { token: 'TUSD', items: [{ address: fresh(), amount: '10' }] },
    });
    expect([small.status, small.body.data?.held_by], small.text).toEqual([200, null]);
  });
});
