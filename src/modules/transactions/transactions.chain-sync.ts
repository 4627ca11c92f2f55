/**
 * What the chain means for the wallets' transactions. The chain follower (src/workers/watcher.ts)
 * holds the network's lease and block cursor and fetches the blocks; every decision about a
 * transfer is made here:
 *
 * - A block: native transfers to a wallet address and ERC-20 `Transfer` logs to one (for the
 *   tokens it has active) become receipt rows, and so does native coin a contract sent to one
 *   inside a transaction (from the block's call traces, `internal`); the wallets' own pending transfers in the block
 *   get their block fields and receipt (`readBlockTransfers` reads everything from the node,
 *   then `attachMinedTransfers` and `recordBlockReceipts` write a batch of blocks inside one database transaction).
 * - Settling: pending rows mined at least `confirmations` blocks deep (the receipt's own block
 *   counts as one) become confirmed, or failed if they reverted, each with its event
 *   (`settleConfirmed`).
 * - Pending transfers never seen in a block are checked with the node (`recheckUnmined`, transactions.recheck.ts), round
 *   robin over wallets, each with its own backoff. One of its versions mined: attached (that
 *   version's hash wins). Its nonce used at confirmed depth by another transaction: failed
 *   `dropped`. Known to the node: left alone. Unknown: the latest signed version is sent again.
 *   A refusal ends it only if nothing was ever sent before (`rejected`); otherwise another node
 *   may hold it, and only its nonce being used at confirmed depth ends it. A refusal of a
 *   re-send for its fees: the same transfer is signed again at its nonce with current fees (a
 *   speed-up, recorded as one; whichever version mines is the one payment). Reservation and
 *   nonce are released only when it is final.
 * - Pending longer than TX_STUCK_AFTER_S: marked stuck, one warning (`markStuckTransfers`).
 * - A reorg: `rollBackAbove` (transactions.state.ts) inside the follower's rollback transaction:
 *   what it un-confirms is pending again, told by `transaction.reorged`. A receipt that does not
 *   come back and whose sender's nonce another transaction used is failed `dropped`
 *   (`recheckReorgedReceipts`).
 */
import type { Hex, PublicClient, Transaction, TransactionReceipt } from 'viem';
import type { Logger } from 'pino';
import type { AppContext } from '../../context.js';
import type { Executor } from '../../db/index.js';
import { blockReceipts, ChainMoved, confirmedHeight, transferLogs, type FullBlock } from '../../chain/blocks.js';
import { NATIVE_CONTRACT } from '../../chain/erc20.js';
import { receiptFee } from '../../chain/receipt-fee.js';
import type { InternalTransfer } from '../../chain/traces.js';
import * as repo from './transactions.repository.js';
import { INTERNAL_LOG_BASE } from './transactions.repository.js';
import type { TxRecord } from './transactions.repository.js';
import * as versionsRepo from './transactions.versions.repository.js';
import * as watchRepo from './transactions.watch.repository.js';
import { type WatchedToken, type WatchedWallet } from './transactions.watch.repository.js';
import { announceRefunded } from '../refunds/refunds.events.js';
import { inProcessSignal } from '../../lib/signal.js';
import { lockWallets, lockWalletsAndEvents, recordReceipt, settleMinedAll } from './transactions.state.js';

/** Rows settled per tick. */
const SETTLE_LIMIT = 500;

/** What the follower gives each step: the network, its node, and its way of running work. */
export interface SyncScope {
  ctx: AppContext;
  networkId: number;
  client: PublicClient;
  log: Logger;
  /** Awaits a node call unless the worker stops first. */
  net: <T>(p: Promise<T>) => Promise<T>;
  /** A database transaction that commits only while the follower holds the network's lease. */
  fenced: <T>(fn: (trx: Executor) => Promise<T>) => Promise<T>;
  /** Wallets whose balances may have changed (the follower refreshes them after the tick). */
  affected: Set<number>;
}

