/**
 * What a block means for the charges: the chain follower (src/workers/watcher.ts) calls
 * `readChargePayments` for every block it records, before the block's database transaction
 * (node calls only; skipped where `anyDepositWatched` found none for the block's read-ahead
 * round), and the returned `record` inside that transaction, so a block's payments,
 * its timestamp and the cursor move together: an outage or a crash misses no payment.
 *
 * - Payments: native transfers (value > 0, receipt successful) whose `to` is a watched deposit
 *   address of a native-token charge, and ERC-20 `Transfer` logs to a deposit address from the
 *   charge's token contract; for a price charge, of any token it quoted (`quotedContracts`),
 *   each payment recorded with the token it was made in. Read with the same chain readers the wallets' transfers use
 *   (src/chain/blocks.ts: `blockReceipts`, `transferLogs`). Another token of the wallet sent to
 *   a settled charge's address is not a payment, but makes the address due a sweep.
 * - Internal payments: native coin a contract sent to a watched address inside a transaction
 *   (an internal call), from the block's call traces, which the follower reads once for the
 *   block (src/workers/watcher.traces.ts) and passes in (`internalNative`); a block whose traces
 *   no endpoint could give yet is read again later (`readInternalChargePayments`).
 * - Screened: a payment whose sender is on the SCREENING_FILE list (`ctx.screening`, the list in
 *   force when the block is read) is recorded all the same, with `screened`: listed, swept with
 *   the address, never counted toward paid; `charge.screened` tells of it once (settlement).
 * - Watched: every pending charge of the network, and settled ones until `watch_until`
 *   (`expires_at` + CHARGE_WATCH_AFTER_S) compared with the block's own timestamp, so a
 *   follower catching up after an outage decides exactly as it would have live. Up to
 *   CHARGE_WATCH_LIST_MAX (500) watched addresses are read whole per block; with more, only the block's
 *   recipients are looked up (`watchedAt`), so a block costs what it holds, not what is open.
 * - The block's timestamp is stored (`charge_blocks`): settlement asks "has a block stamped
 *   after `expires_at` got the network's confirmations?" from the database, in step with the
 *   payments, never from a node that may be ahead of what was recorded.
 * - The charge worker settles on what was recorded, every CHARGES_POLL_MS, and sooner: a batch of
 *   blocks committed while charges were watched wakes it (`onChargeBlocks`, in this process), so
 *   a payment announced as a new head (src/chain/heads.ts) settles its charge moments later.
 * - A reorg (`rollBackChargePayments`, inside the follower's rollback transaction): the payments
 *   and block times above the common ancestor are deleted; a settlement decided on a block above
 *   it is undone (the charge is `pending` again, `charge.reopened` is written in the same
 *   transaction, and it is decided anew on the new chain, its outcome's event written again).
 *   The sweeps (and gas top-ups) mined above it are in flight again, never left `confirmed` on
 *   a block the chain no longer has (charges.sweeps.repository.ts `reopenMinedAbove`).
 */
import { getAddress, type Hex, type Transaction } from 'viem';
import type { Logger } from 'pino';
import type { Executor } from '../../db/index.js';
import { inProcessSignal } from '../../lib/signal.js';
import { blockReceipts, transferLogs, type FullBlock } from '../../chain/blocks.js';
import { NATIVE_CONTRACT } from '../../chain/erc20.js';
import type { InternalTransfer } from '../../chain/traces.js';
import type { SyncScope } from '../transactions/transactions.chain-sync.js';
import { INTERNAL_LOG_BASE } from '../transactions/transactions.repository.js';
import { lockEventsOf, recordEvent } from '../events/outbox.js';
import { findWalletView } from '../wallets/wallets.repository.js';
import { findChargeById } from './charges.repository.js';
import { chargeReopenedPayload } from './charges.views.js';
import * as pay from './charges.payments.repository.js';
import * as sweepRepo from './charges.sweeps.repository.js';
import type { NewPayment, WatchedDeposit } from './charges.payments.repository.js';
import { decide } from './charges.decide.js';
import { readDepositReceipts, type DepositHit, type DepositReceipts } from '../deposit-addresses/deposit-addresses.chain-sync.js';

const blocksRecorded = inProcessSignal();

/** Calls `fn` each time the follower commits blocks read while charges were watched (the charge worker settles then). */
export const onChargeBlocks = (fn: () => void): (() => void) => blocksRecorded.on(fn);

