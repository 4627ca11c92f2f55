/**
 * The state changes of a transaction, one function each, every one with its event written in
 * the same database transaction (the outbox). The callers (the create route's broadcast, the
 * chain watcher) run them inside `db.transaction()`; none of them touches the network.
 *
 *   (new) ──create──▶ pending ──mined + confirmations──▶ confirmed
 *                        │  ├──mined, reverted + confirmations──▶ failed (reverted)
 *                        │  └──its cancel mined + confirmations──▶ failed (cancelled)
 *                        ├──first send refused by the node──▶ failed (rejected; reservation released, nonce healed)
 *                        └──nonce used at confirmed depth by another transaction──▶ failed (dropped)
 *   confirmed/failed(mined) ──block orphaned by a reorg──▶ pending (block fields cleared; transaction.reorged)
 *   receipt: recorded confirmed (or pending until its confirmations), then as above on a reorg;
 *   a reorged receipt that does not come back and whose sender's nonce another transaction took
 *   at confirmed depth ──▶ failed (dropped). (Receipts `orphaned` by earlier versions stay
 *   hidden; the same id comes back if they reappear.)
 */
import type { Executor } from '../../db/index.js';
import { healNextNonce } from '../../chain/nonce.js';
import { lockEventsOf, recordEvent } from '../events/outbox.js';
import { lockWallet, lockWalletOfUser } from '../wallets/wallets.repository.js';
import * as repo from './transactions.repository.js';
import type { FailureReason, TxRecord } from './transactions.repository.js';
import * as versionsRepo from './transactions.versions.repository.js';
import * as watchRepo from './transactions.watch.repository.js';
import { transactionEventPayload, type TxEventName } from './transactions.views.js';

/** Writes a transaction.* event of this row in the caller's database transaction (the outbox). */
export async function announce(trx: Executor, rec: TxRecord, name: TxEventName, nowMs: number): Promise<void> {
  await recordEvent(trx, { userId: rec.user_id, walletId: rec.wallet_id, name, payload: transactionEventPayload(rec, name, nowMs), nowMs });
}

/** Locks several wallets in ascending id order (one global order: no deadlock between lockers). */
export async function lockWallets(trx: Executor, walletIds: Iterable<number>): Promise<void> {
  for (const id of [...new Set(walletIds)].sort((a, b) => a - b)) await lockWallet(trx, id);
}

/**
 * Everything a transaction that writes several wallets' transfers and events locks, taken before
 * any of it is written, in the one lock order: the wallets in ascending id, then their users'
 * event orders in ascending user (outbox.ts `lockEventsOf`). A transfer creation takes its wallet,
 * then its user's event order, so it can never hold one of these while waiting for another that
 * this transaction holds (the chain watcher's block batch used to take a wallet, an event order,
 * then the next wallet: a deadlock with a create on that wallet).
 *
 * `owners` maps each wallet to its user: a wallet's owner never changes, so the users' event
 * orders need not wait for the wallets' rows to be read. Every lock is issued together, in the
 * one order (on PostgreSQL one round trip: the server takes them in the order sent), where the
 * event orders waited for the wallets' answers, a round trip with the wallets locked.
 */
export async function lockWalletsAndEvents(trx: Executor, owners: ReadonlyMap<number, number>): Promise<void> {
  const wallets = [...owners.keys()].sort((a, b) => a - b);
  await Promise.all([...wallets.map((id) => lockWalletOfUser(trx, id)), lockEventsOf(trx, new Set(owners.values()))]);
}

/**
 * A transfer that was never mined and never will be: its first send was refused (`rejected`:
 * it was never accepted anywhere), or its nonce was used at confirmed depth by another
 * transaction (`dropped`). Failed, which releases its reservation. Unless its nonce was taken
 * by another transaction, the nonce is free again and next_nonce comes back down to it (see
 * chain/nonce.ts).
 */
export async function failUnmined(
  trx: Executor,
  txId: number,
  opts: { reason: string; failure: Extract<FailureReason, 'rejected' | 'dropped'>; nonceUsed: boolean; nowMs: number },
): Promise<TxRecord | null> {
  const before = await repo.findRecord(trx, txId);
  if (!before) return null;
  await lockWallet(trx, before.wallet_id);
  const nextNonce = await repo.findNextNonce(trx, before.wallet_id);
  if (!(await watchRepo.markFailed(trx, txId, opts.reason, opts.failure, opts.nowMs))) return null;
  if (!opts.nonceUsed && before.nonce !== null) {
    const healed = healNextNonce(nextNonce, before.nonce);
    if (healed !== nextNonce) await repo.setNextNonce(trx, before.wallet_id, healed);
  }
  const after = (await repo.findRecord(trx, txId))!;
  await announce(trx, after, 'transaction.failed', opts.nowMs);
  return after;
}

/**
 * Every endpoint refused a pending transfer's re-send for a reason other than its fee (e.g. on an
 * OP chain the L1 data fee rose past its reserve): `stuck` at once with the node's words and
 * `transaction.stuck`, once (null when it was already so, or is no longer pending). It keeps its
 * nonce and reservation: a speed-up, a cancel or the chain settles it.
 */
export async function stickRefused(trx: Executor, txId: number, reason: string, nowMs: number): Promise<TxRecord | null> {
  const before = await repo.findRecord(trx, txId);
  if (!before) return null;
  await lockWallet(trx, before.wallet_id);
  if (!(await versionsRepo.markStuckRefused(trx, txId, reason, nowMs))) return null;
  const after = (await repo.findRecord(trx, txId))!;
  await announce(trx, after, 'transaction.stuck', nowMs);
  return after;
}

