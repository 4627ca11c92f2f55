/**
 * The transactions row: its types, how it is read (`records`, `toRecord`) and inserted, and the
 * wallet's next nonce. The create path's other queries are in transactions.create.repository.ts,
 * the watcher's in transactions.watch.repository.ts, re-sends and signed versions in
 * transactions.versions.repository.ts. Amounts are decimal strings in the database and bigint here. Read paths
 * select explicit columns: `raw_tx` (the signed transaction) is selected only by the
 * rebroadcast query, never by a read the API serves.
 *
 * Every insert of a row goes through `insertTransaction`, which must run inside a transaction
 * that holds the wallet's row lock (`lockWallet`, wallets.repository.ts): it numbers the row (`seq`, `symbol_seq`)
 * from the current maximum, and the lock is what keeps those numbers dense and unique.
 */
import { sql, type QueryCreator } from 'kysely';
import { dialectOf } from '../../db/dialect.js';
import type { Executor } from '../../db/index.js';
import { prepare, prepareRow } from '../../db/prepared.js';
import type { Database } from '../../db/types.js';

export type TxType = 'transfer' | 'receipt' | 'contract';
/** Types the wallet sends (signed by the service, with a nonce, reserved until final). */
export const OUTGOING_TYPES: TxType[] = ['transfer', 'contract'];
/** `awaiting_approval`: held by the spending policy's `approval_above`, nothing signed (migration 019). */
export type TxStatus = 'pending' | 'confirmed' | 'failed' | 'awaiting_approval';
/** Why a failed transaction failed (migration 006). */
export type FailureReason = 'reverted' | 'dropped' | 'cancelled' | 'rejected' | 'rejected_by_approver' | 'approval_expired';
/** Why a transfer held for approval failed without being signed. */
export type ApprovalFailure = Extract<FailureReason, 'rejected_by_approver' | 'approval_expired'>;
/** What a signed version of an outgoing transaction is: the first one, or a replacement at its nonce. */
export type BroadcastKind = 'original' | 'speed-up' | 'cancel';
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
  /** Migration 005: how it was signed, its EIP-1559 fees, its calldata (contract calls), its L1 fee. */
  tx_kind: 'legacy' | 'eip1559';
  max_fee_per_gas: bigint | null;
  max_priority_fee_per_gas: bigint | null;
  data: string | null;
  l1_fee: bigint;
  /** Migration 006: why it failed, what its current hash is, its earlier hashes, since when it is stuck. */
  failure_reason: FailureReason | null;
  broadcast_kind: BroadcastKind;
  broadcast_attempts: number;
  replaced_hashes: string[];
  stuck_at: number | null;
  /** Migration 024: why every endpoint refused its re-send (not for its fee), else null. */
  stuck_reason: string | null;
  /** Migration 020: the refund this transfer pays, else null. */
  refund_id: number | null;
  /** Migration 021: the payout it is an item of, and the item's reference. */
  payout_id: number | null;
  reference: string | null;
}

export const RECORD_COLUMNS = [
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
  'tx.tx_kind',
  'tx.max_fee_per_gas',
  'tx.max_priority_fee_per_gas',
  'tx.data',
  'tx.l1_fee',
  'tx.failure_reason',
  'tx.broadcast_kind',
  'tx.broadcast_attempts',
  'tx.replaced_hashes',
  'tx.stuck_at',
  'tx.stuck_reason',
  'tx.refund_id',
  'tx.payout_id',
  'tx.reference',
] as const;

export const big = (v: string | null): bigint | null => (v === null ? null : BigInt(v));

export type RawRecord = Omit<
  TxRecord,
  | 'amount'
  | 'fee_reserved'
  | 'gas'
  | 'gas_price'
  | 'gas_used'
  | 'cumulative_gas_used'
  | 'type'
  | 'status'
  | 'tx_kind'
  | 'max_fee_per_gas'
  | 'max_priority_fee_per_gas'
  | 'l1_fee'
  | 'failure_reason'
  | 'broadcast_kind'
  | 'replaced_hashes'
> & {
  failure_reason: string | null;
  broadcast_kind: string;
  replaced_hashes: string | null;
  tx_kind: string;
  max_fee_per_gas: string | null;
  max_priority_fee_per_gas: string | null;
  l1_fee: string;
  type: string;
  status: string;
  amount: string;
  fee_reserved: string;
  gas: string | null;
  gas_price: string | null;
  gas_used: string | null;
  cumulative_gas_used: string | null;
};

