/**
 * transactions rows. Amounts are decimal strings in the database and bigint here. Read paths
 * select explicit columns: `raw_tx` (the signed transaction) is selected only by the
 * rebroadcast query, never by a read the API serves.
 *
 * Every insert of a row goes through `insertTransaction`, which must run inside a transaction
 * that holds the wallet's row lock (`lockWallet`): it numbers the row (`seq`, `symbol_seq`)
 * from the current maximum, and the lock is what keeps those numbers dense and unique.
 */
import { sql } from 'kysely';
import type { Executor } from '../../db/index.js';
import type { SqlDialect } from '../../db/dialect.js';
import type { TransactionRow } from '../../db/types.js';

export type TxType = 'transfer' | 'receipt' | 'contract';
export type TxStatus = 'pending' | 'confirmed' | 'failed';
/**
 * A receipt whose block was orphaned by a reorg: hidden from every read (sequence 0, not
 * shown, not counted). The row is kept so its id is never reused and, if the same transfer
 * appears on the new chain, it comes back under the same id.
 */
export const ORPHANED = 'orphaned';

/** A transaction with its token's display fields, as the API and the events need it. */
export interface TxRecord {
  id: number;
  wallet_id: number;
  token_id: number;
  type: TxType;
  status: TxStatus;
  amount: bigint;
  fee_reserved: bigint;
  from_address: string;
  to_address: string;
  tx_hash: string | null;
  log_index: number;
  block_number: number | null;
  block_hash: string | null;
  block_timestamp: number | null;
  nonce: number | null;
  gas: bigint | null;
  gas_price: bigint | null;
  gas_used: bigint | null;
  cumulative_gas_used: bigint | null;
  receipt_status: number | null;
  error: string | null;
  broadcast_at: number | null;
  confirmed_at: number | null;
  failed_at: number | null;
  created_at: number;
  updated_at: number;
  seq: number;
  symbol: string;
  decimals: number;
  /** The wallet's owner (for events). */
  user_id: number;
}

const RECORD_COLUMNS = [
  'tx.id',
  'tx.wallet_id',
  'tx.token_id',
  'tx.type',
  'tx.status',
  'tx.amount',
  'tx.fee_reserved',
  'tx.from_address',
  'tx.to_address',
  'tx.tx_hash',
  'tx.log_index',
  'tx.block_number',
  'tx.block_hash',
  'tx.block_timestamp',
  'tx.nonce',
  'tx.gas',
  'tx.gas_price',
  'tx.gas_used',
  'tx.cumulative_gas_used',
  'tx.receipt_status',
  'tx.error',
  'tx.broadcast_at',
  'tx.confirmed_at',
  'tx.failed_at',
  'tx.created_at',
  'tx.updated_at',
  'tx.seq',
  'wt.symbol',
  'wt.decimals',
  'w.user_id',
] as const;

const big = (v: string | null): bigint | null => (v === null ? null : BigInt(v));

type RawRecord = Omit<TxRecord, 'amount' | 'fee_reserved' | 'gas' | 'gas_price' | 'gas_used' | 'cumulative_gas_used' | 'type' | 'status'> & {
  type: string;
  status: string;
  amount: string;
  fee_reserved: string;
  gas: string | null;
  gas_price: string | null;
  gas_used: string | null;
  cumulative_gas_used: string | null;
};

function toRecord(r: RawRecord): TxRecord {
  return {
    ...r,
    type: r.type as TxType,
    status: r.status as TxStatus,
    amount: BigInt(r.amount),
    fee_reserved: BigInt(r.fee_reserved),
    gas: big(r.gas),
    gas_price: big(r.gas_price),
    gas_used: big(r.gas_used),
    cumulative_gas_used: big(r.cumulative_gas_used),
  };
}

function records(db: Executor) {
  return db
    .selectFrom('transactions as tx')
    .innerJoin('wallet_tokens as wt', 'wt.id', 'tx.token_id')
    .innerJoin('wallets as w', 'w.id', 'tx.wallet_id')
    .select(RECORD_COLUMNS);
}

export async function findRecord(db: Executor, id: number): Promise<TxRecord | undefined> {
  const r = await records(db).where('tx.id', '=', id).executeTakeFirst();
  return r ? toRecord(r as RawRecord) : undefined;
}

