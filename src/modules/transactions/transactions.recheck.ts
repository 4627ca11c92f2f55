/**
 * Transfers never seen in a block: the re-send queue (the rule is in transactions.chain-sync.ts's
 * header). Each due row is attached if one of its versions mined, failed `dropped` if its nonce
 * was used at confirmed depth by another transaction, left alone if the node knows it, else sent
 * again; a receipt a reorg removed is failed `dropped` only on the same evidence; and a transfer
 * pending too long is marked stuck.
 */
import type { Address, Hex } from 'viem';
import { blockAt, confirmedHeight, receiptOrNull } from '../../chain/blocks.js';
import { broadcastRaw, nodeKnows } from '../../chain/broadcast.js';
import { nonceUse } from '../../chain/nonce.js';
import { findBlockHash, type ChainCursor } from '../networks/networks.repository.js';
import * as versionsRepo from './transactions.versions.repository.js';
import * as watchRepo from './transactions.watch.repository.js';
import { type QueuedTransfer } from './transactions.versions.repository.js';
import { dropReceipt, failUnmined, lockWallets, stickRefused } from './transactions.state.js';
import { attachVersion, minedFields, type SyncScope } from './transactions.chain-sync.js';

/** Unmined transfers checked per tick, at most RECHECK_PER_WALLET of one wallet. */
const RECHECK_LIMIT = 100;
const RECHECK_PER_WALLET = 10;
/** The longest wait between two checks of one unmined transfer (unless WATCHER_RECHECK_MS is longer). */
const RECHECK_CAP_MS = 600_000;

export interface RecheckResult {
  /** Wallets with a transfer still unmined after this pass: one of them may wait behind a nonce gap. */
  waiting: Set<number>;
  /**
   * Transfers whose re-send (not their first send) the node refused for its fees: to be signed
   * again at the same nonce with current fees (TransactionService.reprice), each once a pass.
   */
  underpriced: Array<{ id: number; wallet_id: number }>;
  /** Every due transfer was checked (fewer than the per-pass limit were due). */
  allChecked: boolean;
}

/** The time until a queued row's next check: the recheck interval doubling per check, capped. */
export function recheckBackoffMs(recheckMs: number, checks: number): number {
  return Math.min(recheckMs * 2 ** Math.min(checks, 10), Math.max(recheckMs, Math.min(RECHECK_CAP_MS, recheckMs * 8)));
}

/**
 * The due rows of the re-send queue (`all`: every one, the start-up pass), round robin over
 * wallets (versionsRepo.listResendQueue): each is attached if one of its versions mined, failed as
 * `dropped` if its nonce was used at confirmed depth by another transaction, left alone if the
 * node knows it, else sent again. Each check pushes the row's next one back (backoff).
 */
export async function recheckUnmined(s: SyncScope, cursor: ChainCursor, all: boolean, confirmations: number): Promise<RecheckResult> {
  const now = s.ctx.clock.nowMs();
  const recheck = s.ctx.config.watcher.recheckMs;
  const rows = await versionsRepo.listResendQueue(s.ctx.store.db, s.networkId, {
    nowMs: now,
    graceBeforeMs: now - recheck,
    all,
    perWallet: RECHECK_PER_WALLET,
    limit: RECHECK_LIMIT,
  });
  const confirmedBlock = confirmedHeight(cursor.block_number, confirmations);
  const counts = new Map<string, Promise<number>>();
  const waiting = new Set<number>();
  const underpriced: RecheckResult['underpriced'] = [];
  for (const row of rows) {
    await versionsRepo.scheduleCheck(s.ctx.store.db, row.id, now + recheckBackoffMs(recheck, row.check_count), now);
    // The nonce is read at the confirmed block BEFORE the receipts: if it is used there and none
    // of our versions has a receipt, another transaction used it (the block at or below the
    // cursor that did was processed, and would have attached any version of ours).
    const used = confirmedBlock >= 0 && (await s.net(confirmedCount(s, row.from_address, confirmedBlock, counts))) > row.nonce;
    if (await attachIfMined(s, row, cursor)) continue;
    if (used) {
      await dropIfUsedByAnother(s, row, confirmedBlock);
      continue;
    }
    const sent = await resendIfUnknown(s, row);
    if (sent === 'underpriced') underpriced.push({ id: row.id, wallet_id: row.wallet_id });
    else if (sent) waiting.add(row.wallet_id);
  }
  return { waiting, underpriced, allChecked: rows.length < RECHECK_LIMIT };
}