export function toRecord(r: RawRecord): TxRecord {
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
    tx_kind: r.tx_kind === 'eip1559' ? 'eip1559' : 'legacy',
    max_fee_per_gas: big(r.max_fee_per_gas),
    max_priority_fee_per_gas: big(r.max_priority_fee_per_gas),
    l1_fee: BigInt(r.l1_fee),
    failure_reason: r.failure_reason as FailureReason | null,
    broadcast_kind: r.broadcast_kind as BroadcastKind,
    broadcast_attempts: Number(r.broadcast_attempts),
    replaced_hashes: r.replaced_hashes ? r.replaced_hashes.split(',') : [],
    refund_id: r.refund_id === null ? null : Number(r.refund_id),
    payout_id: r.payout_id === null ? null : Number(r.payout_id),
  };
}

export function records(db: Executor) {
  return db
    .selectFrom('transactions as tx')
    .innerJoin('wallet_tokens as wt', 'wt.id', 'tx.token_id')
    .innerJoin('wallets as w', 'w.id', 'tx.wallet_id')
    .select(RECORD_COLUMNS);
}

/** Every create reads its row back: compiled once (src/db/prepared.ts). */
const recordById = prepare((db: Executor, id: number) => records(db).where('tx.id', '=', id));

export async function findRecord(db: Executor, id: number): Promise<TxRecord | undefined> {
  const r = await recordById.executeTakeFirst(db, id);
  return r ? toRecord(r as RawRecord) : undefined;
}

export async function findRecordForWallet(db: Executor, walletId: number, id: number): Promise<TxRecord | undefined> {
  const r = await records(db)
    .where('tx.id', '=', id)
    .where('tx.wallet_id', '=', walletId)
    .where('tx.status', '!=', ORPHANED)
    .executeTakeFirst();
  return r ? toRecord(r as RawRecord) : undefined;
}

/**
 * An internal receipt's `log_index` (native coin a contract sent to the wallet inside a
 * transaction, from the block's call traces): INTERNAL_LOG_BASE less the call's position in its
 * transaction's call tree (from 1). Far below the native transfers' -1 and the parked token
 * receipts' -2 - id (`unmine`), so one transaction may pay a wallet directly and internally,
 * several times, without two rows colliding; `internal` in the API is this range.
 */
export const INTERNAL_LOG_BASE = -1_000_000_000;

/** A receipt row that is an internal transfer (`INTERNAL_LOG_BASE`). */
export const isInternalReceipt = (t: { type: string; log_index: number }): boolean =>
  t.type === 'receipt' && t.log_index <= INTERNAL_LOG_BASE;

export interface NewTx {
  /** PostgreSQL: an id drawn beforehand (`drawTransactionId`); absent, the insert draws it. */
  id?: number;
  wallet_id: number;
  token_id: number;
  symbol: string;
  type: TxType;
  status: TxStatus;
  amount: bigint;
  fee_reserved: bigint;
  from_address: string;
  to_address: string;
  /** Null only for a transfer held for approval (nothing signed). */
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
  raw_tx: string | null;
  confirmed_at: number | null;
  /** Migration 005 (outgoing rows); absent: legacy, no calldata, no L1 fee. */
  tx_kind?: 'legacy' | 'eip1559';
  max_fee_per_gas?: bigint | null;
  max_priority_fee_per_gas?: bigint | null;
  data?: string | null;
  l1_fee?: bigint;
  /** Sends already counted (`claimAttempt`); a new transfer about to be sent by its create counts its first here. */
  broadcast_attempts?: number;
  /** A transfer held for approval: the create's fee choice, JSON (migration 019). */
  requested_fees?: string | null;
  /** The refund it pays (migration 020); the payout it is an item of and its reference (021). */
  refund_id?: number | null;
  payout_id?: number | null;
  reference?: string | null;
  /** A call to one of the wallet's token contracts: the token, the amount policed, what it takes from the balance (migration 029). */
  call_token_id?: number | null;
  call_amount?: bigint | null;
  call_spend?: bigint | null;
}

export const str = (v: bigint | null): string | null => (v === null ? null : v.toString());

