/**
 * Approvals (docs/money-out.md, "Approvals": `approval_above`), through HTTP with
 * a real anvil, on SQLite and (DATABASE_URL) PostgreSQL, the chain checked every time:
 * - over `approval_above` the create answers 200 `awaiting_approval` with `tx_hash` and `nonce`
 *   null, emits `transaction.approval_required`, sends nothing, and reserves amount + fee (a
 *   create that needs the reserved money is refused) and counts in the daily sum;
 * - approve and reject need a login token (any API key 403); another user's wallet 404;
 * - approve signs and sends it (exact amount to the recipient), checks the balance again (400,
 *   still awaiting), and two approvals racing send it once; reject fails it unsigned
 *   (`rejected_by_approver`), releasing the reservation; a held transfer cannot be sped up or
 *   cancelled; undecided within APPROVAL_TTL_S it fails `approval_expired`.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock, startTestApp, type TestApp, type TestUser } from '../helpers/app.js';
import { startTestChain, type TestChain } from '../helpers/chain.js';
import { waitFor } from '../helpers/wait.js';
import {
  ETH,
  eventsOf,
  fundedWallet,
  publicClient,
  RECIPIENT,
  waitForCursor,
  waitForStatus,
  type FundedWallet,
} from '../helpers/transfers.js';
import { policyApi, refusal } from './support.js';

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
});

afterAll(async () => {
  await t?.close();
  await chain?.stop();
});

/** A wallet holding `eth` ETH whose policy holds every transfer over 0.5 ETH for approval. */
async function heldWallet(
  app: TestApp,
  eth: bigint,
  policy: Record<string, unknown> = {},
): Promise<FundedWallet & { api: ReturnType<typeof policyApi> }> {
  const w = await fundedWallet(app, chain, user, networkId, eth);
  const api = policyApi(app, w.id, user.token);
  const set = await api.setPolicy({ approval_above: { ETH: '0.5' }, ...policy });
  expect(set.status, set.text).toBe(200);
  return { ...w, api };
}

const decide = (app: TestApp, walletId: number, txId: number, kind: 'approve' | 'reject' | 'speed-up' | 'cancel', token = user.token) =>
  app.request('POST', `/api/wallet/${walletId}/transaction/${txId}/${kind}`, { token, body: {} });

const nodeNonce = (address: string) => publicClient(chain.rpcUrl).getTransactionCount({ address: address as `0x${string}` });

