/**
 * Speed-up and cancel by nonce replacement, on a real anvil that does not mine by itself (the
 * transfers wait in its pool, as one priced too low would): the sped-up version mines and the
 * transaction takes its hash; a mined cancel fails it as `cancelled` and releases its
 * reservation; balances exact. Also the stuck flag and the pending cap.
 */
import type { Hex } from 'viem';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp, type TestUser } from '../helpers/app.js';
import { startTestChain, type TestChain } from '../helpers/chain.js';
import { waitFor } from '../helpers/wait.js';
import { formatUnits18 } from '../../src/lib/money.js';
import { claimAttempt } from '../../src/modules/transactions/transactions.versions.repository.js';
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

let t: TestApp;
let chain: TestChain;
let networkId: number;
let user: TestUser;

beforeAll(async () => {
  t = await startTestApp({ workers: true, env: { WATCHER_RECHECK_MS: '300', TX_STUCK_AFTER_S: '2', MAX_PENDING_PER_WALLET: '3' } });
  chain = await startTestChain();
  networkId = await chain.register(t);
  await waitForCursor(t, networkId);
  user = await t.createUser();
  await chain.rpc('evm_setAutomine', [false]);
});

afterAll(async () => {
  await t?.close();
  await chain?.stop();
});

const client = () => publicClient(chain.rpcUrl);
const create = (w: FundedWallet, amount: string) =>
  t.request('POST', `/api/wallet/${w.id}/transaction/create`, { token: user.token, body: { amount, token: 'ETH', address: RECIPIENT } });
const replace = (w: FundedWallet, id: number, kind: 'speed-up' | 'cancel', body: unknown = {}) =>
  t.request('POST', `/api/wallet/${w.id}/transaction/${id}/${kind}`, { token: user.token, body });

async function paidFee(hash: string): Promise<bigint> {
  const r = await client().getTransactionReceipt({ hash: hash as Hex });
  return r.gasUsed * r.effectiveGasPrice;
}

async function inPool(hash: string): Promise<boolean> {
  return (await chain.rpc('eth_getTransactionByHash', [hash])) !== null;
}