/** The address's transaction count at the confirmed block, read once per pass. */
function confirmedCount(s: SyncScope, address: string, block: number, counts: Map<string, Promise<number>>): Promise<number> {
  const key = address.toLowerCase();
  let c = counts.get(key);
  if (!c) {
    c = s.client.getTransactionCount({ address: address as Hex, blockNumber: BigInt(block) });
    counts.set(key, c);
  }
  return c;
}

/**
 * Has one of the transfer's signed versions a receipt? Then true, and it is attached (that
 * version becoming the transfer's hash) when its block is at or below the cursor and not
 * replaced by a reorg (the next blocks or the next tick handle the other cases).
 */
async function attachIfMined(s: SyncScope, row: QueuedTransfer, cursor: ChainCursor): Promise<boolean> {
  for (const v of await versionsRepo.listVersions(s.ctx.store.db, row.id)) {
    const receipt = await s.net(receiptOrNull(s.client, v.tx_hash as Hex));
    if (!receipt) continue;
    const n = Number(receipt.blockNumber);
    if (n > cursor.block_number) return true; // the block is processed soon
    const stored = await findBlockHash(s.ctx.store.db, s.networkId, n);
    if (stored !== undefined && stored !== receipt.blockHash) return true; // a reorg the next tick handles
    const block = await s.net(blockAt(s.client, receipt.blockNumber));
    const mined = minedFields({ number: n, hash: receipt.blockHash, timestampMs: Number(block.timestamp) * 1000 }, receipt);
    await s.fenced(async (trx) => {
      // Under the wallet's lock, as a replacement is recorded: one recorded since `row` was read
      // is seen (and the mined version adopted); one being recorded waits for this attach.
      await lockWallets(trx, [row.wallet_id]);
      await attachVersion(trx, row.id, v.tx_hash, mined, s.ctx.clock.nowMs(), row.tx_hash);
    });
    s.affected.add(row.wallet_id);
    return true;
  }
  return false;
}

/**
 * Its nonce was used at confirmed depth and no version of it had a receipt: the block that used
 * the nonce decides (`nonceUse`). Another transaction of the address there: failed as `dropped`
 * (the nonce is gone, not healed). One of its own versions (mined between the two reads): left
 * to be attached. None (the reads disagreed: a node answering a count from the block it is
 * mining) or not used after all: nothing is decided this round.
 */
async function dropIfUsedByAnother(s: SyncScope, row: QueuedTransfer, confirmedBlock: number): Promise<void> {
  const use = await s.net(nonceUse(s.client, row.from_address as Address, row.nonce, confirmedBlock));
  if (use === 'unused' || use === 'unproven') {
    s.log.warn(
      { transaction_id: row.id, tx_hash: row.tx_hash, nonce: row.nonce, block: confirmedBlock },
      'transaction: the chain says its nonce is used but shows no transaction using it; deciding nothing this round',
    );
    return;
  }
  const ours = (await versionsRepo.listVersions(s.ctx.store.db, row.id)).some((v) => v.tx_hash.toLowerCase() === use.hash.toLowerCase());
  if (ours) return;
  const reason = `dropped: nonce ${row.nonce} was used by another transaction (${use.hash}) in block ${use.block}`;
  const failed = await s.fenced((trx) =>
    failUnmined(trx, row.id, { reason, failure: 'dropped', nonceUsed: true, nowMs: s.ctx.clock.nowMs() }),
  );
  if (failed) {
    s.affected.add(row.wallet_id);
    s.log.warn(
      { transaction_id: row.id, tx_hash: row.tx_hash, nonce: row.nonce, block: confirmedBlock },
      'transaction dropped: its nonce was used by another transaction; failed',
    );
  }
}

