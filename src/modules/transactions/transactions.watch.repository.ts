/**
 * What the watcher changes and reads: a row's state changes (each conditional on the state it
 * leaves, so two actors racing on one row change it once), and the per-network queries.
 */
import { sql, type QueryCreator } from 'kysely';
import { dialectOf } from '../../db/dialect.js';
import type { Executor } from '../../db/index.js';
import { prepare, prepareRow } from '../../db/prepared.js';
import type { Database } from '../../db/types.js';
import { onNetwork, type FailureReason, RECORD_COLUMNS, type TxRecord, findRecord, records, toRecord } from './transactions.repository.js';

export async function markBroadcast(db: Executor, id: number, nowMs: number): Promise<void> {
  await db
    .updateTable('transactions')
    .set({ broadcast_at: nowMs, updated_at: nowMs })
    .where('id', '=', id)
    .where('status', '=', 'pending')
    .execute();
}

/** `markBroadcast` of several rows in one statement (one commit). */
export async function markBroadcastMany(db: Executor, ids: number[], nowMs: number): Promise<void> {
  if (ids.length === 0) return;
  await db
    .updateTable('transactions')
    .set({ broadcast_at: nowMs, updated_at: nowMs })
    .where('id', 'in', ids)
    .where('status', '=', 'pending')
    .execute();
}

export async function markFailed(db: Executor, id: number, error: string, reason: FailureReason, nowMs: number): Promise<boolean> {
  const r = await db
    .updateTable('transactions')
    .set({ status: 'failed', error: error.slice(0, 1000), failure_reason: reason, failed_at: nowMs, updated_at: nowMs })
    .where('id', '=', id)
    .where('status', '=', 'pending')
    .executeTakeFirst();
  return Number(r.numUpdatedRows) === 1;
}

/** A transfer marked failed without being mined turned up in a block: pending again (then attached). */
export async function revive(db: Executor, id: number, nowMs: number): Promise<boolean> {
  const r = await db
    .updateTable('transactions')
    .set({ status: 'pending', failed_at: null, error: null, failure_reason: null, updated_at: nowMs })
    .where('id', '=', id)
    .where('status', '=', 'failed')
    .where('block_number', 'is', null)
    .executeTakeFirst();
  return Number(r.numUpdatedRows) === 1;
}

export interface MinedFields {
  block_number: number;
  block_hash: string;
  block_timestamp: number;
  gas_used: bigint;
  cumulative_gas_used: bigint;
  receipt_status: number;
  /** The price per gas actually paid (the receipt's effective gas price): once mined, `gas_price` is that. */
  gas_price?: bigint;
  /** Gas used × effective gas price + the receipt's L1 data fee (src/chain/receipt-fee.ts). */
  fee_paid?: bigint;
}

/**
 * A pending transfer seen in a processed block: block fields and receipt, still pending. Only
 * while `hash`, the version mined, is its current one (false otherwise: see `adoptVersion`).
 */
export async function attachMined(db: Executor, id: number, hash: string, m: MinedFields, nowMs: number): Promise<boolean> {
  const rows = await attachMinedRow.execute(db, {
    id,
    hash,
    block_number: m.block_number,
    block_hash: m.block_hash,
    block_timestamp: m.block_timestamp,
    gas_used: m.gas_used.toString(),
    cumulative_gas_used: m.cumulative_gas_used.toString(),
    receipt_status: m.receipt_status,
    gas_price: m.gas_price?.toString(),
    fee_paid: m.fee_paid?.toString(),
    updated_at: nowMs,
  });
  return rows.length === 1;
}

/** The watcher runs it for each transfer it sees mined: compiled once (per set of fields). */
const attachMinedRow = prepareRow(
  (
    db: Executor,
    {
      id,
      hash,
      ...set
    }: {
      id: number;
      hash: string;
      block_number: number;
      block_hash: string;
      block_timestamp: number;
      gas_used: string;
      cumulative_gas_used: string;
      receipt_status: number;
      gas_price?: string;
      fee_paid?: string;
      updated_at: number;
    },
  ) =>
    db
      .updateTable('transactions')
      .set(set)
      .where('id', '=', id)
      .where('tx_hash', '=', hash)
      .where('status', '=', 'pending')
      .where('block_number', 'is', null)
      .returning('id'),
);

/**
 * A mined pending row settled: confirmed, or failed (reverted, or its mined version a cancel).
 * Returns the row as `findRecord` reads it after the change, or undefined when it was not a
 * mined pending row. On PostgreSQL the update and that read are one statement (the update as a
 * data-modifying CTE, its RETURNING joined as `findRecord` joins it): the watcher settles a
 * block's transfers in one statement each where it took two.
 */
export async function settle(
  db: Executor,
  id: number,
  outcome: 'confirmed' | 'reverted' | 'cancelled',
  nowMs: number,
): Promise<TxRecord | undefined> {
  const failedWith = (error: string, reason: FailureReason) => ({
    id,
    status: 'failed',
    failed_at: nowMs,
    error,
    failure_reason: reason,
    updated_at: nowMs,
  });
  const set: SettleSet =
    outcome === 'confirmed'
      ? { id, status: 'confirmed', confirmed_at: nowMs, updated_at: nowMs }
      : outcome === 'reverted'
        ? failedWith('execution reverted', 'reverted')
        : failedWith('cancelled: the zero-value replacement was mined', 'cancelled');
  if (dialectOf(db).driver !== 'postgres') return (await settleRow.execute(db, set)).length === 1 ? findRecord(db, id) : undefined;
  const r = await settleReturningRecord.executeTakeFirst(db, set);
  return r ? toRecord(r) : undefined;
}