export async function findRecordForWallet(db: Executor, walletId: number, id: number): Promise<TxRecord | undefined> {
  const r = await records(db).where('tx.id', '=', id).where('tx.wallet_id', '=', walletId).where('tx.status', '!=', ORPHANED).executeTakeFirst();
  return r ? toRecord(r as RawRecord) : undefined;
}

// ---------------------------------------------------------------------------------------------
// The list: newest first, page N found by its sequence range (see migration 003).
// ---------------------------------------------------------------------------------------------

/** Rows in the list (all, or one symbol): the highest sequence number, since it is dense. */
export async function countForList(db: Executor, walletId: number, symbolKey: string | null): Promise<number> {
  if (symbolKey === null) {
    const r = await db.selectFrom('transactions').select('seq').where('wallet_id', '=', walletId).orderBy('seq', 'desc').limit(1).executeTakeFirst();
    return r ? Number(r.seq) : 0;
  }
  const r = await db
    .selectFrom('transactions')
    .select('symbol_seq')
    .where('wallet_id', '=', walletId)
    .where('symbol_key', '=', symbolKey)
    .orderBy('symbol_seq', 'desc')
    .limit(1)
    .executeTakeFirst();
  return r ? Number(r.symbol_seq) : 0;
}

/** Rows whose sequence number is in (low, high], newest first: one index range scan. */
export async function listSeqRange(db: Executor, walletId: number, symbolKey: string | null, low: number, high: number): Promise<TxRecord[]> {
  let q = records(db).where('tx.wallet_id', '=', walletId);
  if (symbolKey === null) {
    q = q.where('tx.seq', '>', low).where('tx.seq', '<=', high).orderBy('tx.seq', 'desc');
  } else {
    q = q.where('tx.symbol_key', '=', symbolKey).where('tx.symbol_seq', '>', low).where('tx.symbol_seq', '<=', high).orderBy('tx.symbol_seq', 'desc');
  }
  const rows = await q.execute();
  return rows.map((r) => toRecord(r as RawRecord));
}

// ---------------------------------------------------------------------------------------------
// Writes under the wallet lock.
// ---------------------------------------------------------------------------------------------

export interface LockedWallet {
  id: number;
  user_id: number;
  address: string;
  next_nonce: number | null;
}

/** Row lock on the wallet for the rest of the transaction (SQLite: the transaction is the lock). */
export async function lockWallet(db: Executor, dialect: SqlDialect, walletId: number): Promise<LockedWallet> {
  const q = db.selectFrom('wallets').select(['id', 'user_id', 'address', 'next_nonce']).where('id', '=', walletId);
  return dialect.forUpdate(q).executeTakeFirstOrThrow();
}

/** Locks several wallets in ascending id order (one global order: no deadlock between lockers). */
export async function lockWallets(db: Executor, dialect: SqlDialect, walletIds: Iterable<number>): Promise<void> {
  for (const id of [...new Set(walletIds)].sort((a, b) => a - b)) await lockWallet(db, dialect, id);
}

export async function setNextNonce(db: Executor, walletId: number, nextNonce: number | null, nowMs: number): Promise<void> {
  await db.updateTable('wallets').set({ next_nonce: nextNonce, updated_at: nowMs }).where('id', '=', walletId).execute();
}

export interface Reservation {
  token_id: number;
  amount: bigint;
  fee_reserved: bigint;
}

/**
 * What the wallet's own outgoing transfers still take from a chain balance read at block B,
 * given `minedNonce`, the address's transaction count at B. Every transfer comes from the
 * wallet's address, so the ones with a nonce below that count are already in the balance at B
 * and the ones at or above it are not: each of those reserves its amount and its maximum fee.
 * This is exact whatever the watcher has seen so far. Transfers that failed without ever being
 * mined took nothing and reserve nothing (their nonce may have been handed out again).
 */
export async function reservations(db: Executor, walletId: number, minedNonce: number): Promise<Reservation[]> {
  const rows = await db
    .selectFrom('transactions')
    .select(['token_id', 'amount', 'fee_reserved'])
    .where('wallet_id', '=', walletId)
    .where('type', '=', 'transfer')
    .where('nonce', '>=', minedNonce)
    .where((eb) => eb.not(eb.and([eb('status', '=', 'failed'), eb('block_number', 'is', null)])))
    .execute();
  return rows.map((r) => ({ token_id: r.token_id, amount: BigInt(r.amount), fee_reserved: BigInt(r.fee_reserved) }));
}