/** A node's refusal of a transaction for its fees: the same transfer signed with current fees would be taken. */
const FEE_REFUSAL = /underpriced|less than block base fee|fee too low|gas ?price too low/i;

/**
 * A transfer without a receipt: left alone if the node knows it, else sent again. A refusal
 * ends it only when this was its first send ever (nothing was sent anywhere before: `rejected`,
 * the reservation and the nonce released) and does not say that a pool holds another transaction
 * at its nonce ("replacement transaction underpriced": that one may be evicted, or mine and drop
 * this one; either way the nonce is not free). After a first send, a refusal may come from a node
 * that never saw it while another still holds it (a load-balanced RPC): it stays pending, and
 * ends when its nonce is used at confirmed depth. A refusal for its fees (the first send timed
 * out, or the process died before it, and the fees rose meanwhile) would otherwise last forever
 * and hold every later transfer of the wallet behind its nonce: `underpriced`, the caller signs
 * it again with current fees. True when it is (again) waiting in the node.
 */
async function resendIfUnknown(s: SyncScope, row: QueuedTransfer): Promise<boolean | 'underpriced'> {
  const { db } = s.ctx.store;
  const hash = row.tx_hash as Hex;
  const known = await s.net(nodeKnows(s.client, hash));
  if (known === null) return false;
  if (known) {
    await watchRepo.markBroadcast(db, row.id, s.ctx.clock.nowMs());
    return true;
  }
  // Only the row's current version: a speed-up or cancel recorded since the queue was read is
  // sent by its own broadcast (re-sending the older version could undo a cancel).
  const first = await versionsRepo.claimAttempt(db, row.id, hash, s.ctx.clock.nowMs());
  if (first === 'stale') return false;
  const outcome = await s.net(broadcastRaw(s.client, row.raw_tx as Hex, hash));
  if (outcome.kind === 'sent' || outcome.kind === 'known') {
    await watchRepo.markBroadcast(db, row.id, s.ctx.clock.nowMs());
    s.log.info({ transaction_id: row.id, tx_hash: hash, nonce: row.nonce }, 'transaction re-broadcast (the node did not know it)');
    return true;
  }
  if (outcome.kind === 'rejected' && first && !outcome.nonceHeld) {
    const failed = await s.fenced((trx) =>
      failUnmined(trx, row.id, { reason: outcome.reason, failure: 'rejected', nonceUsed: outcome.nonceUsed, nowMs: s.ctx.clock.nowMs() }),
    );
    if (failed) {
      s.affected.add(row.wallet_id);
      s.log.warn(
        { transaction_id: row.id, tx_hash: hash, nonce: row.nonce, reason: outcome.reason },
        'transaction rejected: the node refused its first send; failed',
      );
    }
    return false;
  }
  if (outcome.kind === 'rejected' && FEE_REFUSAL.test(outcome.reason)) {
    s.log.warn(
      { transaction_id: row.id, tx_hash: hash, nonce: row.nonce, reason: outcome.reason },
      're-broadcast refused for its fees; signing it again at its nonce with current fees',
    );
    return 'underpriced';
  }
  if (outcome.kind === 'rejected' && !outcome.nonceUsed) {
    // Refused by every endpoint for a reason a fee cannot mend: told at once, not after TX_STUCK_AFTER_S.
    const stuck = await s.fenced((trx) => stickRefused(trx, row.id, outcome.reason, s.ctx.clock.nowMs()));
    if (stuck)
      s.log.warn(
        { transaction_id: row.id, tx_hash: hash, nonce: row.nonce, reason: outcome.reason },
        'transaction stuck: every endpoint refused its re-send (not for its fee); it keeps its nonce until a speed-up, a cancel or the chain settles it',
      );
    return false;
  }
  if (outcome.kind === 'rejected') {
    s.log.warn(
      { transaction_id: row.id, tx_hash: hash, nonce: row.nonce, reason: outcome.reason },
      're-broadcast refused (its nonce is used); the transaction stays pending until the chain settles it',
    );
    return false;
  }
  s.log.debug({ transaction_id: row.id, outcome: outcome.kind, reason: outcome.reason }, 're-broadcast not confirmed; retrying later');
  return false;
}