/** The follower committed `blocks`: wakes the charge worker if any was read with charges watched. */
export function chargeBlocksCommitted(blocks: ReadonlyArray<ChargeBlockPayments>): void {
  if (blocks.some((b) => b.watching)) blocksRecorded.emit();
}

/** A block's charge payments, read from the node, and the step that records them. */
export interface ChargeBlockPayments {
  /** Deposit addresses were watched at the block (open charges, or settled ones still watched). */
  watching: boolean;
  payments: NewPayment[];
  /** The block's height and time, recorded with the batch's (`recordChargeBlockTimes`). */
  block: { number: number; timestampMs: number };
  /** The wallets (and users) whose receipts to permanent deposit addresses `record` writes: the follower locks them first. */
  owners: Array<[wallet: number, user: number]>;
  /** Inside the follower's block transaction. */
  record: (trx: Executor, nowMs: number) => Promise<void>;
}

/** What a block brought to deposit addresses: payments (screened in `chargeBlock`), and charges that received another token. */
interface Found {
  payments: Omit<NewPayment, 'screened'>[];
  other: number[];
  /** Transfers to permanent deposit addresses (src/modules/deposit-addresses): receipts of their wallets. */
  deposits: DepositHit[];
}

/**
 * The watched deposits a block is matched against. Up to CHARGE_WATCH_LIST_MAX of them (default
 * MAX_TOPIC_ADDRESSES) are read whole (and the node filters the block's token logs on them); with
 * more (a merchant with thousands of open charges), each step looks up only the block's own
 * recipients by address, so a block costs what it holds, not what is open.
 */
interface Watched {
  /** Every watched deposit, when they are few; null when there are more. */
  all: WatchedDeposit[] | null;
  /** The watched deposits among some addresses, by lowercase address. */
  among(addresses: readonly string[]): Promise<Map<string, WatchedDeposit>>;
}

function byLowerAddress(rows: readonly WatchedDeposit[]): Map<string, WatchedDeposit> {
  return new Map(rows.map((w) => [w.address.toLowerCase(), w]));
}

async function watchedAt(s: SyncScope, blockMs: number): Promise<Watched | null> {
  const db = s.ctx.store.db;
  const listMax = s.ctx.config.chargeWatchListMax;
  const first = await pay.listWatchedDeposits(db, s.networkId, blockMs, listMax + 1);
  if (first.length === 0) return null;
  if (first.length <= listMax) {
    const map = byLowerAddress(first);
    return { all: first, among: async () => map };
  }
  // The block's steps (transactions, logs, traces) often name the same addresses: each is looked up once.
  const seen = new Map<string, WatchedDeposit | null>();
  return {
    all: null,
    among: async (addresses) => {
      const missing = [...new Set(addresses.map((a) => a.toLowerCase()))].filter((a) => !seen.has(a));
      if (missing.length > 0) {
        const found = byLowerAddress(await pay.findWatchedDeposits(db, s.networkId, blockMs, missing));
        for (const a of missing) seen.set(a, found.get(a) ?? null);
      }
      return new Map(
        addresses.flatMap((a) => {
          const w = seen.get(a.toLowerCase());
          return w ? [[a.toLowerCase(), w] as const] : [];
        }),
      );
    },
  };
}

/**
 * Whether any deposit address is watched in a block stamped `fromMs` or later: one statement for
 * the follower's read-ahead round, stamped from its first block. A charge watched in a later
 * block is watched in an earlier one (pending, or `watch_until` past the later stamp, so past the
 * earlier), so none at the round's first stamp is none in any of its blocks: each block's own
 * read is skipped (`readChargePayments`, `anyWatched` false).
 */
export async function anyDepositWatched(s: SyncScope, fromMs: number): Promise<boolean> {
  return (await pay.listWatchedDeposits(s.ctx.store.db, s.networkId, fromMs, 1)).length > 0;
}

/**
 * Reads the block's payments to watched deposit addresses (node calls only, no transaction open).
 * `moves`: the block's internal transfers (its call traces), null when they were not read.
 */
export async function readChargePayments(
  s: SyncScope,
  block: FullBlock,
  anyWatched = true,
  moves: readonly InternalTransfer[] | null = null,
): Promise<ChargeBlockPayments> {
  const timestampMs = Number(block.timestamp) * 1000;
  const watched = anyWatched ? await watchedAt(s, timestampMs) : null;
  const found: Found = { payments: [], other: [], deposits: [] };
  if (watched) {
    merge(found, await nativeTransfers(s, block, watched));
    merge(found, await tokenTransfers(s, block, watched));
    if (moves) merge(found, await internalNative(watched, moves));
  }
  return chargeBlock(s, block, watched !== null, found);
}