/** Nonces ≥ `from` held by the wallet's pending outgoing transactions. */
export async function heldNonces(db: Executor, walletId: number, from: number): Promise<Set<number>> {
  const rows = await db
    .selectFrom('transactions')
    .select('nonce')
    .where('wallet_id', '=', walletId)
    .where('type', '=', 'transfer')
    .where('status', '=', 'pending')
    .where('nonce', '>=', from)
    .execute();
  return new Set(rows.map((r) => Number(r.nonce)));
}

export interface NewTx {
  wallet_id: number;
  token_id: number;
  symbol: string;
  type: TxType;
  status: TxStatus;
  amount: bigint;
  fee_reserved: bigint;
  from_address: string;
  to_address: string;
  tx_hash: string;
  log_index: number;
  block_number: number | null;
  block_hash: string | null;
  block_timestamp: number | null;
  nonce: number | null;
  gas: bigint | null;
  gas_price: bigint | null;
  gas_used: bigint | null;
  cumulative_gas_used: bigint | null;
  receipt_status: number | null;
  raw_tx: string | null;
  confirmed_at: number | null;
}

const str = (v: bigint | null): string | null => (v === null ? null : v.toString());

/**
 * Inserts a row numbered after the wallet's newest (caller holds the wallet lock) and returns
 * its id. A receipt is unique per (wallet, hash, log): for one that exists already the result
 * is null, and an orphaned one with the same key is brought back instead (same id, new block,
 * new number).
 */
export async function insertTransaction(db: Executor, t: NewTx, nowMs: number): Promise<number | null> {
  const symbolKey = t.symbol.toUpperCase();
  const seq = (await countForList(db, t.wallet_id, null)) + 1;
  const symbolSeq = (await countForList(db, t.wallet_id, symbolKey)) + 1;
  const insert = db
    .insertInto('transactions')
    .values({
      wallet_id: t.wallet_id,
      token_id: t.token_id,
      type: t.type,
      status: t.status,
      amount: t.amount.toString(),
      fee_reserved: t.fee_reserved.toString(),
      from_address: t.from_address,
      to_address: t.to_address,
      tx_hash: t.tx_hash,
      log_index: t.log_index,
      block_number: t.block_number,
      block_hash: t.block_hash,
      block_timestamp: t.block_timestamp,
      nonce: t.nonce,
      gas: str(t.gas),
      gas_price: str(t.gas_price),
      gas_used: str(t.gas_used),
      cumulative_gas_used: str(t.cumulative_gas_used),
      receipt_status: t.receipt_status,
      raw_tx: t.raw_tx,
      input: null,
      info: null,
      error: null,
      broadcast_at: null,
      confirmed_at: t.confirmed_at,
      failed_at: null,
      created_at: nowMs,
      updated_at: nowMs,
      seq,
      symbol_key: symbolKey,
      symbol_seq: symbolSeq,
    });
  if (t.type !== 'receipt') return (await insert.returning('id').executeTakeFirstOrThrow()).id;
  const row = await insert
    .onConflict((oc) =>
      oc
        .columns(['wallet_id', 'tx_hash', 'log_index'])
        .where(sql<boolean>`type = 'receipt'`)
        .doUpdateSet((eb) => ({
          status: eb.ref('excluded.status'),
          block_number: eb.ref('excluded.block_number'),
          block_hash: eb.ref('excluded.block_hash'),
          block_timestamp: eb.ref('excluded.block_timestamp'),
          gas_used: eb.ref('excluded.gas_used'),
          cumulative_gas_used: eb.ref('excluded.cumulative_gas_used'),
          receipt_status: eb.ref('excluded.receipt_status'),
          confirmed_at: eb.ref('excluded.confirmed_at'),
          updated_at: eb.ref('excluded.updated_at'),
          seq: eb.ref('excluded.seq'),
          symbol_seq: eb.ref('excluded.symbol_seq'),
        }))
        .where('transactions.status', '=', ORPHANED),
    )
    .returning('id')
    .executeTakeFirst();
  return row ? row.id : null;
}