/** The column values of a new row, with its numbers in the wallet's list. */
/** A new row's plain values (the two sequence numbers are drawn by the insert: `withSequences`). */
function insertRow(t: NewTx, nowMs: number) {
  return {
    ...(t.id === undefined ? {} : { id: t.id }),
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
    symbol_key: t.symbol.toUpperCase(),
    tx_kind: t.tx_kind ?? 'legacy',
    max_fee_per_gas: str(t.max_fee_per_gas ?? null),
    max_priority_fee_per_gas: str(t.max_priority_fee_per_gas ?? null),
    data: t.data ?? null,
    l1_fee: (t.l1_fee ?? 0n).toString(),
    ...(t.broadcast_attempts === undefined ? {} : { broadcast_attempts: t.broadcast_attempts }),
    ...(t.requested_fees === undefined ? {} : { requested_fees: t.requested_fees }),
    ...(t.refund_id === undefined ? {} : { refund_id: t.refund_id }),
    ...(t.payout_id === undefined ? {} : { payout_id: t.payout_id, reference: t.reference ?? null }),
    ...(t.call_token_id == null
      ? {}
      : { call_token_id: t.call_token_id, call_amount: str(t.call_amount ?? 0n), call_spend: str(t.call_spend ?? 0n) }),
  };
}

/**
 * Inserts a row numbered after the wallet's newest (caller holds the wallet lock) and returns
 * its id. A receipt is unique per (wallet, hash, log): for one that exists already the result
 * is null, except for one without a block, which the chain now shows mined again: a receipt a
 * reorg put back to pending (or then failed as dropped: the chain is the truth) takes the new
 * block under its id and number; one orphaned by an earlier version comes back with a new
 * number.
 */
type InsertRow = ReturnType<typeof insertRow>;

/** Every create runs it: compiled once per set of columns (src/db/prepared.ts). */
const insertOutgoing = prepareRow((db: Executor, row: InsertRow) =>
  db.insertInto('transactions').values(withSequences(row)).returning('id'),
);

/** Every receipt the watcher records runs it: compiled once per set of columns. */
const upsertReceipt = prepareRow((db: Executor, row: InsertRow) =>
  db
    .insertInto('transactions')
    .values(withSequences(row))
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
          failed_at: null,
          error: null,
          failure_reason: null,
          updated_at: eb.ref('excluded.updated_at'),
          seq: sql<number>`case when transactions.status = ${ORPHANED} then excluded.seq else transactions.seq end`,
          symbol_seq: sql<number>`case when transactions.status = ${ORPHANED} then excluded.symbol_seq else transactions.symbol_seq end`,
        }))
        .where((eb) =>
          eb.or([
            eb('transactions.status', '=', ORPHANED),
            eb.and([eb('transactions.block_number', 'is', null), eb('transactions.status', 'in', ['pending', 'failed'])]),
          ]),
        ),
    )
    .returning('id'),
);

export async function insertTransaction(db: Executor, t: NewTx, nowMs: number): Promise<number | null> {
  if (t.type !== 'receipt') return (await insertOutgoing.executeTakeFirst(db, insertRow(t, nowMs)))!.id;
  const row = await upsertReceipt.executeTakeFirst(db, insertRow(t, nowMs));
  return row ? row.id : null;
}

/**
 * A token receipt seen in a block (log index >= 0): a receipt of the same wallet, transaction,
 * token and amount that a reorg took out of its block (log index parked, `unmine`) takes this
 * log index, so `insertTransaction` brings it back under its id. The oldest such row, and only
 * if no row holds that index already. Caller holds the wallet lock.
 */
export async function adoptParkedReceipt(db: Executor, t: NewTx): Promise<void> {
  if (t.type !== 'receipt' || t.log_index < 0) return;
  const parked = db
    .selectFrom('transactions')
    .select('id')
    .where('wallet_id', '=', t.wallet_id)
    .where('tx_hash', '=', t.tx_hash)
    .where('type', '=', 'receipt')
    .where('token_id', '=', t.token_id)
    .where('amount', '=', t.amount.toString())
    .where('block_number', 'is', null)
    .where('status', 'in', ['pending', 'failed'])
    .where('log_index', '<', -1)
    .orderBy('id', 'asc')
    .limit(1);
  const held = db
    .selectFrom('transactions')
    .select('id')
    .where('wallet_id', '=', t.wallet_id)
    .where('tx_hash', '=', t.tx_hash)
    .where('log_index', '=', t.log_index)
    .where('type', '=', 'receipt');
  await db
    .updateTable('transactions')
    .set({ log_index: t.log_index })
    .where('id', '=', (eb) => eb.selectFrom(parked.as('p')).select('p.id'))
    .where((eb) => eb.not(eb.exists(held)))
    .execute();
}