const nothing = (): Found => ({ payments: [], other: [], deposits: [] });

const quotedOf = new WeakMap<WatchedDeposit, ReadonlyMap<string, number>>();

/**
 * The contracts (lowercase, NATIVE_CONTRACT for the native coin) whose transfers pay a watched
 * charge, with the token each pays in: its own token, or each token a price charge quoted.
 */
function quotedContracts(w: WatchedDeposit): ReadonlyMap<string, number> {
  let m = quotedOf.get(w);
  if (!m) {
    const quoted = w.quote_tokens === null ? null : (JSON.parse(w.quote_tokens) as Array<{ token_id: number; contract: string }>);
    m = new Map(quoted ? quoted.map((q) => [q.contract.toLowerCase(), q.token_id]) : [[w.contract.toLowerCase(), w.token_id]]);
    quotedOf.set(w, m);
  }
  return m;
}

/** The token a transfer of `contract` pays the charge in; null: another token (swept, not counted). */
function paysIn(w: WatchedDeposit, contract: string): number | null {
  return quotedContracts(w).get(contract.toLowerCase()) ?? null;
}

/** A transfer to a permanent deposit address: a receipt of its wallet (any of its active tokens), never a charge payment. */
function depositHit(w: WatchedDeposit, contract: string, h: Omit<DepositHit, 'deposit' | 'contract'>): Found {
  return { payments: [], other: [], deposits: [{ deposit: w, contract: contract.toLowerCase(), ...h }] };
}

/**
 * The internal payments of a block recorded before its call traces could be read (the follower
 * reads them again: src/workers/watcher.traces.ts), matched against the addresses watched at
 * the block's time as they would have been then; recorded like any block's payments.
 */
export async function readInternalChargePayments(
  s: SyncScope,
  block: FullBlock,
  moves: readonly InternalTransfer[],
): Promise<ChargeBlockPayments> {
  const watched = await watchedAt(s, Number(block.timestamp) * 1000);
  return chargeBlock(s, block, watched !== null, watched ? await internalNative(watched, moves) : nothing());
}

async function chargeBlock(s: SyncScope, block: FullBlock, watching: boolean, found: Found): Promise<ChargeBlockPayments> {
  const timestampMs = Number(block.timestamp) * 1000;
  const deposits: DepositReceipts = await readDepositReceipts(s, block, found.deposits);
  const payments = screen(s, found.payments);
  const b = { networkId: s.networkId, number: Number(block.number), hash: block.hash, timestampMs, payments };
  if (payments.length + found.other.length > 0)
    s.log.info({ block: b.number, payments: payments.length, other_tokens: found.other.length }, 'charge payments seen');
  return {
    watching,
    payments,
    block: { number: b.number, timestampMs },
    owners: deposits.owners,
    record: async (trx, nowMs) => {
      await pay.recordBlockPayments(trx, b, nowMs);
      await pay.makeSettledDue(trx, [...new Set(found.other)], nowMs);
      await deposits.record(trx, nowMs);
    },
  };
}

/**
 * Each payment screened by its sender (the list in force when the block is read): a listed
 * sender's payment is recorded with `screened`, never counted toward paid (charges.decide.ts),
 * and told once by `charge.screened` when confirmed (charges.settlement.ts).
 */
function screen(s: SyncScope, seen: Found['payments']): NewPayment[] {
  return seen.map((p) => {
    const screened = s.ctx.screening.isBlocked(p.from_address);
    if (screened)
      s.log.warn(
        { charge_id: p.charge_id, tx_hash: p.tx_hash, from: p.from_address, amount: p.amount.toString() },
        'payment from an address blocked by screening: recorded, not counted',
      );
    return { ...p, screened };
  });
}

/** The times of a batch of blocks the follower records (charge expiry is decided on them), in its transaction. */
export function recordChargeBlockTimes(trx: Executor, networkId: number, blocks: ReadonlyArray<ChargeBlockPayments>): Promise<void> {
  return pay.recordBlockTimes(
    trx,
    networkId,
    blocks.map((b) => b.block),
  );
}