/**
 * Removes a receipt from the wallet's history (ORPHANED, sequence 0, block fields cleared) and
 * closes the gap it leaves in both sequences (caller holds the wallet lock). Only the rows
 * numbered after it move: a receipt orphaned by a reorg is recent, so that is a handful of
 * rows, not the wallet's history.
 */
export async function orphanTransaction(db: Executor, id: number, nowMs: number): Promise<void> {
  const row = await db
    .selectFrom('transactions')
    .select(['wallet_id', 'seq', 'symbol_key', 'symbol_seq'])
    .where('id', '=', id)
    .where('status', '!=', ORPHANED)
    .executeTakeFirst();
  if (!row) return;
  await db
    .updateTable('transactions')
    .set({
      status: ORPHANED,
      seq: 0,
      symbol_seq: 0,
      block_number: null,
      block_hash: null,
      block_timestamp: null,
      confirmed_at: null,
      updated_at: nowMs,
    })
    .where('id', '=', id)
    .execute();
  await db
    .updateTable('transactions')
    .set({ seq: sql`seq - 1` })
    .where('wallet_id', '=', row.wallet_id)
    .where('seq', '>', row.seq)
    .execute();
  await db
    .updateTable('transactions')
    .set({ symbol_seq: sql`symbol_seq - 1` })
    .where('wallet_id', '=', row.wallet_id)
    .where('symbol_key', '=', row.symbol_key)
    .where('symbol_seq', '>', row.symbol_seq)
    .execute();
}

// ---------------------------------------------------------------------------------------------
// State changes. Each is conditional on the state it leaves (`status = 'pending'`), so two
// actors racing on one row (the create route's broadcast and the watcher) change it once.
// ---------------------------------------------------------------------------------------------

export async function markBroadcast(db: Executor, id: number, nowMs: number): Promise<void> {
  await db.updateTable('transactions').set({ broadcast_at: nowMs, updated_at: nowMs }).where('id', '=', id).where('status', '=', 'pending').execute();
}

export async function markFailed(db: Executor, id: number, error: string, nowMs: number): Promise<boolean> {
  const r = await db
    .updateTable('transactions')
    .set({ status: 'failed', error: error.slice(0, 1000), failed_at: nowMs, updated_at: nowMs })
    .where('id', '=', id)
    .where('status', '=', 'pending')
    .executeTakeFirst();
  return Number(r.numUpdatedRows) === 1;
}

/** A transfer marked failed without being mined turned up in a block: pending again (then attached). */
export async function revive(db: Executor, id: number, nowMs: number): Promise<boolean> {
  const r = await db
    .updateTable('transactions')
    .set({ status: 'pending', failed_at: null, error: null, updated_at: nowMs })
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
}

/** A pending transfer seen in a processed block: block fields and receipt, still pending. */
export async function attachMined(db: Executor, id: number, m: MinedFields, nowMs: number): Promise<boolean> {
  const r = await db
    .updateTable('transactions')
    .set({
      block_number: m.block_number,
      block_hash: m.block_hash,
      block_timestamp: m.block_timestamp,
      gas_used: m.gas_used.toString(),
      cumulative_gas_used: m.cumulative_gas_used.toString(),
      receipt_status: m.receipt_status,
      updated_at: nowMs,
    })
    .where('id', '=', id)
    .where('status', '=', 'pending')
    .where('block_number', 'is', null)
    .executeTakeFirst();
  return Number(r.numUpdatedRows) === 1;
}

/** Moves a mined pending row to its final state: confirmed, or failed when it reverted. */
export async function settle(db: Executor, id: number, outcome: 'confirmed' | 'failed', nowMs: number): Promise<boolean> {
  const r = await db
    .updateTable('transactions')
    .set(
      outcome === 'confirmed'
        ? { status: 'confirmed', confirmed_at: nowMs, updated_at: nowMs }
        : { status: 'failed', failed_at: nowMs, error: 'execution reverted', updated_at: nowMs },
    )
    .where('id', '=', id)
    .where('status', '=', 'pending')
    .where('block_number', 'is not', null)
    .executeTakeFirst();
  return Number(r.numUpdatedRows) === 1;
}

