/**
 * The re-send queue on the real database: round robin over wallets (a wallet with 150 unmined
 * transfers does not starve another wallet's one), bounded per pass, and a backoff per
 * transaction with a cap. Then through the watcher: with one wallet's 150 transfers the node
 * cannot tell anything about (every check of them fails), another wallet's transfer, with a
 * higher nonce and cut on its first send, is still sent again and confirmed.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestApp, TestUser } from '../helpers/app.js';
import type { TestChain } from '../helpers/chain.js';
import { lockWallet } from '../../src/modules/wallets/wallets.repository.js';
import * as repo from '../../src/modules/transactions/transactions.repository.js';
import * as versionsRepo from '../../src/modules/transactions/transactions.versions.repository.js';
import { recheckBackoffMs } from '../../src/modules/transactions/transactions.recheck.js';
import { ETH, fundedWallet, RECIPIENT, RpcProxy, waitForStatus, type FundedWallet, startProxiedSuite } from '../helpers/transfers.js';

let t: TestApp;
let chain: TestChain;
let proxy: RpcProxy;
let networkId: number;
let user: TestUser;

let close: () => Promise<void>;

beforeAll(async () => {
  ({ t, chain, proxy, networkId, user, close } = await startProxiedSuite({ MAX_PENDING_PER_WALLET: '1000' }));
});

afterAll(async () => {
  await close?.();
});

/** `count` pending transfers of `w` from nonce `from`, recorded as the create flow records them (signed bytes the node never saw). */
async function recordUnmined(w: FundedWallet, from: number, count: number, createdAt: number): Promise<number[]> {
  const token = await t.store.db
    .selectFrom('wallet_tokens')
    .select(['id', 'symbol'])
    .where('wallet_id', '=', w.id)
    .where('is_native', '=', 1)
    .executeTakeFirstOrThrow();
  return t.store.db.transaction().execute(async (trx) => {
    await lockWallet(trx, w.id);
    const ids: number[] = [];
    for (let i = 0; i < count; i++) {
      const nonce = from + i;
      const hash = `0xbbbb${(BigInt(w.id) * 1_000_000n + BigInt(nonce)).toString(16).padStart(60, '0')}`;
      const id = await repo.insertTransaction(
        trx,
        {
          wallet_id: w.id,
          token_id: token.id,
          symbol: token.symbol,
          type: 'transfer',
          status: 'pending',
          amount: 1n,
          fee_reserved: 0n,
          from_address: w.address,
          to_address: RECIPIENT,
          tx_hash: hash,
          log_index: -1,
          block_number: null,
          block_hash: null,
          block_timestamp: null,
          nonce,
          gas: 21000n,
          gas_price: 1n,
          gas_used: null,
          cumulative_gas_used: null,
          receipt_status: null,
          raw_tx: '0xdeadbeef',
          confirmed_at: null,
        },
        createdAt,
      );
      ids.push(id!);
    }
    await repo.setNextNonce(trx, w.id, from + count);
    return ids;
  });
}

describe('the re-send queue', () => {
  it('takes every wallet in turn, at most 10 of one wallet and 100 in all, lowest nonces first', async () => {
    const busy = await fundedWallet(t, chain, user, networkId, 0n);
    const quiet = await fundedWallet(t, chain, user, networkId, 0n);
    // Stamped in the future: the running watcher leaves rows alone until they are older than its
    // grace, so it cannot take (and fail) any of them while this test reads the queue itself.
    const stamped = Date.now() + 600_000;
    const busyIds = await recordUnmined(busy, 0, 150, stamped);
    // The quiet wallet's transfer has a high nonce and is the newest: a queue by nonce, or by age, would put it last.
    const [quietId] = await recordUnmined(quiet, 500, 1, stamped + 1000);
    const now = Date.now();
    const grace = stamped + 2000;
    const due = await versionsRepo.listResendQueue(t.store.db, networkId, {
      nowMs: now,
      graceBeforeMs: grace,
      all: false,
      perWallet: 10,
      limit: 100,
    });
    const mine = due.filter((r) => r.wallet_id === busy.id || r.wallet_id === quiet.id);
    expect(mine.filter((r) => r.wallet_id === busy.id).map((r) => r.id)).toEqual(busyIds.slice(0, 10));
    expect(mine.filter((r) => r.wallet_id === quiet.id).map((r) => r.id)).toEqual([quietId]);
    expect(due.length).toBeLessThanOrEqual(100);

    // A checked row waits its backoff: the next pass takes the busy wallet's next ten.
    for (const r of mine) await versionsRepo.scheduleCheck(t.store.db, r.id, now + 60_000, now);
    const next = await versionsRepo.listResendQueue(t.store.db, networkId, {
      nowMs: now + 1,
      graceBeforeMs: grace,
      all: false,
      perWallet: 10,
      limit: 100,
    });
    expect(next.filter((r) => r.wallet_id === busy.id).map((r) => r.id)).toEqual(busyIds.slice(10, 20));
    expect(next.some((r) => r.wallet_id === quiet.id)).toBe(false);
    // Clean up: these rows are not real transactions.
    await t.store.db
      .updateTable('transactions')
      .set({ status: 'failed', failure_reason: 'rejected' })
      .where('wallet_id', 'in', [busy.id, quiet.id])
      .execute();
  });

  it('backs off per transaction: the recheck interval doubling per check, capped at 8 intervals (and 10 minutes)', () => {
    expect([0, 1, 2, 3, 4, 10, 50].map((n) => recheckBackoffMs(30_000, n))).toEqual([
      30_000, 60_000, 120_000, 240_000, 240_000, 240_000, 240_000,
    ]);
    expect(recheckBackoffMs(300_000, 5)).toBe(600_000);
    expect(recheckBackoffMs(3_600_000, 5)).toBe(3_600_000);
  });

  it('through the watcher: one wallet with 150 transfers the node cannot answer about does not starve another wallet’s re-send', async () => {
    const busy = await fundedWallet(t, chain, user, networkId, 0n);
    const quiet = await fundedWallet(t, chain, user, networkId, 2n * ETH);
    await chain.rpc('anvil_setNonce', [quiet.address, '0xc8']); // nonce 200: above all of the busy wallet's
    await recordUnmined(busy, 0, 150, Date.now() - 3_600_000);
    // Every check of the busy wallet's transfers fails (the node errors on them): they stay due.
    proxy.rule('eth_getTransactionByHash', { action: 'error', message: 'upstream busy', match: (p) => String(p[0]).startsWith('0xbbbb') });
    // The quiet wallet's send is cut: only a re-send from the queue can get it mined.
    proxy.drop('eth_sendRawTransaction');
    const res = await t.request('POST', `/api/wallet/${quiet.id}/transaction/create`, {
      token: user.token,
      body: { amount: '1', token: 'ETH', address: RECIPIENT },
    });
    expect(res.status).toBe(200);
    proxy.allow('eth_sendRawTransaction');
    expect(res.body.data.nonce).toBe(200);
    const done = await waitForStatus(t, user, quiet.id, res.body.data.id, 'confirmed', 30_000);
    expect(done.tx_hash).toBe(res.body.data.tx_hash);
    proxy.allow('eth_getTransactionByHash');
    // The busy wallet's rows were checked too, each with its own backoff; none of them is final.
    const busyRows = await t.store.db
      .selectFrom('transactions')
      .select(['status', 'check_count'])
      .where('wallet_id', '=', busy.id)
      .execute();
    expect(busyRows.every((r) => r.status === 'pending')).toBe(true);
    expect(busyRows.some((r) => Number(r.check_count) > 0)).toBe(true);
  });
});
