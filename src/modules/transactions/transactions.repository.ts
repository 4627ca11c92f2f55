/**
 * transactions rows. Amounts are decimal strings in the database and bigint here. Read paths
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
import { unsentItemReservations } from '../payouts/payouts.repository.js';

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

const big = (v: string | null): bigint | null => (v === null ? null : BigInt(v));

type RawRecord = Omit<
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

function records(db: Executor) {
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

// ---------------------------------------------------------------------------------------------
// Writes under the wallet lock.
// ---------------------------------------------------------------------------------------------

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

const walletLockWithNonce = prepare((db: Executor, walletId: number) =>
  dialectOf(db).forUpdate(
    db
      .selectFrom('wallets as w')
      .select((eb) => eb.selectFrom('wallet_nonces as n').select('n.next_nonce').whereRef('n.wallet_id', '=', 'w.id').as('next_nonce'))
      .where('w.id', '=', walletId),
  ),
);

/**
 * Transfer creation: takes the wallet's row lock (the same lock as `lockWallet`: PostgreSQL
 * `FOR UPDATE` on the `wallets` row; SQLite's write lock is already held by BEGIN IMMEDIATE) and
 * reads its next nonce in the same statement. Undefined when the wallet does not exist. On
 * PostgreSQL a statement that waited for the lock reads `next_nonce` as it was when it started
 * (READ COMMITTED re-reads only the locked row): possibly before the commit it waited for. The
 * allocation is therefore checked against the rows (`OutgoingState.usedNonces`), read after.
 */
export async function lockWalletForCreate(trx: Executor, walletId: number): Promise<{ nextNonce: number | null } | undefined> {
  const row = await walletLockWithNonce.executeTakeFirst(trx, walletId);
  return row === undefined ? undefined : { nextNonce: row.next_nonce ?? null };
}

/**
 * PostgreSQL: draws the id the next transfer row will have, from the table's own sequence. Issued
 * right behind the wallet's lock statement (src/db/pipelined.ts), it runs once the lock is
 * granted, so a wallet's ids still follow the order its creates commit in; with the id known
 * before the insert is answered, the create sends its insert, its event (whose payload carries
 * the id) and the commit in one round trip (transactions.service.ts, `record`). A create that
 * does not insert after all (refused under the lock, or held for approval) leaves the id unused:
 * a gap, as a rolled-back insert leaves. SQLite: undefined (the insert draws it; there is no
 * round trip to save).
 */
export async function drawTransactionId(trx: Executor): Promise<number | undefined> {
  return (await drawTransactionIds(trx, 1))?.[0];
}

/**
 * PostgreSQL: `count` ids for the transfers a batch of creates will insert, drawn behind the
 * wallet's lock statement as `drawTransactionId` draws one, in increasing order. SQLite: undefined.
 */
export async function drawTransactionIds(trx: Executor, count: number): Promise<number[] | undefined> {
  if (dialectOf(trx).driver !== 'postgres') return undefined;
  const rows = await drawIds.execute(trx, count);
  return rows.map((r) => Number(r.id)).sort((a, b) => a - b);
}

const drawIds = prepare((db: Executor, count: number) =>
  db.selectFrom(sql<{ n: number }>`generate_series(1, ${count}::int)`.as('g')).select(sql<string>`nextval('transactions_id_seq')`.as('id')),
);

/** What transfer creation needs of the wallet's outgoing rows, read in one statement under the wallet lock. */
export interface OutgoingState {
  /** As `reservations(db, walletId, minedNonce)`. */
  reservations: Reservation[];
  /** As `countPendingOutgoing`. */
  pendingCount: number;
  /**
   * Nonces a row of the wallet holds or used: every pending row's, and every other row's from
   * `minedNonce` up that did not fail unmined (those gave theirs back). The allocation skips
   * them whatever `next_nonce` said: on PostgreSQL the lock statement reads `next_nonce` in the
   * snapshot of its start, so a create that waited for the lock sees the value from before the
   * holder's commit; the rows, read by a later statement, are current.
   */
  usedNonces: number[];
}

/** A transfer held for approval: it holds no nonce, and reserves its amount and maximum fee until it is approved, rejected or expires. */
export const AWAITING = 'awaiting_approval';

