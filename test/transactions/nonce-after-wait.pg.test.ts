/**
 * PostgreSQL only: a create that waited for its wallet's lock sees what the holder committed.
 * PostgreSQL (READ COMMITTED) runs a statement in the snapshot of its start: a lock statement
 * that waited still sees the other tables as they were before the commit it waited for.
 *
 * - It must not reuse a nonce the holder used. The lock statement used to read
 *   `wallet_nonces.next_nonce` too, and only the pending rows were checked, so a transfer that was
 *   no longer pending by then (mined and settled meanwhile, as the watcher can between the
 *   holder's commit and this create's next statement) left its nonce free to take again when the
 *   create's own chain read predated it. Every nonce a row of the wallet used from the snapshot's
 *   mined count up is skipped. The test holds the wallet's lock in place of the earlier create,
 *   starts a create over HTTP, and while it waits commits what the earlier create and the watcher
 *   would have: `next_nonce` 1 and a confirmed transfer with nonce 0 (the chain is left without
 *   it, so the create's read of the node says 0). Without the skip the create signs nonce 0 again.
 * - It must take a nonce the holder gave back: a transfer refused on its first send fails
 *   (`failUnmined`) and lowers `next_nonce` to its nonce while a later transfer waits in the node
 *   behind it. Read in the lock statement, `next_nonce` was the value from before, the create
 *   signed above the gap, and nothing ever used the nonce given back. The test fails the refused
 *   transfer in the transaction that holds the lock while the create waits; the create must sign
 *   the nonce given back, and both transfers then mine.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ApiResponse } from '../helpers/app.js';
import { waitFor } from '../helpers/wait.js';
import { insertTransaction, setNextNonce } from '../../src/modules/transactions/transactions.repository.js';
import { listTokens } from '../../src/modules/tokens/tokens.repository.js';
import { lockWallet } from '../../src/modules/wallets/wallets.repository.js';
import { failUnmined } from '../../src/modules/transactions/transactions.state.js';
import { ETH, fundedWallet, publicClient, RECIPIENT } from '../helpers/transfers.js';
import { lockWaiters, startStepSuite, type StepSuite } from './watcher-steps.js';

let s: StepSuite;

beforeAll(async () => {
  s = await startStepSuite();
});

afterAll(async () => s?.close());

describe('a create that waited for the wallet lock', () => {
  it('skips the nonce of a transfer committed and settled while it waited', async () => {
    const { t, user, chain, networkId } = s;
    const w = await fundedWallet(t, chain, user, networkId, 5n * ETH);
    const eth = (await listTokens(t.store.db, w.id)).find((x) => x.is_native === 1)!;
    let create: Promise<ApiResponse> | undefined;
    await t.store.db.transaction().execute(async (trx) => {
      await lockWallet(trx, w.id);
      create = t.request('POST', `/api/wallet/${w.id}/transaction/create`, {
        token: user.token,
        body: { amount: '0.5', token: 'ETH', address: RECIPIENT },
      });
      await waitFor(async () => (await lockWaiters(s)) > 0, { timeoutMs: 10_000, message: 'the create waiting for the wallet lock' });
      // What the earlier create committed, and the watcher settled: nonce 0 used and confirmed.
      await setNextNonce(trx, w.id, 1);
      await insertTransaction(
        trx,
        {
          wallet_id: w.id,
          token_id: eth.id,
          symbol: 'ETH',
          type: 'transfer',
          status: 'confirmed',
          amount: ETH / 10n,
          fee_reserved: 0n,
          from_address: w.address,
          to_address: RECIPIENT,
          tx_hash: `0x${'ab'.repeat(32)}`,
          log_index: 0,
          block_number: 1,
          block_hash: `0x${'cd'.repeat(32)}`,
          block_timestamp: Date.now(),
          nonce: 0,
          gas: 21_000n,
          gas_price: 10n ** 9n,
          gas_used: 21_000n,
          cumulative_gas_used: 21_000n,
          receipt_status: 1,
          raw_tx: null,
          confirmed_at: Date.now(),
        },
        Date.now(),
      );
    });
    const res = await create!;
    expect(res.status, res.text).toBe(200);
    expect(res.body.data.nonce).toBe(1);
    const nonces = await t.store.db
      .selectFrom('transactions')
      .select('nonce')
      .where('wallet_id', '=', w.id)
      .orderBy('nonce', 'asc')
      .execute();
    expect(nonces.map((r) => Number(r.nonce))).toEqual([0, 1]);
  });

  it('takes the nonce a transfer refused on its first send gave back while it waited', async () => {
    const { t, user, chain, networkId } = s;
    const w = await fundedWallet(t, chain, user, networkId, 5n * ETH);
    const create = () =>
      t.request('POST', `/api/wallet/${w.id}/transaction/create`, {
        token: user.token,
        body: { amount: '0.5', token: 'ETH', address: RECIPIENT },
      });
    // Nonce 0 signed and sent, then gone from the node (as if the node had refused it); nonce 1
    // waits in the node behind it.
    const refused = await create();
    expect({ status: refused.status, nonce: refused.body.data?.nonce }, refused.text).toEqual({ status: 200, nonce: 0 });
    await chain.rpc('anvil_dropTransaction', [refused.body.data.tx_hash]);
    const waiting = await create();
    expect({ status: waiting.status, nonce: waiting.body.data?.nonce }, waiting.text).toEqual({ status: 200, nonce: 1 });

    let third: Promise<ApiResponse> | undefined;
    await t.store.db.transaction().execute(async (trx) => {
      await lockWallet(trx, w.id);
      third = create();
      await waitFor(async () => (await lockWaiters(s)) > 0, { timeoutMs: 10_000, message: 'the create waiting for the wallet lock' });
      // The refusal of nonce 0 recorded while the create waits: failed, nonce 0 given back.
      const failed = await failUnmined(trx, refused.body.data.id, {
        reason: 'insufficient funds for gas * price + value',
        failure: 'rejected',
        nonceUsed: false,
        nowMs: Date.now(),
      });
      expect(failed?.status).toBe('failed');
    });
    const res = await third!;
    expect({ status: res.status, nonce: res.body.data?.nonce }, res.text).toEqual({ status: 200, nonce: 0 });
    await chain.mine(1);
    expect(await publicClient(chain.rpcUrl).getTransactionCount({ address: w.address })).toBe(2);
  });
});