describe('a transfer over approval_above', () => {
  it('is held: 200 awaiting_approval, tx_hash and nonce null, its event, nothing sent, amount and fee reserved', async () => {
    const w = await heldWallet(t, 1n * ETH);
    const recipientBefore = await publicClient(chain.rpcUrl).getBalance({ address: RECIPIENT });
    const res = await w.api.create({ amount: '0.7', token: 'ETH', address: RECIPIENT });
    expect(res.status, res.text).toBe(200);
    expect(res.body.message).toBe('Transaction created');
    expect(res.body.data).toMatchObject({
      status: 'awaiting_approval',
      tx_hash: null,
      nonce: null,
      amount: '0.700000000000000000',
      block_number: null,
      failure_reason: null,
    });
    const events = (await eventsOf(t, w.id)).filter((e) => e.name.startsWith('transaction.'));
    expect(events.map((e) => e.name)).toEqual(['transaction.approval_required']);
    expect(events[0]!.payload).toMatchObject({
      transaction_id: res.body.data.id,
      wallet_id: w.id,
      amount: '0.700000000000000000',
      token: 'ETH',
      tx_hash: null,
      status: 'awaiting_approval',
      type: 'transfer',
    });
    // Under the threshold, but the held 0.7 ETH and its fee are reserved: 0.4 more does not fit in 1 ETH.
    const more = await w.api.create({ amount: '0.4', token: 'ETH', address: RECIPIENT });
    expect([more.status, more.body]).toEqual([400, refusal('Insufficient balance for transaction')]);
    const small = await w.api.create({ amount: '0.2', token: 'ETH', address: RECIPIENT });
    expect([small.status, small.body.data.status, small.body.data.nonce], small.text).toEqual([200, 'pending', 0]);
    await waitForStatus(t, user, w.id, small.body.data.id, 'confirmed');
    expect(await nodeNonce(w.address)).toBe(1);
    expect(await publicClient(chain.rpcUrl).getBalance({ address: RECIPIENT })).toBe(recipientBefore + ETH / 5n);
    const shown = await t.request('GET', `/api/wallet/${w.id}/transaction/show/${res.body.data.id}`, { token: user.token });
    expect(shown.body.data).toMatchObject({ status: 'awaiting_approval', tx_hash: null, nonce: null });
  });

  it('counts in the daily sum while it awaits approval', async () => {
    const w = await heldWallet(t, 5n * ETH, { daily: { ETH: '1' } });
    const held = await w.api.create({ amount: '0.8', token: 'ETH', address: RECIPIENT });
    expect(held.body.data.status, held.text).toBe('awaiting_approval');
    const over = await w.api.create({ amount: '0.3', token: 'ETH', address: RECIPIENT });
    expect([over.status, over.body]).toEqual([400, refusal('Policy: over the daily limit')]);
    expect(await nodeNonce(w.address)).toBe(0);
  });

  it('is approved only with a login token; approving signs and sends it exactly once, then it confirms', async () => {
    const w = await heldWallet(t, 2n * ETH);
    const held = (await w.api.create({ amount: '0.75', token: 'ETH', address: RECIPIENT })).body.data;
    const key = await t.request('POST', '/api/auth/key/create', { token: user.token, body: { name: 'all', scopes: ['*'] } });
    for (const kind of ['approve', 'reject'] as const) {
      const byKey = await decide(t, w.id, held.id, kind, key.body.data.key);
      expect([byKey.status, byKey.body]).toEqual([403, refusal('Insufficient scope')]);
      const byStranger = await decide(t, w.id, held.id, kind, stranger.token);
      expect([byStranger.status, byStranger.body]).toEqual([404, refusal('Wallet not found')]);
    }
    for (const kind of ['speed-up', 'cancel'] as const) {
      const replaced = await decide(t, w.id, held.id, kind);
      expect([replaced.status, replaced.body]).toEqual([400, refusal('Transaction cannot be replaced')]);
    }
    expect(await nodeNonce(w.address)).toBe(0);
    const recipientBefore = await publicClient(chain.rpcUrl).getBalance({ address: RECIPIENT });
    // Two approvals at once: one signs and sends, the other finds it decided.
    const [a, b] = await Promise.all([decide(t, w.id, held.id, 'approve'), decide(t, w.id, held.id, 'approve')]);
    const won = [a, b].filter((r) => r.status === 200);
    const lost = [a, b].filter((r) => r.status !== 200);
    expect(won).toHaveLength(1);
    expect([lost[0]!.status, lost[0]!.body]).toEqual([400, refusal('Transaction is not awaiting approval')]);
    expect(won[0]!.body.message).toBe('Transaction approved');
    expect(won[0]!.body.data).toMatchObject({ id: held.id, status: 'pending', nonce: 0, amount: '0.750000000000000000' });
    expect(won[0]!.body.data.tx_hash).toMatch(/^0x[0-9a-f]{64}$/);
    await waitForStatus(t, user, w.id, held.id, 'confirmed');
    const tx = await publicClient(chain.rpcUrl).getTransaction({ hash: won[0]!.body.data.tx_hash });
    expect([tx.from.toLowerCase(), tx.to?.toLowerCase(), tx.value, tx.nonce]).toEqual([
      w.address.toLowerCase(),
      RECIPIENT.toLowerCase(),
      (3n * ETH) / 4n,
      0,
    ]);
    expect(await publicClient(chain.rpcUrl).getBalance({ address: RECIPIENT })).toBe(recipientBefore + (3n * ETH) / 4n);
    expect(await nodeNonce(w.address)).toBe(1);
    const again = await decide(t, w.id, held.id, 'approve');
    expect([again.status, again.body]).toEqual([400, refusal('Transaction is not awaiting approval')]);
    const names = (await eventsOf(t, w.id)).filter((e) => e.payload.transaction_id === held.id).map((e) => `${e.name}:${e.payload.status}`);
    expect(names).toEqual([
      'transaction.approval_required:awaiting_approval',
      'transaction.created:pending',
      'transaction.confirmed:confirmed',
    ]);
  });

  it('approval checks the balance again: 400 and still awaiting when the money is gone; approved once it is back', async () => {
    const w = await heldWallet(t, 1n * ETH);
    const held = (await w.api.create({ amount: '0.6', token: 'ETH', address: RECIPIENT })).body.data;
    await chain.setBalance(w.address, ETH / 2n);
    const refused = await decide(t, w.id, held.id, 'approve');
    expect([refused.status, refused.body]).toEqual([400, refusal('Insufficient balance for transaction')]);
    expect((await t.request('GET', `/api/wallet/${w.id}/transaction/show/${held.id}`, { token: user.token })).body.data.status).toBe(
      'awaiting_approval',
    );
    expect(await nodeNonce(w.address)).toBe(0);
    await chain.setBalance(w.address, ETH);
    const approved = await decide(t, w.id, held.id, 'approve');
    expect([approved.status, approved.body.data?.status], approved.text).toEqual([200, 'pending']);
    await waitForStatus(t, user, w.id, held.id, 'confirmed');
  });

  it('is rejected unsigned: failed rejected_by_approver, transaction.failed, its reservation released', async () => {
    const w = await heldWallet(t, 1n * ETH);
    const held = (await w.api.create({ amount: '0.7', token: 'ETH', address: RECIPIENT })).body.data;
    expect((await w.api.create({ amount: '0.4', token: 'ETH', address: RECIPIENT })).status).toBe(400);
    const rejected = await decide(t, w.id, held.id, 'reject');
    expect(rejected.status, rejected.text).toBe(200);
    expect(rejected.body.message).toBe('Transaction rejected');
    expect(rejected.body.data).toMatchObject({
      id: held.id,
      status: 'failed',
      failure_reason: 'rejected_by_approver',
      tx_hash: null,
      nonce: null,
    });
    const failed = (await eventsOf(t, w.id, 'transaction.failed')).map((e) => e.payload);
    expect(failed).toEqual([
      expect.objectContaining({ transaction_id: held.id, status: 'failed', failure_reason: 'rejected_by_approver' }),
    ]);
    for (const kind of ['approve', 'reject'] as const) {
      const again = await decide(t, w.id, held.id, kind);
      expect([again.status, again.body]).toEqual([400, refusal('Transaction is not awaiting approval')]);
    }
    const after = await w.api.create({ amount: '0.4', token: 'ETH', address: RECIPIENT });
    expect([after.status, after.body.data?.nonce], after.text).toEqual([200, 0]);
    await waitForStatus(t, user, w.id, after.body.data.id, 'confirmed');
    expect(await nodeNonce(w.address)).toBe(1);
  });
});