function merge(into: Found, f: Found): void {
  into.payments.push(...f.payments);
  into.other.push(...f.other);
  into.deposits.push(...f.deposits);
}

/**
 * Native transfers to deposit addresses: payments of native charges, another token for the
 * others; what the wallet's own main address sends (the gas of a token sweep) is neither.
 */
async function nativeTransfers(s: SyncScope, block: FullBlock, watched: Watched): Promise<Found> {
  const sent = (block.transactions as Transaction[]).filter((tx) => tx.value > 0n && tx.to);
  const byAddress = await watched.among(sent.map((tx) => tx.to!));
  const txs = sent.filter((tx) => byAddress.has(tx.to!.toLowerCase()));
  if (txs.length === 0) return nothing();
  const receipts = await s.net(
    blockReceipts(
      s.client,
      block.hash,
      txs.map((tx) => tx.hash),
    ),
  );
  const found = nothing();
  for (const tx of txs.filter((x) => receipts.get(x.hash)?.status === 'success')) {
    const w = byAddress.get(tx.to!.toLowerCase())!;
    if (tx.from.toLowerCase() === w.main_address.toLowerCase()) continue; // a gas top-up for a sweep
    if (w.deposit_address_id !== null)
      merge(found, depositHit(w, NATIVE_CONTRACT, { txHash: tx.hash, logIndex: -1, from: null, amount: tx.value }));
    else if (paysIn(w, NATIVE_CONTRACT) === null) found.other.push(w.charge_id);
    else
      found.payments.push({
        charge_id: w.charge_id,
        token_id: paysIn(w, NATIVE_CONTRACT)!,
        tx_hash: tx.hash,
        log_index: -1,
        from_address: getAddress(tx.from),
        amount: tx.value,
        internal: false,
      });
  }
  return found;
}

/**
 * Native coin that reached a deposit address through a contract (an internal call), from the
 * block's call traces (src/chain/traces.ts, read by the follower): a payment of a native charge,
 * with `internal: true`, `tx_hash` the transaction that carried it and `from` the contract that
 * sent it; another token for the others. On a network without traces such money is not seen as
 * a payment (it is still swept with the address's balance when the charge is settled;
 * docs/charges.md, "Internal transfers").
 */
async function internalNative(watched: Watched, moves: readonly InternalTransfer[]): Promise<Found> {
  if (moves.length === 0) return nothing();
  const byAddress = await watched.among(moves.map((m) => m.to));
  const found = nothing();
  for (const m of moves) {
    const w = byAddress.get(m.to.toLowerCase());
    if (!w || m.from.toLowerCase() === w.main_address.toLowerCase()) continue;
    if (w.deposit_address_id !== null)
      merge(
        found,
        depositHit(w, NATIVE_CONTRACT, { txHash: m.txHash, logIndex: INTERNAL_LOG_BASE - m.index, from: null, amount: m.value }),
      );
    else if (paysIn(w, NATIVE_CONTRACT) === null) found.other.push(w.charge_id);
    else
      found.payments.push({
        charge_id: w.charge_id,
        token_id: paysIn(w, NATIVE_CONTRACT)!,
        tx_hash: m.txHash,
        log_index: -1 - m.index,
        from_address: getAddress(m.from),
        amount: m.value,
        internal: true,
      });
  }
  return found;
}

/**
 * ERC-20 `Transfer` logs to deposit addresses from the charge's token (payments) or any other
 * active token of the wallet (swept, not counted). With many watched addresses the logs of every
 * ERC-20 contract of the network's wallets are read unfiltered (as the node would answer for
 * more than MAX_TOPIC_ADDRESSES recipients anyway) and their recipients looked up.
 */