// ---------------------------------------------------------------------------------------------
// The wallets and tokens a block is matched against.
// ---------------------------------------------------------------------------------------------

export interface Watched {
  wallets: WatchedWallet[];
  byAddress: Map<string, WatchedWallet>;
  nativeToken: Map<number, WatchedToken>;
  tokenByContract: Map<string, WatchedToken>;
  contracts: Hex[];
}

/** The wallets of the network and their active tokens, indexed for matching. */
export async function loadWatched(db: Executor, networkId: number): Promise<Watched> {
  const { wallets, tokens } = await watchRepo.listWatched(db, networkId);
  const byAddress = new Map(wallets.map((w) => [w.address.toLowerCase(), w]));
  const nativeToken = new Map<number, WatchedToken>();
  const tokenByContract = new Map<string, WatchedToken>();
  const contracts = new Set<string>();
  for (const t of tokens) {
    if (t.is_native === 1 || t.contract.toLowerCase() === NATIVE_CONTRACT) {
      nativeToken.set(t.wallet_id, t);
    } else {
      tokenByContract.set(`${t.wallet_id}:${t.contract.toLowerCase()}`, t);
      contracts.add(t.contract.toLowerCase());
    }
  }
  return { wallets, byAddress, nativeToken, tokenByContract, contracts: [...contracts] as Hex[] };
}

const walletOf = (watched: Watched, a: string | null | undefined) => (a ? watched.byAddress.get(a.toLowerCase()) : undefined);

// ---------------------------------------------------------------------------------------------
// A block.
// ---------------------------------------------------------------------------------------------

interface NativeTransfer {
  tx: Transaction;
  wallet: WatchedWallet;
  token: WatchedToken;
}

/** Native coin a contract sent to a wallet's address inside a transaction (a frame of its call traces). */
interface InternalIncoming {
  move: InternalTransfer;
  wallet: WatchedWallet;
  token: WatchedToken;
}

interface TokenTransfer {
  wallet: WatchedWallet;
  token: WatchedToken;
  from: string;
  value: bigint;
  logIndex: number;
  txHash: Hex;
}

/** What a block holds for the watched wallets, all of it read from the node. */
export interface BlockTransfers {
  number: number;
  hash: Hex;
  timestampMs: number;
  /** Native transfers (value > 0) to a wallet that has its native token active. */
  incoming: NativeTransfer[];
  /** ERC-20 transfers to a wallet, of a token it has active. */
  tokenLogs: TokenTransfer[];
  /** Native coin sent to a wallet by a contract (empty when the block's traces were not read). */
  internal: InternalIncoming[];
  /** The wallets' own transfers not yet seen in a block that this block mined, with the hash (current or replaced) it mined. */
  ours: Array<{ rec: TxRecord; hash: string }>;
  receipts: Map<string, TransactionReceipt>;
  txByHash: Map<string, Transaction>;
}

/**
 * Reads what `block` means for the watched wallets: its transfers to and from them, their token
 * transfers and the receipts of all of these. Node calls only, no database transaction open.
 * `moves`: the block's internal transfers (its call traces), null when they were not read.
 */
export async function readBlockTransfers(
  s: SyncScope,
  block: FullBlock,
  watched: Watched,
  lookup?: OursLookup,
  moves: readonly InternalTransfer[] | null = null,
): Promise<BlockTransfers> {
  const txs = block.transactions as Transaction[];
  const incoming = nativeTransfersTo(txs, watched);
  const internal = internalTransfersTo(moves, watched);
  for (const i of internal) s.affected.add(i.wallet.id);
  for (const tx of txs) {
    const to = walletOf(watched, tx.to);
    const from = walletOf(watched, tx.from);
    if (to) s.affected.add(to.id);
    if (from) s.affected.add(from.id);
  }
  const sent = hashesFromWatched(block, watched);
  const found = lookup ?? (await findOurs(s, sent));
  const ours = sent.flatMap((hash) => {
    const rec = found.get(hash);
    return rec ? [{ rec, hash }] : [];
  });
  const tokenLogs = await readTokenTransfers(s, block.hash, watched);
  for (const l of tokenLogs) s.affected.add(l.wallet.id);
  const hashes = [
    ...new Set([
      ...incoming.map((t) => t.tx.hash),
      ...ours.map((o) => o.hash as Hex),
      ...tokenLogs.map((l) => l.txHash),
      ...internal.map((i) => i.move.txHash),
    ]),
  ];
  return {
    number: Number(block.number),
    hash: block.hash,
    timestampMs: Number(block.timestamp) * 1000,
    incoming,
    tokenLogs,
    internal,
    ours,
    receipts: await s.net(blockReceipts(s.client, block.hash, hashes)),
    txByHash: new Map(txs.map((t) => [t.hash, t])),
  };
}