describe('speed-up', () => {
  it('replaces the pending transfer at its nonce with fees 10% higher; the new hash mines and the transaction takes it', async () => {
    const w = await fundedWallet(t, chain, user, networkId, 5n * ETH);
    const res = await create(w, '1');
    expect(res.status).toBe(200);
    const old = res.body.data.tx_hash as string;
    expect(await inPool(old)).toBe(true);

    const fast = await replace(w, res.body.data.id, 'speed-up', { fee_level: 'high' });
    expect(fast.status).toBe(200);
    expect(fast.body.message).toBe('Transaction sped up');
    expect(fast.body.data).toMatchObject({
      id: res.body.data.id,
      status: 'pending',
      nonce: 0,
      replaced_hashes: [old],
      failure_reason: null,
    });
    expect(fast.body.data.tx_hash).not.toBe(old);
    const oldPrice = BigInt(Math.round(res.body.data.gas_price * 1e18));
    const newPrice = BigInt(fast.body.data.gas_price.replace('.', ''));
    expect(newPrice * 100n).toBeGreaterThanOrEqual(oldPrice * 110n);
    expect(await inPool(fast.body.data.tx_hash)).toBe(true);

    await chain.mine(1);
    const done = await waitForStatus(t, user, w.id, res.body.data.id, 'confirmed');
    expect(done).toMatchObject({ tx_hash: fast.body.data.tx_hash, replaced_hashes: [old], failure_reason: null, stuck: false });
    expect(await chain.rpc('eth_getTransactionReceipt', [old])).toBeNull();
    expect(await client().getBalance({ address: w.address })).toBe(5n * ETH - ETH - (await paidFee(done.tx_hash)));
    const confirmed = await eventsOf(t, w.id, 'transaction.confirmed');
    expect(confirmed.map((e) => e.payload.tx_hash)).toEqual([fast.body.data.tx_hash]);

    // Final now: it cannot be replaced again.
    const again = await replace(w, res.body.data.id, 'speed-up');
    expect(again.status).toBe(400);
    expect(again.body.message).toBe('Transaction cannot be replaced');
  });

  it('the original mining first wins: the transaction keeps the original hash', async () => {
    const w = await fundedWallet(t, chain, user, networkId, 5n * ETH);
    const res = await create(w, '1');
    const fast = await replace(w, res.body.data.id, 'speed-up');
    expect(fast.status).toBe(200);
    // A node still mines the original (dropping the replacement from this pool, re-sending the original).
    await chain.rpc('anvil_dropTransaction', [fast.body.data.tx_hash]);
    const raw = await t.store.db
      .selectFrom('transaction_broadcasts')
      .select('raw_tx')
      .where('tx_hash', '=', res.body.data.tx_hash)
      .executeTakeFirstOrThrow();
    await chain.rpc('eth_sendRawTransaction', [raw.raw_tx]);
    await chain.mine(1);
    const done = await waitForStatus(t, user, w.id, res.body.data.id, 'confirmed');
    expect(done.tx_hash).toBe(res.body.data.tx_hash);
    expect(done.replaced_hashes).toEqual([fast.body.data.tx_hash]);
    expect(await client().getBalance({ address: w.address })).toBe(5n * ETH - ETH - (await paidFee(done.tx_hash)));
  });

  it('explicit fees below the minimum raise are 422; an unknown id is 404', async () => {
    const w = await fundedWallet(t, chain, user, networkId, 5n * ETH);
    const res = await create(w, '1');
    const low = await replace(w, res.body.data.id, 'speed-up', {
      max_fee_per_gas: '0.000000000000000001',
      max_priority_fee_per_gas: '0.000000000000000001',
    });
    expect(low.status).toBe(422);
    expect(Object.keys(low.body.data)).toEqual(['max_fee_per_gas']);
    expect((await replace(w, 999_999, 'cancel')).status).toBe(404);
    expect((await replace(w, res.body.data.id, 'speed-up', { fee_level: 'fastest' })).status).toBe(422);
    await chain.mine(1);
    await waitForStatus(t, user, w.id, res.body.data.id, 'confirmed');
  });
});