/**
 * Mined pending rows whose confirmations are reached (caller holds their wallets' locks and their
 * users' event orders): each confirmed, or failed if it reverted or its mined version is a
 * cancel, with its event; `refunded(after)` right after the event of a confirmed row that pays a
 * refund. A row no longer mined and pending is skipped. Returns the rows settled. The updates are
 * issued together, then the events in the rows' order: on PostgreSQL two round trips for the
 * batch where each row took two (src/db/pipelined.ts); the events come in the rows' order
 * either way.
 */
export async function settleMinedAll(
  trx: Executor,
  recs: TxRecord[],
  nowMs: number,
  refunded: (after: TxRecord) => Promise<void>,
): Promise<TxRecord[]> {
  const outcomes = recs.map((rec): 'reverted' | 'cancelled' | 'confirmed' =>
    rec.receipt_status === 0 ? 'reverted' : rec.broadcast_kind === 'cancel' ? 'cancelled' : 'confirmed',
  );
  const afters = await Promise.all(recs.map((rec, i) => watchRepo.settle(trx, rec.id, outcomes[i]!, nowMs)));
  const settled = afters.flatMap((after, i) =>
    after ? [{ after, name: outcomes[i] === 'confirmed' ? ('transaction.confirmed' as const) : ('transaction.failed' as const) }] : [],
  );
  const event = ({ after, name }: (typeof settled)[number]) =>
    recordEvent(trx, {
      userId: after.user_id,
      walletId: after.wallet_id,
      name,
      payload: transactionEventPayload(after, name, nowMs),
      nowMs,
    });
  const paysRefund = ({ after, name }: (typeof settled)[number]) => name === 'transaction.confirmed' && after.refund_id !== null;
  if (!settled.some(paysRefund)) await Promise.all(settled.map(event));
  else {
    for (const s of settled) {
      await event(s);
      if (paysRefund(s)) await refunded(s.after);
    }
  }
  return settled.map((s) => s.after);
}

/**
 * An incoming transfer seen in a processed block, recorded once (the unique key makes a second
 * sighting a no-op; an orphaned one comes back). Caller holds the wallet's lock. `transaction.confirmed` is emitted when it
 * is recorded confirmed; a receipt recorded pending (more confirmations needed) emits it when
 * `settleMined` confirms it.
 */
export async function recordReceipt(trx: Executor, row: repo.NewTx, nowMs: number): Promise<TxRecord | null> {
  await repo.adoptParkedReceipt(trx, row); // the same token transfer, reorged out of another block
  const id = await repo.insertTransaction(trx, row, nowMs);
  if (id === null) return null;
  const rec = (await repo.findRecord(trx, id))!;
  if (rec.status === 'confirmed') {
    await announce(trx, rec, 'transaction.confirmed', nowMs);
  }
  return rec;
}

/**
 * Rolls back everything recorded from blocks above `ancestor` on one network (docs/transactions.md,
 * "Reorgs"): every row mined there, outgoing or receipt, goes back to pending with its
 * block fields cleared (an outgoing one's reservation counts again; the watcher sees it mined
 * again, or re-sends it). One that was settled (confirmed, or failed on its receipt) emits
 * `transaction.reorged` (block_number the removed block's) in this same database transaction;
 * mined again, it is settled and announced again. Returns the wallets touched.
 */
export async function rollBackAbove(trx: Executor, networkId: number, ancestor: number, nowMs: number): Promise<Set<number>> {
  const wallets = new Set((await watchRepo.listAboveBlock(trx, networkId, ancestor)).map((r) => r.wallet_id));
  await lockWallets(trx, wallets);
  // Read again under the locks (on PostgreSQL a create may have committed in between).
  const rows = await watchRepo.listAboveBlock(trx, networkId, ancestor);
  for (const r of rows) wallets.add(r.wallet_id);
  const told: TxRecord[] = [];
  for (const r of rows) {
    const before = await unmineReorged(trx, r.id, nowMs);
    if (before) told.push(before);
  }
  // Events last, user by user (ascending): every wallet lock first, then the users' event
  // orders in one order, as every transaction that writes several users' events takes them.
  const byUser = told.map((t, i) => ({ t, i })).sort((a, b) => a.t.user_id - b.t.user_id || a.i - b.i);
  for (const { t } of byUser) {
    await recordEvent(trx, {
      userId: t.user_id,
      walletId: t.wallet_id,
      name: 'transaction.reorged',
      payload: transactionEventPayload({ ...t, status: 'pending' }, 'transaction.reorged', nowMs),
      nowMs,
    });
  }
  return wallets;
}

/** Un-mines one row; returns it as it was when it had been settled (its reorg is to be told), else null. */
async function unmineReorged(trx: Executor, txId: number, nowMs: number): Promise<TxRecord | null> {
  const before = await repo.findRecord(trx, txId);
  if (!before || (before.status as string) === repo.ORPHANED) return null;
  await watchRepo.unmine(trx, txId, nowMs);
  return before.status === 'pending' ? null : before; // mined but not settled: nothing was announced
}

/**
 * A receipt a reorg put back to pending that did not come back, whose sender's nonce another
 * transaction took at confirmed depth: it can never be mined. Failed (`dropped`) with
 * `transaction.failed`; a receipt moves no reservation or nonce of the wallet.
 */
export async function dropReceipt(trx: Executor, txId: number, reason: string, nowMs: number): Promise<TxRecord | null> {
  const before = await repo.findRecord(trx, txId);
  if (!before || before.type !== 'receipt' || before.block_number !== null) return null;
  await lockWallet(trx, before.wallet_id);
  if (!(await watchRepo.markFailed(trx, txId, reason, 'dropped', nowMs))) return null;
  const after = (await repo.findRecord(trx, txId))!;
  await announce(trx, after, 'transaction.failed', nowMs);
  return after;
}