/**
 * The internal receipts of a block recorded before its call traces could be read (the follower
 * reads them again: src/workers/watcher.traces.ts): only those, recorded as any block's are.
 */
export async function readInternalReceipts(
  s: SyncScope,
  block: FullBlock,
  watched: Watched,
  moves: readonly InternalTransfer[],
): Promise<BlockTransfers> {
  const internal = internalTransfersTo(moves, watched);
  for (const i of internal) s.affected.add(i.wallet.id);
  const hashes = [...new Set(internal.map((i) => i.move.txHash))];
  return {
    number: Number(block.number),
    hash: block.hash,
    timestampMs: Number(block.timestamp) * 1000,
    incoming: [],
    tokenLogs: [],
    internal,
    ours: [],
    receipts: hashes.length > 0 ? await s.net(blockReceipts(s.client, block.hash, hashes)) : new Map<string, TransactionReceipt>(),
    txByHash: new Map((block.transactions as Transaction[]).map((t) => [t.hash, t])),
  };
}

/** Internal transfers to a wallet that has its native token active (the carrying transaction succeeded: traces.ts). */
function internalTransfersTo(moves: readonly InternalTransfer[] | null, watched: Watched): InternalIncoming[] {
  return (moves ?? []).flatMap((move) => {
    const wallet = walletOf(watched, move.to);
    const token = wallet ? watched.nativeToken.get(wallet.id) : undefined;
    return wallet && token ? [{ move, wallet, token }] : [];
  });
}

function nativeTransfersTo(txs: Transaction[], watched: Watched): NativeTransfer[] {
  return txs.flatMap((tx) => {
    const wallet = walletOf(watched, tx.to);
    const token = wallet ? watched.nativeToken.get(wallet.id) : undefined;
    return tx.value > 0n && wallet && token ? [{ tx, wallet, token }] : [];
  });
}

/** Our unmined transfers by the hash of theirs a block holds: what `readBlockTransfers` looks up. */
export type OursLookup = ReadonlyMap<string, TxRecord>;

/**
 * `readBlockTransfers`'s lookup for several blocks at once (the follower's read-ahead round):
 * one statement for all their transactions from watched wallets where each block took one.
 */
export function lookupOurs(s: SyncScope, blocks: readonly FullBlock[], watched: Watched): Promise<OursLookup> {
  return findOurs(
    s,
    blocks.flatMap((b) => hashesFromWatched(b, watched)),
  );
}

function hashesFromWatched(block: FullBlock, watched: Watched): Hex[] {
  return (block.transactions as Transaction[]).filter((tx) => walletOf(watched, tx.from)).map((tx) => tx.hash);
}

/** Hashes looked up in one statement (each is bound three times). */
const OURS_CHUNK = 500;

/**
 * The wallets' unmined transfers with these hashes (current or replaced versions), one row per
 * hash. Two rows share a hash only when a transfer failed unmined and the same request was
 * made again for its nonce: the live (pending) one is the one mined here.
 */