describe('cancel', () => {
  it('a mined cancel fails the transaction as cancelled, releases its reservation; balances exact', async () => {
    const w = await fundedWallet(t, chain, user, networkId, 5n * ETH);
    const before = await client().getBalance({ address: RECIPIENT });
    const res = await create(w, '2');
    // 2 ETH reserved: 3.5 more does not fit.
    expect((await create(w, '3.5')).status).toBe(400);
    const c = await replace(w, res.body.data.id, 'cancel');
    expect(c.status).toBe(200);
    expect(c.body.message).toBe('Transaction cancel sent');
    expect(c.body.data).toMatchObject({ status: 'pending', replaced_hashes: [res.body.data.tx_hash] });

    await chain.mine(1);
    const failed = await waitForStatus(t, user, w.id, res.body.data.id, 'failed');
    expect(failed).toMatchObject({
      failure_reason: 'cancelled',
      tx_hash: c.body.data.tx_hash,
      replaced_hashes: [res.body.data.tx_hash],
      amount: '2.000000000000000000',
    });
    const events = await eventsOf(t, w.id, 'transaction.failed');
    expect(events.map((e) => e.payload)).toEqual([
      expect.objectContaining({ transaction_id: res.body.data.id, failure_reason: 'cancelled', tx_hash: c.body.data.tx_hash }),
    ]);
    const left = 5n * ETH - (await paidFee(c.body.data.tx_hash));
    expect(await client().getBalance({ address: w.address })).toBe(left);
    expect(await client().getBalance({ address: RECIPIENT })).toBe(before);
    // The reservation is released: 3.5 fits now.
    const next = await create(w, '3.5');
    expect(next.status).toBe(200);
    expect(next.body.data.nonce).toBe(1);
    await chain.mine(1);
    await waitForStatus(t, user, w.id, next.body.data.id, 'confirmed');
  });

  it('the watcher re-sends only the current version: a re-send of the version a cancel replaced is not made', async () => {
    const w = await fundedWallet(t, chain, user, networkId, 5n * ETH);
    const res = await create(w, '0.5');
    const c = await replace(w, res.body.data.id, 'cancel');
    expect(c.status).toBe(200);
    const attempts = async () =>
      (
        await t.store.db
          .selectFrom('transactions')
          .select('broadcast_attempts')
          .where('id', '=', res.body.data.id)
          .executeTakeFirstOrThrow()
      ).broadcast_attempts;
    const before = Number(await attempts());
    // A re-send queued before the cancel was recorded names the original: not counted, not sent.
    expect(await claimAttempt(t.store.db, res.body.data.id, res.body.data.tx_hash, Date.now())).toBe('stale');
    expect(Number(await attempts())).toBe(before);
    expect(await claimAttempt(t.store.db, res.body.data.id, c.body.data.tx_hash, Date.now())).toBe(false);
    expect(Number(await attempts())).toBe(before + 1);
    await chain.mine(1);
    expect(await waitForStatus(t, user, w.id, res.body.data.id, 'failed')).toMatchObject({ failure_reason: 'cancelled' });
    expect(await claimAttempt(t.store.db, res.body.data.id, c.body.data.tx_hash, Date.now())).toBe('stale');
  });

  // Found by the simulation (seed 2603, PostgreSQL): the watcher re-priced a cancelled transfer
  // with a speed-up, which was recorded as a speed-up of the transfer; when it mined, the service
  // recorded the 0.00242 ETH transfer as sent while the chain had moved nothing.
  it('a speed-up of a cancel is the cancel at higher fees: mined, the transaction fails as cancelled and nothing moved', async () => {
    const w = await fundedWallet(t, chain, user, networkId, 5n * ETH);
    const before = await client().getBalance({ address: RECIPIENT });
    const res = await create(w, '1.5');
    const c = await replace(w, res.body.data.id, 'cancel');
    expect(c.status).toBe(200);
    const fast = await replace(w, res.body.data.id, 'speed-up');
    expect(fast.status).toBe(200);
    expect(fast.body.data.replaced_hashes).toEqual([res.body.data.tx_hash, c.body.data.tx_hash]);
    const mined = await client().getTransaction({ hash: fast.body.data.tx_hash as Hex });
    expect([mined.to?.toLowerCase(), mined.value]).toEqual([w.address.toLowerCase(), 0n]);

    await chain.mine(1);
    const failed = await waitForStatus(t, user, w.id, res.body.data.id, 'failed');
    expect(failed).toMatchObject({ failure_reason: 'cancelled', tx_hash: fast.body.data.tx_hash });
    expect(await client().getBalance({ address: w.address })).toBe(5n * ETH - (await paidFee(fast.body.data.tx_hash)));
    expect(await client().getBalance({ address: RECIPIENT })).toBe(before);
    // The books agree: the wallet's recorded change is the cancel's fee alone (the funding was
    // anvil_setBalance, which no transfer records), not the 1.5 ETH as well.
    const rec = await t.request('GET', `/api/wallet/${w.id}/reconciliation`, { token: user.token });
    expect(rec.status).toBe(200);
    expect(rec.body.data.addresses.map((a: any) => a.tokens[0].recorded_change)).toEqual([
      `-${formatUnits18(await paidFee(fast.body.data.tx_hash), 18)}`,
    ]);
  });
});