/**
 * `reservations`, `countPendingOutgoing` and the used nonces in one query: the outgoing rows that
 * are pending, awaiting approval, or that reserve against a balance read at `minedNonce` (at
 * most the wallet's unconfirmed transfers, bounded by MAX_PENDING_PER_WALLET, those awaiting
 * approval, and those the watcher has not settled yet), and the payout items not sent yet
 * (payouts.repository.ts `unsentItemReservations`, shaped as held rows), split here with the
 * same conditions.
 */
// Index ranges, not one OR (which SQLite answers by reading every outgoing row the wallet
// ever had): the pending and awaiting rows by (wallet_id, status), the rest from `minedNonce` up
// by (wallet_id, type, nonce). Compiled once (src/db/prepared.ts): every create runs it.
const outgoingRows = prepare((db: Executor, walletId: number, minedNonce: number) => {
  const outgoing = () =>
    db
      .selectFrom('transactions')
      .select(['id', 'token_id', 'amount', 'fee_reserved', 'nonce', 'status', 'block_number', 'call_token_id', 'call_spend'])
      .where('wallet_id', '=', walletId)
      .where('type', 'in', OUTGOING_TYPES);
  return outgoing()
    .where('status', 'in', ['pending', AWAITING])
    .unionAll(
      outgoing()
        .where('nonce', '>=', minedNonce)
        .where('status', 'not in', ['pending', AWAITING])
        .where((eb) => eb.not(eb.and([eb('status', '=', 'failed'), eb('block_number', 'is', null)]))),
    )
    .unionAll(unsentItemReservations(db, walletId));
});

/** Does this outgoing row reserve against a balance read at `minedNonce`? (One rule for both readers below.) */
function reserves(r: { nonce: number | string | null; status: string; block_number: number | null }, minedNonce: number): boolean {
  if (r.status === AWAITING) return true;
  return r.nonce !== null && Number(r.nonce) >= minedNonce && !(r.status === 'failed' && r.block_number === null);
}

/** `excludeId`: a row awaiting approval being approved, whose own reservation is what it spends. */
export async function outgoingState(db: Executor, walletId: number, minedNonce: number, excludeId?: number): Promise<OutgoingState> {
  return outgoingStateOf(await outgoingRowsFrom(db, walletId, minedNonce), minedNonce, excludeId);
}

/** The wallet's outgoing rows `outgoingState` reads, for any `minedNonce` at or above this one (a batch of creates reads them once). */
export type OutgoingRows = Awaited<ReturnType<typeof outgoingRows.execute>>;

export function outgoingRowsFrom(db: Executor, walletId: number, minedNonce: number): Promise<OutgoingRows> {
  return outgoingRows.execute(db, walletId, minedNonce);
}

/**
 * `outgoingState` of rows read at a mined nonce at or below `minedNonce`: the rows the lower
 * bound adds (not pending, not awaiting, nonce below `minedNonce`) neither reserve, nor count as
 * pending, nor hold a nonce, so the state is the one a read at `minedNonce` gives.
 */
export function outgoingStateOf(rows: OutgoingRows, minedNonce: number, excludeId?: number): OutgoingState {
  const state: OutgoingState = { reservations: [], pendingCount: 0, usedNonces: [] };
  for (const r of rows) {
    if (r.id === excludeId) continue;
    if (r.status === 'pending') state.pendingCount += 1;
    const reserving = reserves(r, minedNonce);
    if (r.nonce !== null && (r.status === 'pending' || reserving)) state.usedNonces.push(Number(r.nonce));
    if (reserving) state.reservations.push(...reservationsOf(r));
  }
  return state;
}