type SettleSet = {
  id: number;
  status: string;
  confirmed_at?: number;
  failed_at?: number;
  error?: string;
  failure_reason?: FailureReason;
  updated_at: number;
};

const settleUpdate = (db: QueryCreator<Database>, { id, ...set }: SettleSet) =>
  db.updateTable('transactions').set(set).where('id', '=', id).where('status', '=', 'pending').where('block_number', 'is not', null);

const settleRow = prepareRow((db: Executor, s: SettleSet) => settleUpdate(db, s).returning('id'));

/** PostgreSQL: the settling update and the row as `findRecord` reads it, in one statement. */
const settleReturningRecord = prepareRow((db: Executor, s: SettleSet) =>
  db
    .with('tx', (qc) => settleUpdate(qc, s).returningAll())
    .selectFrom('tx')
    .innerJoin('wallet_tokens as wt', 'wt.id', 'tx.token_id')
    .innerJoin('wallets as w', 'w.id', 'tx.wallet_id')
    .select(RECORD_COLUMNS),
);

/**
 * Puts a row seen in an orphaned block back to pending, with its block fields cleared. A token
 * receipt's log index belonged to that block: it is parked at `-2 - id` (below every real index
 * and the native transfers' -1, unique), so the same transfer in another block, at another
 * index, finds it (`adoptParkedReceipt`) instead of becoming a second row.
 */
export async function unmine(db: Executor, id: number, nowMs: number): Promise<void> {
  await db
    .updateTable('transactions')
    .set({
      log_index: sql<number>`case when type = 'receipt' and log_index >= 0 then -2 - id else log_index end`,
      status: 'pending',
      block_number: null,
      block_hash: null,
      block_timestamp: null,
      gas_used: null,
      cumulative_gas_used: null,
      receipt_status: null,
      fee_paid: null,
      confirmed_at: null,
      failed_at: null,
      error: null,
      failure_reason: null,
      broadcast_at: null,
      next_check_at: null,
      check_count: 0,
      updated_at: nowMs,
    })
    .where('id', '=', id)
    .execute();
}

// ---------------------------------------------------------------------------------------------
// The watcher's queries, per network.
// ---------------------------------------------------------------------------------------------

/** Whether a transfer (outgoing or received) of the network is pending: mined or not, not yet confirmed or failed. */
export async function hasPendingTransfers(db: Executor, networkId: number): Promise<boolean> {
  return (await pendingOnNetwork.executeTakeFirst(db, networkId)) !== undefined;
}

// The watcher's reads of every round, compiled once (src/db/prepared.ts): built at each call they
// were a measurable share of the event loop's busy time under a hot wallet's creates
// (BENCHMARKS.md).
const pendingOnNetwork = prepare((db: Executor, networkId: number) =>
  db
    .selectFrom('transactions as tx')
    .select('tx.id')
    .where('tx.status', '=', 'pending')
    .where('tx.wallet_id', 'in', onNetwork(db, networkId))
    .limit(1),
);

/** Pending rows (any type) mined at or below `maxBlock`: their confirmations are reached. */
export async function listSettleable(db: Executor, networkId: number, maxBlock: number, limit: number): Promise<TxRecord[]> {
  const rows = await settleableRows.execute(db, networkId, maxBlock, limit);
  return rows.map((r) => toRecord(r));
}

const settleableRows = prepare((db: Executor, networkId: number, maxBlock: number, limit: number) =>
  records(db)
    .where('tx.wallet_id', 'in', onNetwork(db, networkId))
    .where('tx.status', '=', 'pending')
    .where('tx.block_number', 'is not', null)
    .where('tx.block_number', '<=', maxBlock)
    .orderBy('tx.block_number', 'asc')
    .orderBy('tx.id', 'asc')
    .limit(limit),
);

/** Rows of the network's wallets recorded from blocks above `block` (a reorg removed them). */
export async function listAboveBlock(
  db: Executor,
  networkId: number,
  block: number,
): Promise<Array<{ id: number; wallet_id: number; type: string }>> {
  return db
    .selectFrom('transactions')
    .select(['id', 'wallet_id', 'type'])
    .where('wallet_id', 'in', onNetwork(db, networkId))
    .where('block_number', '>', block)
    .orderBy('seq', 'desc')
    .execute();
}

export interface WatchedWallet {
  id: number;
  user_id: number;
  network_id: number;
  address: string;
}

export interface WatchedToken {
  id: number;
  wallet_id: number;
  symbol: string;
  decimals: number;
  contract: string;
  is_native: number;
}

/** The wallets of a network and their active tokens (the watcher matches blocks against them). */
export async function listWatched(db: Executor, networkId: number): Promise<{ wallets: WatchedWallet[]; tokens: WatchedToken[] }> {
  const wallets = await watchedWallets.execute(db, networkId);
  const tokens = await watchedTokens.execute(db, networkId);
  return { wallets, tokens };
}

const watchedWallets = prepare((db: Executor, networkId: number) =>
  db.selectFrom('wallets').select(['id', 'user_id', 'network_id', 'address']).where('network_id', '=', networkId),
);

const watchedTokens = prepare((db: Executor, networkId: number) =>
  db
    .selectFrom('wallet_tokens as wt')
    .innerJoin('wallets as w', 'w.id', 'wt.wallet_id')
    .select(['wt.id', 'wt.wallet_id', 'wt.symbol', 'wt.decimals', 'wt.contract', 'wt.is_native'])
    .where('w.network_id', '=', networkId)
    .where('wt.is_active', '=', 1),
);