describe('stuck and the pending cap', () => {
  it('a transfer pending longer than TX_STUCK_AFTER_S is stuck, warned about once and counted by the supervisor', async () => {
    const w = await fundedWallet(t, chain, user, networkId, 5n * ETH);
    const res = await create(w, '1');
    expect(res.body.data.stuck).toBe(false);
    const shown = await waitFor(
      async () => {
        const r = await t.request('GET', `/api/wallet/${w.id}/transaction/show/${res.body.data.id}`, { token: user.token });
        return r.body.data.stuck === true ? r.body.data : null;
      },
      { timeoutMs: 15_000, message: 'stuck' },
    );
    expect(shown.status).toBe('pending');
    const sup = await t.request('GET', '/api/supervisor', { token: user.token });
    expect(sup.body.data.transactions).toEqual({ pending: 1, stuck: 1 });
    await waitFor(
      () => t.logs.filter((l) => l.includes('transaction stuck') && l.includes(`"transaction_id":${res.body.data.id},`)).length === 1,
    );
    await chain.mine(1);
    const done = await waitForStatus(t, user, w.id, res.body.data.id, 'confirmed');
    expect(done.stuck).toBe(false);
    expect(t.logs.filter((l) => l.includes('transaction stuck') && l.includes(`"transaction_id":${res.body.data.id},`))).toHaveLength(1);
    expect((await t.request('GET', '/api/supervisor', { token: user.token })).body.data.transactions).toEqual({ pending: 0, stuck: 0 });
  });

  it('at most MAX_PENDING_PER_WALLET unconfirmed outgoing transactions, even when created at once', async () => {
    const w = await fundedWallet(t, chain, user, networkId, 10n * ETH);
    const results = await Promise.all(Array.from({ length: 6 }, () => create(w, '0.1')));
    const ok = results.filter((r) => r.status === 200);
    expect(ok).toHaveLength(3);
    expect(results.filter((r) => r.status === 400).map((r) => r.body.message)).toEqual(Array(3).fill('Too many pending transactions'));
    expect(ok.map((r) => r.body.data.nonce).sort()).toEqual([0, 1, 2]);
    await chain.mine(1);
    for (const r of ok) await waitForStatus(t, user, w.id, r.body.data.id, 'confirmed');
    expect((await create(w, '0.1')).status).toBe(200);
    await chain.mine(1);
  });
});

describe('Idempotency-Key on a replacement', () => {
  it('a cancel sent again with the same key replays the cancel recorded, before and after it mined, and signs no other', async () => {
    const w = await fundedWallet(t, chain, user, networkId, 5n * ETH);
    const res = await create(w, '1');
    expect(res.status).toBe(200);
    const id = res.body.data.id as number;
    const cancel = () =>
      t.request('POST', `/api/wallet/${w.id}/transaction/${id}/cancel`, {
        token: user.token,
        body: {},
        headers: { 'idempotency-key': `cancel-${id}` },
      });

    const first = await cancel();
    expect(first.status).toBe(200);
    expect(first.body.data).toMatchObject({ id, status: 'pending', replaced_hashes: [res.body.data.tx_hash] });
    // The answer was cut: the client sends it again. Without the key honoured this signed a
    // second cancel (another hash), or, once the first mined, answered 400 for a cancel the chain shows.
    const again = await cancel();
    expect(again.status).toBe(200);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(again.body).toEqual(first.body);

    await chain.mine(1);
    const done = await waitForStatus(t, user, w.id, id, 'failed');
    expect(done).toMatchObject({ tx_hash: first.body.data.tx_hash, failure_reason: 'cancelled', replaced_hashes: [res.body.data.tx_hash] });
    const late = await cancel();
    expect(late.status).toBe(200);
    expect(late.body).toEqual(first.body);
    // Another key is another request: the transaction is final now.
    const other = await t.request('POST', `/api/wallet/${w.id}/transaction/${id}/cancel`, {
      token: user.token,
      body: {},
      headers: { 'idempotency-key': `cancel-${id}-b` },
    });
    expect(other.status).toBe(400);
    expect(other.body.message).toBe('Transaction cannot be replaced');
  });

  it('a speed-up sent again with the same key replays it: the fees are raised once', async () => {
    const w = await fundedWallet(t, chain, user, networkId, 5n * ETH);
    const res = await create(w, '1');
    const id = res.body.data.id as number;
    const speedUp = () =>
      t.request('POST', `/api/wallet/${w.id}/transaction/${id}/speed-up`, {
        token: user.token,
        body: {},
        headers: { 'idempotency-key': `fast-${id}` },
      });
    const first = await speedUp();
    expect(first.status).toBe(200);
    const again = await speedUp();
    expect(again.status).toBe(200);
    expect(again.body.data.tx_hash).toBe(first.body.data.tx_hash);
    expect(again.body.data.replaced_hashes).toEqual([res.body.data.tx_hash]);
    await chain.mine(1);
    const done = await waitForStatus(t, user, w.id, id, 'confirmed');
    expect(done.tx_hash).toBe(first.body.data.tx_hash);
  });
});