/** The row with its two per-wallet numbers, drawn by the insert itself (the newest of each plus one, by index), not read first. */
function withSequences<T extends { wallet_id: number; symbol_key: string }>(row: T) {
  return {
    ...row,
    seq: sql<number>`coalesce((select seq from transactions where wallet_id = ${row.wallet_id} order by seq desc limit 1), 0) + 1`,
    symbol_seq: sql<number>`coalesce((select symbol_seq from transactions where wallet_id = ${row.wallet_id} and symbol_key = ${row.symbol_key} order by symbol_seq desc limit 1), 0) + 1`,
  };
}

/**
 * Transfer creation, under the wallet lock: inserts the signed transfer, moves the wallet's next
 * nonce to `nextNonce`, and returns the recorded row. On PostgreSQL that is one statement (the
 * insert and the nonce's upsert as data-modifying CTEs, the row answered from the insert's
 * RETURNING joined as `findRecord` joins it): two round trips fewer while the wallet is locked.
 * On SQLite, three statements in the process.
 */
export async function insertSentTransfer(trx: Executor, t: NewTx, nextNonce: number, nowMs: number): Promise<TxRecord> {
  if (dialectOf(trx).driver !== 'postgres') {
    const id = await insertTransaction(trx, t, nowMs);
    await setNextNonce(trx, t.wallet_id, nextNonce);
    return (await findRecord(trx, id!))!;
  }
  const r = await insertSentWithNonce.executeTakeFirst(trx, { ...insertRow(t, nowMs), next_nonce: nextNonce });
  return toRecord(r as RawRecord);
}

/** PostgreSQL: the insert, the nonce's upsert and the row as `findRecord` reads it, in one statement compiled once per set of columns. */
const insertSentWithNonce = prepareRow((db: Executor, { next_nonce, ...row }: InsertRow & { next_nonce: number }) =>
  db
    .with('nonce', (qc) => nonceUpsert(qc, row.wallet_id, next_nonce).returning('wallet_id'))
    .with('tx', (qc) => qc.insertInto('transactions').values(withSequences(row)).returningAll())
    .selectFrom('tx')
    .innerJoin('wallet_tokens as wt', 'wt.id', 'tx.token_id')
    .innerJoin('wallets as w', 'w.id', 'tx.wallet_id')
    .select(RECORD_COLUMNS),
);

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

/** The wallet's next nonce to hand out (null: none handed out yet); read under the wallet lock. */
export async function findNextNonce(db: Executor, walletId: number): Promise<number | null> {
  const row = await db.selectFrom('wallet_nonces').select('next_nonce').where('wallet_id', '=', walletId).executeTakeFirst();
  return row?.next_nonce ?? null;
}

/**
 * Under the wallet lock. The nonce has a table of its own (migration 010): a transfer does not
 * write the `wallets` row, so the read cache keeps the wallet's guard row and keys.
 */
function nonceUpsert(db: QueryCreator<Database>, walletId: number, nextNonce: number | null) {
  return db
    .insertInto('wallet_nonces')
    .values({ wallet_id: walletId, next_nonce: nextNonce })
    .onConflict((oc) => oc.column('wallet_id').doUpdateSet((eb) => ({ next_nonce: eb.ref('excluded.next_nonce') })));
}

const upsertNextNonce = prepare((db: Executor, walletId: number, nextNonce: number | null) => nonceUpsert(db, walletId, nextNonce));

export async function setNextNonce(db: Executor, walletId: number, nextNonce: number | null): Promise<void> {
  await upsertNextNonce.execute(db, walletId, nextNonce);
}

/** The ids of the network's wallets (a subquery). */
export function onNetwork(db: Executor, networkId: number) {
  return db.selectFrom('wallets').select('id').where('network_id', '=', networkId);
}