/** Puts a row seen in an orphaned block back to pending, with its block fields cleared. */
export async function unmine(db: Executor, id: number, nowMs: number): Promise<void> {
  await db
    .updateTable('transactions')
    .set({
      status: 'pending',
      block_number: null,
      block_hash: null,
      block_timestamp: null,
      gas_used: null,
      cumulative_gas_used: null,
      receipt_status: null,
      confirmed_at: null,
      failed_at: null,
      error: null,
      broadcast_at: null,
      updated_at: nowMs,
    })
    .where('id', '=', id)
    .execute();
}

// ---------------------------------------------------------------------------------------------
// The watcher's queries, per network.
// ---------------------------------------------------------------------------------------------

function onNetwork(db: Executor, networkId: number) {
  return db.selectFrom('wallets').select('id').where('network_id', '=', networkId);
}

/** Pending rows (any type) mined at or below `maxBlock`: their confirmations are reached. */
export async function listSettleable(db: Executor, networkId: number, maxBlock: number, limit: number): Promise<TxRecord[]> {
  const rows = await records(db)
    .where('tx.wallet_id', 'in', onNetwork(db, networkId))
    .where('tx.status', '=', 'pending')
    .where('tx.block_number', 'is not', null)
    .where('tx.block_number', '<=', maxBlock)
    .orderBy('tx.block_number', 'asc')
    .orderBy('tx.id', 'asc')
    .limit(limit)
    .execute();
  return rows.map((r) => toRecord(r as RawRecord));
}

/**
 * Outgoing transfers with these hashes not yet seen in a block: pending ones, and failed ones
 * that were never mined (a node refused them, yet here they are in a block).
 */
export async function findUnminedByHashes(db: Executor, networkId: number, hashes: string[]): Promise<TxRecord[]> {
  if (hashes.length === 0) return [];
  const rows = await records(db)
    .where('tx.wallet_id', 'in', onNetwork(db, networkId))
    .where('tx.type', '=', 'transfer')
    .where('tx.status', 'in', ['pending', 'failed'])
    .where('tx.block_number', 'is', null)
    .where('tx.tx_hash', 'in', hashes)
    .execute();
  return rows.map((r) => toRecord(r as RawRecord));
}

export interface UnminedTransfer {
  id: number;
  wallet_id: number;
  tx_hash: string;
  nonce: number;
  raw_tx: string;
  broadcast_at: number | null;
  created_at: number;
}

/**
 * Pending outgoing transfers not seen in a block that are due a check with the node: never
 * confirmed as broadcast and older than `graceBefore` (the create route is still sending the
 * young ones), or last checked before `checkedBefore`. `all` ignores both (the start-up pass).
 */
export async function listDueUnmined(
  db: Executor,
  networkId: number,
  opts: { graceBefore: number; checkedBefore: number; all: boolean; limit: number },
): Promise<UnminedTransfer[]> {
  let q = db
    .selectFrom('transactions')
    .select(['id', 'wallet_id', 'tx_hash', 'nonce', 'raw_tx', 'broadcast_at', 'created_at'])
    .where('wallet_id', 'in', onNetwork(db, networkId))
    .where('type', '=', 'transfer')
    .where('status', '=', 'pending')
    .where('block_number', 'is', null)
    .where('raw_tx', 'is not', null);
  if (!opts.all) {
    q = q.where((eb) =>
      eb.or([
        eb.and([eb('broadcast_at', 'is', null), eb('created_at', '<', opts.graceBefore)]),
        eb('broadcast_at', '<', opts.checkedBefore),
      ]),
    );
  }
  const rows = await q.orderBy('nonce', 'asc').orderBy('id', 'asc').limit(opts.limit).execute();
  return rows.map((r) => ({ ...r, tx_hash: r.tx_hash!, nonce: Number(r.nonce), raw_tx: r.raw_tx! }));
}

/** Rows of the network's wallets recorded from blocks above `block` (a reorg removed them). */
export async function listAboveBlock(db: Executor, networkId: number, block: number): Promise<Array<{ id: number; wallet_id: number; type: string }>> {
  return db
    .selectFrom('transactions')
    .select(['id', 'wallet_id', 'type'])
    .where('wallet_id', 'in', onNetwork(db, networkId))
    .where('block_number', '>', block)
    .orderBy('seq', 'desc')
    .execute();
}

export type { TransactionRow };