async function tokenTransfers(s: SyncScope, block: FullBlock, watched: Watched): Promise<Found> {
  const db = s.ctx.store.db;
  // The active ERC-20 tokens of the wallets concerned: every watched wallet's when they are few,
  // else (looked up below) those of the wallets the block's transfers reached.
  let activeRows = watched.all ? await pay.listActiveContracts(db, [...new Set(watched.all.map((w) => w.wallet_id))]) : null;
  const contracts = watched.all
    ? [...watched.all.flatMap((w) => [...quotedContracts(w).keys()]), ...activeRows!.map((t) => t.contract)].filter(
        (c) => c.toLowerCase() !== NATIVE_CONTRACT,
      )
    : await pay.listNetworkTokenContracts(db, s.networkId);
  const distinct = [...new Set(contracts.map((c) => c.toLowerCase()))] as Hex[];
  if (distinct.length === 0) return nothing();
  const logs = await s.net(transferLogs(s.client, block.hash, distinct, watched.all ? watched.all.map((w) => w.address as Hex) : null));
  if (logs.length === 0) return nothing();
  const byAddress = await watched.among(logs.map((l) => l.to));
  const hit = [...byAddress.values()];
  activeRows ??= await pay.listActiveContracts(db, [...new Set(hit.map((w) => w.wallet_id))]);
  const active = new Set(
    [...hit.flatMap((w) => [...quotedContracts(w).keys()].map((contract) => ({ wallet_id: w.wallet_id, contract }))), ...activeRows].map(
      (t) => `${t.wallet_id}:${t.contract.toLowerCase()}`,
    ),
  );
  const found = nothing();
  for (const l of logs) {
    const w = byAddress.get(l.to.toLowerCase());
    const contract = l.contract.toLowerCase();
    if (!w || l.removed || l.value === 0n || !active.has(`${w.wallet_id}:${contract}`)) continue;
    if (w.deposit_address_id !== null)
      merge(found, depositHit(w, contract, { txHash: l.txHash, logIndex: l.logIndex, from: l.from, amount: l.value }));
    else if (paysIn(w, contract) === null) found.other.push(w.charge_id);
    else
      found.payments.push({
        charge_id: w.charge_id,
        token_id: paysIn(w, contract)!,
        tx_hash: l.txHash,
        log_index: l.logIndex,
        from_address: getAddress(l.from),
        amount: l.value,
        internal: false,
      });
  }
  return found;
}

/**
 * Inside the follower's reorg transaction: forgets the charge payments and block times above
 * `ancestor`, reopens the settlements decided on a block above it, and puts the sweeps and gas
 * top-ups mined above it back in flight (`reopenMinedAbove`: the sweeper follows them again,
 * and sends a sweep the new chain and the node no longer have again as signed).
 */
export async function rollBackChargePayments(
  trx: Executor,
  networkId: number,
  ancestor: number,
  nowMs: number,
  log: Logger,
): Promise<void> {
  // The event orders of the users whose charges it may tell of (`charge.reopened`), before any
  // of their rows: the order every transaction that writes charge rows and events takes them in
  // (the late-payment announcement: the user's event order, then the payment's row).
  await lockEventsOf(trx, await pay.listUsersAbove(trx, networkId, ancestor));
  const touched = await pay.deleteAbove(trx, networkId, ancestor);
  const reopened = await pay.reopenSettledAbove(trx, networkId, ancestor, nowMs);
  const sweeps = await sweepRepo.reopenMinedAbove(trx, networkId, ancestor, nowMs);
  if (sweeps.length > 0)
    log.warn(
      { ancestor, sweeps: sweeps.map((r) => r.id), charges: [...new Set(sweeps.map((r) => r.charge_id))] },
      'reorg: charge sweeps and gas top-ups mined above the common ancestor are in flight again',
    );
  if (touched.length + reopened.length === 0) return;
  for (const id of new Set([...touched, ...reopened])) {
    const terms = await pay.findTerms(trx, id);
    if (terms?.status !== 'pending') continue;
    const payments = await pay.listPayments(trx, [id], { confirmedOnly: true });
    const d = decide(terms, payments, ancestor, null);
    await pay.setPaidAmount(trx, id, { amount: d.paid, fraction: d.fraction }, nowMs);
  }
  for (const id of reopened) {
    await announceReopened(trx, id, nowMs);
    log.warn({ charge_id: id, ancestor }, 'reorg deeper than the network’s confirmations undid a charge settlement: pending again');
  }
  log.info({ ancestor, charges: touched }, 'reorg: charge payments above the common ancestor removed');
}

/** `charge.reopened`, in the rollback's transaction (docs/charges.md, "Reorgs"). */
async function announceReopened(trx: Executor, chargeId: number, nowMs: number): Promise<void> {
  const charge = (await findChargeById(trx, chargeId))!;
  const wallet = (await findWalletView(trx, charge.wallet_id))!;
  await recordEvent(trx, {
    userId: wallet.user_id,
    walletId: wallet.id,
    name: 'charge.reopened',
    payload: chargeReopenedPayload(charge, nowMs),
    nowMs,
  });
}