/**
 * Receipts a reorg put back to pending (`rollBackAbove`) that no block has shown again: one
 * whose sender's nonce is used at the confirmed block while the transaction has no receipt can
 * never be mined, and fails as `dropped`. The nonce is read before the receipt, as in
 * `recheckUnmined`. Until then it stays pending (a block mining it again confirms it). Each
 * check pushes the row's next one back (backoff). The sender is the row's `from_address`: for
 * a token receipt, the token transfer's sender, the transaction's sender when it called the
 * token itself; so the node must not know the transaction either (a token transfer made through
 * a contract, its sender another address, may still wait in the pool). Should a dropped receipt
 * be mined after all, its block brings it back (`insertTransaction`: the chain is the truth).
 */
export async function recheckReorgedReceipts(s: SyncScope, cursor: ChainCursor, confirmations: number): Promise<void> {
  const now = s.ctx.clock.nowMs();
  const confirmedBlock = confirmedHeight(cursor.block_number, confirmations);
  if (confirmedBlock < 0) return;
  const recheck = s.ctx.config.watcher.recheckMs;
  const rows = await versionsRepo.listReorgedReceipts(s.ctx.store.db, s.networkId, now, RECHECK_LIMIT);
  const counts = new Map<string, Promise<number>>();
  for (const row of rows) {
    await versionsRepo.scheduleCheck(s.ctx.store.db, row.id, now + recheckBackoffMs(recheck, row.check_count), now);
    if ((await s.net(confirmedCount(s, row.from_address, confirmedBlock, counts))) <= row.nonce) continue;
    if (await s.net(receiptOrNull(s.client, row.tx_hash as Hex))) continue; // mined: recorded with its block
    if ((await s.net(nodeKnows(s.client, row.tx_hash as Hex))) !== false) continue; // in the pool, or the node cannot say
    const reason = `dropped: the reorg removed it and nonce ${row.nonce} of ${row.from_address} was used by another transaction by block ${confirmedBlock}`;
    const failed = await s.fenced((trx) => dropReceipt(trx, row.id, reason, s.ctx.clock.nowMs()));
    if (failed) {
      s.affected.add(row.wallet_id);
      s.log.warn(
        { transaction_id: row.id, tx_hash: row.tx_hash, nonce: row.nonce, block: confirmedBlock },
        'receipt dropped: a reorg removed it and its nonce was used by another transaction; failed',
      );
    }
  }
}

/** Marks the network's transfers pending longer than TX_STUCK_AFTER_S as stuck, with one warning each. */
export async function markStuckTransfers(s: SyncScope): Promise<void> {
  const now = s.ctx.clock.nowMs();
  const rows = await versionsRepo.markStuck(s.ctx.store.db, s.networkId, now - s.ctx.config.txStuckAfterS * 1000, now);
  for (const r of rows) {
    s.log.warn(
      { transaction_id: r.id, wallet_id: r.wallet_id, tx_hash: r.tx_hash, nonce: r.nonce, after_s: s.ctx.config.txStuckAfterS },
      'transaction stuck: pending longer than TX_STUCK_AFTER_S (speed it up or cancel it)',
    );
  }
}