async function findOurs(s: SyncScope, hashes: Hex[]): Promise<Map<string, TxRecord>> {
  const byHash = new Map<string, TxRecord>();
  for (let i = 0; i < hashes.length; i += OURS_CHUNK) {
    for (const { rec, hash } of await versionsRepo.findUnminedByAnyHash(s.ctx.store.db, s.networkId, hashes.slice(i, i + OURS_CHUNK))) {
      const prev = byHash.get(hash);
      const better = !prev || (prev.status !== 'pending' && (rec.status === 'pending' || rec.id > prev.id));
      if (better) byHash.set(hash, rec);
    }
  }
  return byHash;
}

/** ERC-20 transfers in the block to a watched wallet, of a token that wallet has active. */
async function readTokenTransfers(s: SyncScope, blockHash: Hex, watched: Watched): Promise<TokenTransfer[]> {
  if (watched.contracts.length === 0 || watched.byAddress.size === 0) return [];
  const recipients = [...watched.byAddress.values()].map((w) => w.address as Hex);
  const logs = await s.net(transferLogs(s.client, blockHash, watched.contracts, recipients));
  return logs.flatMap((l) => {
    const wallet = walletOf(watched, l.to);
    const token = wallet ? watched.tokenByContract.get(`${wallet.id}:${l.contract.toLowerCase()}`) : undefined;
    if (!wallet || !token || l.removed || l.value === 0n) return [];
    return [{ wallet, token, from: l.from, value: l.value, logIndex: l.logIndex, txHash: l.txHash }];
  });
}

/**
 * The wallets whose rows and events a block's recording writes (receipts and the wallets' own
 * transfers), each with its user: the follower locks those of its whole batch first
 * (`lockWalletsAndEvents`).
 */
export function walletsOfBlock(b: BlockTransfers): Array<[wallet: number, user: number]> {
  const receiving = [...b.incoming.map((t) => t.wallet), ...b.tokenLogs.map((l) => l.wallet), ...b.internal.map((i) => i.wallet)];
  return [
    ...receiving.map((w): [number, number] => [w.id, w.user_id]),
    ...b.ours.map(({ rec }): [number, number] => [rec.wallet_id, rec.user_id]),
  ];
}

/**
 * Inside the blocks' database transaction (caller's, holding the wallets' locks), before their
 * receipts: attaches each block to the wallets' own transfers it mined. The attaches emit no
 * event and each changes only its own row (a pending, unmined transfer of ours; a receipt is
 * another row), so the usual one, the mined version being the row's current one, is a statement
 * whose answer no other waits for: the batch's are issued together, on PostgreSQL one round trip
 * where they took one each with the wallets locked (src/db/pipelined.ts).
 */
export async function attachMinedTransfers(trx: Executor, blocks: BlockTransfers[], nowMs: number, log: Logger): Promise<void> {
  const mined = blocks.flatMap((b) => b.ours.map(({ rec, hash }) => ({ b, rec, hash, fields: minedFields(b, b.receipts.get(hash)!) })));
  // The mined version is the current one of a pending row (as read before the locks).
  const attached = await Promise.all(
    mined.map(
      async ({ rec, hash, fields }) =>
        rec.status === 'pending' && hash === rec.tx_hash && watchRepo.attachMined(trx, rec.id, hash, fields, nowMs),
    ),
  );
  for (const [i, { b, rec, hash, fields }] of mined.entries()) {
    if (attached[i]) continue;
    // Another version current now (a replacement recorded since the read), or none pending.
    if (await attachVersion(trx, rec.id, hash, fields, nowMs, null)) continue;
    // The chain is the truth: a transfer we took for rejected was mined after all.
    if (!(await watchRepo.revive(trx, rec.id, nowMs))) continue;
    log.warn({ transaction_id: rec.id, tx_hash: hash, block: b.number }, 'a transfer marked failed was mined after all; back to pending');
    await attachVersion(trx, rec.id, hash, fields, nowMs, null);
  }
}