/** What a reserving row takes: its amount and maximum fee, and a token call's spend of its token (migration 029). */
function reservationsOf(r: {
  token_id: number;
  amount: string;
  fee_reserved: string;
  call_token_id: number | null;
  call_spend: string | null;
}): Reservation[] {
  const own = { token_id: r.token_id, amount: BigInt(r.amount), fee_reserved: BigInt(r.fee_reserved) };
  if (r.call_token_id === null || r.call_spend === null || BigInt(r.call_spend) === 0n) return [own];
  return [own, { token_id: Number(r.call_token_id), amount: BigInt(r.call_spend), fee_reserved: 0n }];
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
 * mined took nothing and reserve nothing (their nonce may have been handed out again). A
 * transfer awaiting approval has no nonce and reserves until it is decided, and so does each
 * unsent item of a payout awaiting approval or being sent.
 */
const reservationRows = prepare((db: Executor, walletId: number, minedNonce: number) =>
  db
    .selectFrom('transactions')
    .select(['id', 'token_id', 'amount', 'fee_reserved', 'nonce', 'status', 'block_number', 'call_token_id', 'call_spend'])
    .where('wallet_id', '=', walletId)
    .where('type', 'in', OUTGOING_TYPES)
    .where('nonce', '>=', minedNonce)
    .unionAll(
      db
        .selectFrom('transactions')
        .select(['id', 'token_id', 'amount', 'fee_reserved', 'nonce', 'status', 'block_number', 'call_token_id', 'call_spend'])
        .where('wallet_id', '=', walletId)
        .where('type', 'in', OUTGOING_TYPES)
        .where('status', '=', AWAITING),
    )
    .unionAll(unsentItemReservations(db, walletId)),
);

export async function reservations(db: Executor, walletId: number, minedNonce: number, excludeId?: number): Promise<Reservation[]> {
  const rows = await reservationRows.execute(db, walletId, minedNonce);
  return rows.filter((r) => r.id !== excludeId && reserves(r, minedNonce)).flatMap(reservationsOf);
}

/** Nonces ≥ `from` held by the wallet's pending outgoing transactions. */
export async function heldNonces(db: Executor, walletId: number, from: number): Promise<Set<number>> {
  const rows = await db
    .selectFrom('transactions')
    .select('nonce')
    .where('wallet_id', '=', walletId)
    .where('type', 'in', OUTGOING_TYPES)
    .where('status', '=', 'pending')
    .where('nonce', '>=', from)
    .execute();
  return new Set(rows.map((r) => Number(r.nonce)));
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

const str = (v: bigint | null): string | null => (v === null ? null : v.toString());

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

// ---------------------------------------------------------------------------------------------
// State changes. Each is conditional on the state it leaves (`status = 'pending'`), so two
// actors racing on one row (the create route's broadcast and the watcher) change it once.
// ---------------------------------------------------------------------------------------------

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
  return r ? toRecord(r as RawRecord) : undefined;
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

function onNetwork(db: Executor, networkId: number) {
  return db.selectFrom('wallets').select('id').where('network_id', '=', networkId);
}

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
  return rows.map((r) => toRecord(r as RawRecord));
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

// ---------------------------------------------------------------------------------------------
// Finality (migration 006): send attempts, the fair re-send queue, replacements, stuck rows.
// ---------------------------------------------------------------------------------------------

/**
 * Counts a send attempt of the version `txHash` before it is made; true when it is the first
 * (nothing was ever sent anywhere); 'stale' (nothing counted, nothing to send) when the row is no
 * longer pending or a speed-up or cancel has replaced that version since it was read.
 */
export async function claimAttempt(db: Executor, id: number, txHash: string, nowMs: number): Promise<boolean | 'stale'> {
  const r = await db
    .updateTable('transactions')
    .set({ broadcast_attempts: sql`broadcast_attempts + 1`, updated_at: nowMs })
    .where('id', '=', id)
    .where('tx_hash', '=', txHash)
    .where('status', '=', 'pending')
    .returning('broadcast_attempts')
    .executeTakeFirst();
  if (r === undefined) return 'stale';
  return Number(r.broadcast_attempts) === 1;
}

export interface QueuedTransfer {
  id: number;
  wallet_id: number;
  from_address: string;
  tx_hash: string;
  nonce: number;
  raw_tx: string;
  check_count: number;
}

/**
 * The re-send queue: pending outgoing rows not seen in a block that are due a check (`all`:
 * every one, the start-up pass). Round robin over wallets: each wallet's rows are ranked by
 * nonce, at most `perWallet` of them, and the first of every wallet comes before the second of
 * any, so one wallet with a thousand stuck rows takes `perWallet` slots of a pass, not all.
 * A row never checked is due once older than `graceBeforeMs` (its create is still sending).
 */
export async function listResendQueue(
  db: Executor,
  networkId: number,
  o: { nowMs: number; graceBeforeMs: number; all: boolean; perWallet: number; limit: number },
): Promise<QueuedTransfer[]> {
  const rows = o.all
    ? await resendAll.execute(db, networkId, o.perWallet, o.limit)
    : await resendDue.execute(db, networkId, o.perWallet, o.limit, o.graceBeforeMs, o.nowMs);
  return rows.map((r) => ({ ...r, tx_hash: r.tx_hash!, nonce: Number(r.nonce), raw_tx: r.raw_tx!, check_count: Number(r.check_count) }));
}

/** `listResendQueue`'s query: every row (`due` absent), or those due a check by `due`'s times. */
function resendQueue(db: Executor, networkId: number, perWallet: number, limit: number, due?: { graceBeforeMs: number; nowMs: number }) {
  let q = db
    .selectFrom('transactions')
    .select(['id', 'wallet_id', 'from_address', 'tx_hash', 'nonce', 'raw_tx', 'check_count'])
    .select(sql<number>`row_number() over (partition by wallet_id order by nonce, id)`.as('rank'))
    .where('wallet_id', 'in', onNetwork(db, networkId))
    .where('type', 'in', OUTGOING_TYPES)
    .where('status', '=', 'pending')
    .where('block_number', 'is', null)
    .where('raw_tx', 'is not', null);
  if (due) {
    q = q.where((eb) =>
      eb.or([eb.and([eb('next_check_at', 'is', null), eb('created_at', '<', due.graceBeforeMs)]), eb('next_check_at', '<=', due.nowMs)]),
    );
  }
  return db
    .selectFrom(q.as('q'))
    .selectAll()
    .where('rank', '<=', perWallet)
    .orderBy('rank', 'asc')
    .orderBy('wallet_id', 'asc')
    .limit(limit);
}

const resendAll = prepare((db: Executor, networkId: number, perWallet: number, limit: number) =>
  resendQueue(db, networkId, perWallet, limit),
);

const resendDue = prepare((db: Executor, networkId: number, perWallet: number, limit: number, graceBeforeMs: number, nowMs: number) =>
  resendQueue(db, networkId, perWallet, limit, { graceBeforeMs, nowMs }),
);

/**
 * Receipts a reorg put back to pending that no block has shown again, due a check (the
 * dropped check: `recheckReorgedReceipts`), oldest first.
 */
export async function listReorgedReceipts(
  db: Executor,
  networkId: number,
  nowMs: number,
  limit: number,
): Promise<Array<{ id: number; wallet_id: number; from_address: string; tx_hash: string; nonce: number; check_count: number }>> {
  const rows = await reorgedReceipts.execute(db, networkId, nowMs, limit);
  return rows.map((r) => ({ ...r, tx_hash: r.tx_hash!, nonce: Number(r.nonce), check_count: Number(r.check_count) }));
}

const reorgedReceipts = prepare((db: Executor, networkId: number, nowMs: number, limit: number) =>
  db
    .selectFrom('transactions')
    .select(['id', 'wallet_id', 'from_address', 'tx_hash', 'nonce', 'check_count'])
    .where('wallet_id', 'in', onNetwork(db, networkId))
    .where('type', '=', 'receipt')
    .where('status', '=', 'pending')
    .where('block_number', 'is', null)
    .where('nonce', 'is not', null)
    .where((eb) => eb.or([eb('next_check_at', 'is', null), eb('next_check_at', '<=', nowMs)]))
    .orderBy('id', 'asc')
    .limit(limit),
);

/** The next check of a queued row, after this one (backoff chosen by the caller). */
export async function scheduleCheck(db: Executor, id: number, nextAtMs: number, nowMs: number): Promise<void> {
  await db
    .updateTable('transactions')
    .set({ next_check_at: nextAtMs, check_count: sql`check_count + 1`, updated_at: nowMs })
    .where('id', '=', id)
    .where('status', '=', 'pending')
    .execute();
}

/**
 * Outgoing rows not seen in a block with any of these hashes, current or replaced, each with
 * the hash found: pending ones, and failed ones never mined (a node refused them, yet here
 * they are in a block).
 */
export async function findUnminedByAnyHash(
  db: Executor,
  networkId: number,
  hashes: string[],
): Promise<Array<{ rec: TxRecord; hash: string }>> {
  if (hashes.length === 0) return [];
  const unmined = () =>
    records(db)
      .where('tx.wallet_id', 'in', onNetwork(db, networkId))
      .where('tx.type', 'in', OUTGOING_TYPES)
      .where('tx.status', 'in', ['pending', 'failed'])
      .where('tx.block_number', 'is', null);
  // One statement (it runs for every block with a transfer of ours): the rows whose current
  // hash is one of these, then the rows one of whose earlier versions has one (one row a version).
  const rows = await unmined()
    .select('tx.tx_hash as found_hash')
    .where('tx.tx_hash', 'in', hashes)
    .unionAll(
      unmined()
        .innerJoin('transaction_broadcasts as tb', 'tb.transaction_id', 'tx.id')
        .select('tb.tx_hash as found_hash')
        .where('tb.tx_hash', 'in', hashes)
        .where((eb) => eb.or([eb('tx.tx_hash', 'is', null), eb('tx.tx_hash', 'not in', hashes)])),
    )
    .execute();
  return rows.map(({ found_hash, ...r }) => ({ rec: toRecord(r as RawRecord), hash: found_hash! }));
}

export interface SignedVersion {
  tx_hash: string;
  raw_tx: string;
  kind: BroadcastKind;
  gas: bigint;
  /** The max fee per gas (legacy: the gas price). */
  gas_price: bigint;
  tx_kind: 'legacy' | 'eip1559';
  max_priority_fee_per_gas: bigint | null;
}

/** Every signed version of a row, oldest first (a row never replaced: just its current one). */
export async function listVersions(db: Executor, id: number): Promise<SignedVersion[]> {
  const rows = await db
    .selectFrom('transaction_broadcasts')
    .select(['tx_hash', 'raw_tx', 'kind', 'gas', 'gas_price', 'tx_kind', 'max_priority_fee_per_gas'])
    .where('transaction_id', '=', id)
    .orderBy('id', 'asc')
    .execute();
  const kindOf = (k: string) => (k === 'eip1559' ? 'eip1559' : 'legacy');
  if (rows.length > 0) {
    return rows.map((r) => ({
      ...r,
      kind: r.kind as BroadcastKind,
      gas: BigInt(r.gas),
      gas_price: BigInt(r.gas_price),
      tx_kind: kindOf(r.tx_kind),
      max_priority_fee_per_gas: big(r.max_priority_fee_per_gas),
    }));
  }
  const cur = await db
    .selectFrom('transactions')
    .select(['tx_hash', 'raw_tx', 'broadcast_kind', 'gas', 'gas_price', 'tx_kind', 'max_priority_fee_per_gas'])
    .where('id', '=', id)
    .executeTakeFirst();
  if (!cur?.tx_hash || !cur.raw_tx) return [];
  return [
    {
      tx_hash: cur.tx_hash,
      raw_tx: cur.raw_tx,
      kind: cur.broadcast_kind as BroadcastKind,
      gas: BigInt(cur.gas ?? 0),
      gas_price: BigInt(cur.gas_price ?? 0),
      tx_kind: kindOf(cur.tx_kind),
      max_priority_fee_per_gas: big(cur.max_priority_fee_per_gas),
    },
  ];
}

/** Makes `v` the row's current version: its hash, bytes, kind, gas and price; the others become its replaced hashes. */
async function setCurrent(
  db: Executor,
  id: number,
  v: SignedVersion,
  others: string[],
  extra: { fee_reserved?: bigint },
  nowMs: number,
): Promise<void> {
  await db
    .updateTable('transactions')
    .set({
      tx_hash: v.tx_hash,
      raw_tx: v.raw_tx,
      broadcast_kind: v.kind,
      gas: v.gas.toString(),
      gas_price: v.gas_price.toString(),
      tx_kind: v.tx_kind,
      max_fee_per_gas: v.tx_kind === 'eip1559' ? v.gas_price.toString() : null,
      max_priority_fee_per_gas: str(v.max_priority_fee_per_gas),
      replaced_hashes: others.length > 0 ? others.join(',') : null,
      ...(extra.fee_reserved !== undefined ? { fee_reserved: extra.fee_reserved.toString() } : {}),
      updated_at: nowMs,
    })
    .where('id', '=', id)
    .execute();
}

/**
 * Records a replacement (caller holds the wallet lock): the new version is stored next to the
 * earlier ones and becomes current; the reservation becomes `feeReserved` (the highest maximum
 * fee of all versions: any of them may be the one that mines). Its check schedule restarts.
 */
export async function recordReplacement(db: Executor, id: number, next: SignedVersion, feeReserved: bigint, nowMs: number): Promise<void> {
  const versions = await listVersions(db, id);
  const hasRows = await db.selectFrom('transaction_broadcasts').select('id').where('transaction_id', '=', id).limit(1).executeTakeFirst();
  const toStore = hasRows ? [next] : [...versions, next];
  for (const v of toStore) {
    await db
      .insertInto('transaction_broadcasts')
      .values({
        transaction_id: id,
        tx_hash: v.tx_hash,
        raw_tx: v.raw_tx,
        kind: v.kind,
        gas: v.gas.toString(),
        gas_price: v.gas_price.toString(),
        tx_kind: v.tx_kind,
        max_priority_fee_per_gas: str(v.max_priority_fee_per_gas),
        created_at: nowMs,
      })
      .execute();
  }
  const others = [...versions.map((v) => v.tx_hash)].filter((h) => h !== next.tx_hash);
  await setCurrent(db, id, next, others, { fee_reserved: feeReserved }, nowMs);
  await db
    .updateTable('transactions')
    .set({ next_check_at: null, check_count: 0, broadcast_at: null, stuck_reason: null })
    .where('id', '=', id)
    .execute();
}

/**
 * Makes the version with `hash` current again (it mined, or a newer one was refused and
 * dropped from the versions). `forget`: the current version is removed (it was never accepted).
 */
export async function adoptVersion(
  db: Executor,
  id: number,
  hash: string,
  nowMs: number,
  opts: { forget?: string } = {},
): Promise<boolean> {
  if (opts.forget)
    await db.deleteFrom('transaction_broadcasts').where('transaction_id', '=', id).where('tx_hash', '=', opts.forget).execute();
  const versions = await listVersions(db, id);
  const v = versions.find((x) => x.tx_hash === hash);
  if (!v) return false;
  await setCurrent(
    db,
    id,
    v,
    versions.map((x) => x.tx_hash).filter((h) => h !== hash),
    {},
    nowMs,
  );
  return true;
}

/**
 * A replacement the node refused (it was never accepted): the version `forget` is removed, the
 * one with hash `restore` is current again, the reservation back to `feeReserved` (caller holds
 * the wallet lock). Nothing happens if the row moved on meanwhile (no longer pending or unmined).
 */
export async function undoReplacement(
  db: Executor,
  id: number,
  o: { restore: string; forget: string; feeReserved: bigint },
  nowMs: number,
): Promise<void> {
  const row = await db.selectFrom('transactions').select(['status', 'block_number', 'tx_hash']).where('id', '=', id).executeTakeFirst();
  if (!row || row.status !== 'pending' || row.block_number !== null || row.tx_hash !== o.forget) return;
  if (!(await adoptVersion(db, id, o.restore, nowMs, { forget: o.forget }))) return;
  await db.updateTable('transactions').set({ fee_reserved: o.feeReserved.toString() }).where('id', '=', id).execute();
}

/** Outgoing rows of the wallet not final yet (the MAX_PENDING_PER_WALLET cap; caller holds the wallet lock). */
export async function countPendingOutgoing(db: Executor, walletId: number): Promise<number> {
  const r = await db
    .selectFrom('transactions')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where('wallet_id', '=', walletId)
    .where('type', 'in', OUTGOING_TYPES)
    .where('status', '=', 'pending')
    .executeTakeFirstOrThrow();
  return Number(r.n);
}

/**
 * Marks a pending row stuck at once with the node's words (every endpoint refused its re-send
 * for a reason other than its fee). True only the first time (the reason was null): its event is
 * written once.
 */
export async function markStuckRefused(db: Executor, id: number, reason: string, nowMs: number): Promise<boolean> {
  const r = await db
    .updateTable('transactions')
    .set((eb) => ({ stuck_at: eb.fn.coalesce('stuck_at', eb.val(nowMs)), stuck_reason: reason.slice(0, 300), updated_at: nowMs }))
    .where('id', '=', id)
    .where('status', '=', 'pending')
    .where('stuck_reason', 'is', null)
    .executeTakeFirst();
  return Number(r.numUpdatedRows) > 0;
}

/** Marks the network's outgoing rows pending since before `beforeMs` as stuck; returns those newly marked (logged once). */
export async function markStuck(
  db: Executor,
  networkId: number,
  beforeMs: number,
  nowMs: number,
): Promise<Array<{ id: number; wallet_id: number; tx_hash: string | null; nonce: number | null }>> {
  return stuckRows.execute(db, networkId, beforeMs, nowMs);
}

const stuckRows = prepare((db: Executor, networkId: number, beforeMs: number, nowMs: number) =>
  db
    .updateTable('transactions')
    .set({ stuck_at: nowMs })
    .where('wallet_id', 'in', onNetwork(db, networkId))
    .where('type', 'in', OUTGOING_TYPES)
    .where('status', '=', 'pending')
    .where('stuck_at', 'is', null)
    .where('created_at', '<', beforeMs)
    .returning(['id', 'wallet_id', 'tx_hash', 'nonce']),
);