describe('APPROVAL_TTL_S', () => {
  let short: TestApp;
  let shortNetworkId: number;
  beforeAll(async () => {
    short = await startTestApp({ workers: true, env: { APPROVAL_TTL_S: '2' } });
    shortNetworkId = await chain.register(short);
  });
  afterAll(async () => {
    await short?.close();
  });

  it('a transfer not decided in time fails approval_expired with transaction.failed; approving it then is 400', async () => {
    const owner = await short.createUser();
    const w = await fundedWallet(short, chain, owner, shortNetworkId, 1n * ETH);
    expect((await policyApi(short, w.id, owner.token).setPolicy({ approval_above: { ETH: '0.1' } })).status).toBe(200);
    const held = (await policyApi(short, w.id, owner.token).create({ amount: '0.5', token: 'ETH', address: RECIPIENT })).body.data;
    expect(held.status).toBe('awaiting_approval');
    const expired = await waitFor(
      async () => {
        const r = await short.request('GET', `/api/wallet/${w.id}/transaction/show/${held.id}`, { token: owner.token });
        return r.body.data.status === 'failed' ? r.body.data : null;
      },
      { timeoutMs: 10_000, message: 'held transfer expired' },
    );
    expect(expired).toMatchObject({ failure_reason: 'approval_expired', tx_hash: null, nonce: null });
    expect((await eventsOf(short, w.id, 'transaction.failed')).map((e) => e.payload.failure_reason)).toEqual(['approval_expired']);
    const late = await decide(short, w.id, held.id, 'approve', owner.token);
    expect([late.status, late.body]).toEqual([400, refusal('Transaction is not awaiting approval')]);
    expect(await nodeNonce(w.address)).toBe(0);
  });

  it('a reject after the time, before the expiry pass came by, expires it (400), as an approve does', async () => {
    const clock = new ManualClock();
    const idle = await startTestApp({ clock, env: { APPROVAL_TTL_S: '60' } }); // no workers: no expiry pass
    try {
      const idleNetwork = await chain.register(idle);
      const owner = await idle.createUser();
      const w = await fundedWallet(idle, chain, owner, idleNetwork, 1n * ETH);
      expect((await policyApi(idle, w.id, owner.token).setPolicy({ approval_above: { ETH: '0.1' } })).status).toBe(200);
      const heldTx = (await policyApi(idle, w.id, owner.token).create({ amount: '0.5', token: 'ETH', address: RECIPIENT })).body.data;
      clock.advance(61_000);
      const late = await decide(idle, w.id, heldTx.id, 'reject', owner.token);
      expect([late.status, late.body]).toEqual([400, refusal('Transaction is not awaiting approval')]);
      const shown = await idle.request('GET', `/api/wallet/${w.id}/transaction/show/${heldTx.id}`, { token: owner.token });
      expect(shown.body.data).toMatchObject({ status: 'failed', failure_reason: 'approval_expired', tx_hash: null });
    } finally {
      await idle.close();
    }
  });
});