/** Inside the block's database transaction (caller's): records its receipts, under their wallets' locks. */
export async function recordBlockReceipts(trx: Executor, b: BlockTransfers, opts: { settledNow: boolean; nowMs: number }): Promise<void> {
  const rows = receiptRows(b, opts.settledNow, opts.nowMs);
  await lockWallets(
    trx,
    rows.map((r) => r.wallet_id),
  );
  for (const row of rows) await recordReceipt(trx, row, opts.nowMs);
}

function receiptRows(b: BlockTransfers, settledNow: boolean, nowMs: number): repo.NewTx[] {
  const rows: repo.NewTx[] = [];
  for (const { tx, wallet, token } of b.incoming) {
    const r = b.receipts.get(tx.hash)!;
    if (r.status !== 'success') continue;
    rows.push({
      ...receiptBase(b, tx, r, settledNow, nowMs),
      wallet_id: wallet.id,
      token_id: token.id,
      symbol: token.symbol,
      amount: tx.value,
      from_address: tx.from,
      to_address: wallet.address,
      log_index: -1,
    });
  }
  for (const { move, wallet, token } of b.internal) {
    const tx = b.txByHash.get(move.txHash);
    const r = b.receipts.get(move.txHash);
    if (!tx || !r) throw new ChainMoved();
    if (r.status !== 'success') continue;
    rows.push({
      ...receiptBase(b, tx, r, settledNow, nowMs),
      wallet_id: wallet.id,
      token_id: token.id,
      symbol: token.symbol,
      amount: move.value,
      // The carrier's sender, as for a token transfer its sender made through a contract: a
      // reorg's recheck (`recheckReorgedReceipts`) asks whether that sender's nonce was used.
      from_address: tx.from,
      to_address: wallet.address,
      log_index: INTERNAL_LOG_BASE - move.index,
    });
  }
  for (const l of b.tokenLogs) {
    const tx = b.txByHash.get(l.txHash);
    if (!tx) throw new ChainMoved();
    rows.push({
      ...receiptBase(b, tx, b.receipts.get(l.txHash)!, settledNow, nowMs),
      wallet_id: l.wallet.id,
      token_id: l.token.id,
      symbol: l.token.symbol,
      amount: l.value,
      from_address: l.from,
      to_address: l.wallet.address,
      log_index: l.logIndex,
    });
  }
  return rows;
}

/** The fields every receipt row of the block shares: its status, block and gas. */
function receiptBase(b: BlockTransfers, tx: Transaction, r: TransactionReceipt, settledNow: boolean, nowMs: number) {
  return {
    type: 'receipt' as const,
    status: settledNow ? ('confirmed' as const) : ('pending' as const),
    fee_reserved: 0n,
    tx_hash: tx.hash,
    block_number: b.number,
    block_hash: b.hash,
    block_timestamp: b.timestampMs,
    nonce: tx.nonce,
    gas: tx.gas,
    gas_price: r.effectiveGasPrice ?? tx.gasPrice ?? null,
    gas_used: r.gasUsed,
    cumulative_gas_used: r.cumulativeGasUsed,
    receipt_status: 1,
    raw_tx: null,
    confirmed_at: settledNow ? nowMs : null,
  };
}

/**
 * Whichever version mines wins: the transfer takes its hash. `current` is the row's current hash
 * as read before this transaction; a replacement recorded since (a speed-up or cancel committed
 * between that read and the wallet's lock) may have made another version current, so the
 * attach holds only while the mined hash is current, and otherwise that version is adopted
 * first. False when the row is not a pending, unmined transfer with that version.
 */
export async function attachVersion(
  trx: Executor,
  id: number,
  hash: string,
  fields: watchRepo.MinedFields,
  nowMs: number,
  current: string | null,
): Promise<boolean> {
  if (hash === current && (await watchRepo.attachMined(trx, id, hash, fields, nowMs))) return true;
  if (!(await versionsRepo.adoptVersion(trx, id, hash, nowMs))) return false;
  return watchRepo.attachMined(trx, id, hash, fields, nowMs);
}

export function minedFields(block: { number: number; hash: string; timestampMs: number }, r: TransactionReceipt): watchRepo.MinedFields {
  return {
    block_number: block.number,
    block_hash: block.hash,
    block_timestamp: block.timestampMs,
    gas_used: r.gasUsed,
    cumulative_gas_used: r.cumulativeGasUsed,
    receipt_status: r.status === 'success' ? 1 : 0,
    gas_price: r.effectiveGasPrice,
    fee_paid: receiptFee(r),
  };
}

// ---------------------------------------------------------------------------------------------
// Settling.
// ---------------------------------------------------------------------------------------------

/** Pending rows with enough confirmations (relative to the cursor's block) become confirmed or failed. */
export async function settleConfirmed(s: SyncScope, cursorBlock: number, confirmations: number): Promise<void> {
  const maxBlock = confirmedHeight(cursorBlock, confirmations);
  const ready = await watchRepo.listSettleable(s.ctx.store.db, s.networkId, maxBlock, SETTLE_LIMIT);
  if (ready.length === 0) return;
  const settled = await s.fenced(async (trx) => {
    const now = s.ctx.clock.nowMs();
    // Every wallet, then every user's event order, before the first change (one lock order).
    await lockWalletsAndEvents(trx, ownersOf(ready));
    return settleMinedAll(trx, ready, now, refundedBy(trx, s.ctx, now));
  });
  for (const t of settled) s.affected.add(t.wallet_id);
  logSettled(s.log, settled);
}

/**
 * Inside a batch's transaction (caller's), after its blocks are recorded and the cursor moved to
 * `cursorBlock`, where the network needs one confirmation (a block is final once recorded): the
 * pending mined rows of the wallets the batch locked (`locked`, with their users' event orders)
 * are settled there, each with its event, rather than by `settleConfirmed` in a transaction of
 * its own that waits for those wallets' locks again (a hot wallet's creates hold it in turn).
 * Rows of other wallets are left to `settleConfirmed`: their locks would come after the event
 * orders taken (not the one lock order). Returns the rows settled, for `logSettled` after the commit.
 */
export async function settleLocked(
  trx: Executor,
  ctx: AppContext,
  networkId: number,
  cursorBlock: number,
  locked: ReadonlySet<number>,
  nowMs: number,
): Promise<TxRecord[]> {
  const ready = (await watchRepo.listSettleable(trx, networkId, confirmedHeight(cursorBlock, 1), SETTLE_LIMIT)).filter((r) =>
    locked.has(r.wallet_id),
  );
  return ready.length === 0 ? [] : settleMinedAll(trx, ready, nowMs, refundedBy(trx, ctx, nowMs));
}

/** A confirmed transfer that pays a refund: the refund's event, in the same transaction. */
function refundedBy(trx: Executor, ctx: AppContext, nowMs: number): (after: TxRecord) => Promise<void> {
  return (after) => announceRefunded(trx, after.refund_id!, after.user_id, nowMs, ctx.config.publicUrl);
}

/** The wallets of these rows and their users (for `lockWalletsAndEvents`). */
export function ownersOf(rows: ReadonlyArray<Pick<TxRecord, 'wallet_id' | 'user_id'>>): Map<number, number> {
  return new Map(rows.map((r) => [r.wallet_id, r.user_id]));
}

/** One line a settled row, once its transaction has committed. */
export function logSettled(log: Logger, settled: TxRecord[]): void {
  for (const t of settled)
    log.info(
      { transaction_id: t.id, tx_hash: t.tx_hash, block: t.block_number, status: t.status, type: t.type },
      `transaction ${t.status}`,
    );
  if (settled.some((t) => t.type === 'contract' && t.payout_id !== null)) batchesSettled.emit();
}

const batchesSettled = inProcessSignal();

/** Calls `fn` when the follower of this process settled a payout batch (its items follow it: payouts.batches.ts). */
export const onPayoutBatchSettled = (fn: () => void): (() => void) => batchesSettled.on(fn);
