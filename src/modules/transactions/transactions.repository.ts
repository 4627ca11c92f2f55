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
export type FailureReason =
  | 'reverted'
  | 'dropped'
  | 'cancelled'
  | 'rejected'
  | 'rejected_by_approver'
  | 'approval_expired'
  /** A batched payout item its token refused (the batch itself mined). */
  | 'refused';
/** The spending policy's rule that held a transfer for approval (migration 039; policies.check.ts `HoldReason`). */
export type HeldRule = 'approval_above' | 'contract_call';
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

/**
 * What a mined outgoing row cost the wallet in the native currency, as a decimal string of wei
 * from its stored ones: `fee_paid` (gas used × effective gas price, plus the L1 data fee where
 * the chain charges one: src/chain/receipt-fee.ts), else gas used × the stored price (rows
 * mined before migration 011 have no `fee_paid`). A batched payout item has neither: its
 * batch's row pays. A string, so a reader of many rows formats it without a bigint.
 */
export function storedFeePaid(r: { fee_paid: string | null; gas_used: string | null; gas_price: string | null }): string {
  return r.fee_paid ?? (BigInt(r.gas_used ?? '0') * BigInt(r.gas_price ?? '0')).toString();
}

/** A column read as stored. */
const as =
  <T>() =>
  (v: unknown): T =>
    v as T;
/** A decimal string of wei (or token base units), read as bigint. */
const wei = (v: unknown): bigint => BigInt(v as string);
const weiOrNull = (v: unknown): bigint | null => (v === null ? null : BigInt(v as string));
/** A number PostgreSQL may answer as a string (an aggregate, an int8). */
const num = (v: unknown): number => Number(v);
const numOrNull = (v: unknown): number | null => (v === null ? null : Number(v));

/**
 * The transaction row as the service reads it, defined once: each field of a `TxRecord`, the
 * column it is selected from (the row's own, `tx.`; the token's display fields and the wallet's
 * owner, joined) and how its stored value is read. `TxRecord`, `RECORD_COLUMNS` and `toRecord`
 * are derived from it; a new column read by the service is one line here (beside its migration,
 * `TransactionsTable`, and the insert when a create sets it).
 */
const FIELDS = {
  id: ['tx.id', as<number>()],
  wallet_id: ['tx.wallet_id', as<number>()],
  token_id: ['tx.token_id', as<number>()],
  type: ['tx.type', as<TxType>()],
  status: ['tx.status', as<TxStatus>()],
  amount: ['tx.amount', wei],
  fee_reserved: ['tx.fee_reserved', wei],
  from_address: ['tx.from_address', as<string>()],
  to_address: ['tx.to_address', as<string>()],
  tx_hash: ['tx.tx_hash', as<string | null>()],
  log_index: ['tx.log_index', as<number>()],
  block_number: ['tx.block_number', as<number | null>()],
  block_hash: ['tx.block_hash', as<string | null>()],
  block_timestamp: ['tx.block_timestamp', as<number | null>()],
  nonce: ['tx.nonce', as<number | null>()],
  gas: ['tx.gas', weiOrNull],
  gas_price: ['tx.gas_price', weiOrNull],
  gas_used: ['tx.gas_used', weiOrNull],
  cumulative_gas_used: ['tx.cumulative_gas_used', weiOrNull],
  receipt_status: ['tx.receipt_status', as<number | null>()],
  error: ['tx.error', as<string | null>()],
  broadcast_at: ['tx.broadcast_at', as<number | null>()],
  confirmed_at: ['tx.confirmed_at', as<number | null>()],
  failed_at: ['tx.failed_at', as<number | null>()],
  created_at: ['tx.created_at', as<number>()],
  updated_at: ['tx.updated_at', as<number>()],
  seq: ['tx.seq', as<number>()],
  symbol: ['wt.symbol', as<string>()],
  decimals: ['wt.decimals', as<number>()],
  /** The wallet's owner (for events). */
  user_id: ['w.user_id', as<number>()],
  /** How it was signed, its EIP-1559 fees, its calldata (contract calls), its L1 fee. */
  tx_kind: ['tx.tx_kind', (v: unknown): 'legacy' | 'eip1559' => (v === 'eip1559' ? 'eip1559' : 'legacy')],
  max_fee_per_gas: ['tx.max_fee_per_gas', weiOrNull],
  max_priority_fee_per_gas: ['tx.max_priority_fee_per_gas', weiOrNull],
  data: ['tx.data', as<string | null>()],
  l1_fee: ['tx.l1_fee', wei],
  /** Why it failed, what its current hash is, its sends, its earlier hashes, since when it is stuck. */
  failure_reason: ['tx.failure_reason', as<FailureReason | null>()],
  broadcast_kind: ['tx.broadcast_kind', as<BroadcastKind>()],
  broadcast_attempts: ['tx.broadcast_attempts', num],
  replaced_hashes: ['tx.replaced_hashes', (v: unknown): string[] => (v ? (v as string).split(',') : [])],
  stuck_at: ['tx.stuck_at', as<number | null>()],
  /** Why every endpoint refused its re-send (not for its fee), else null. */
  stuck_reason: ['tx.stuck_reason', as<string | null>()],
  /** The refund this transfer pays, else null. */
  refund_id: ['tx.refund_id', numOrNull],
  /** The payout it is an item of, and the item's reference. */
  payout_id: ['tx.payout_id', numOrNull],
  reference: ['tx.reference', as<string | null>()],
  /** A payout item sent in a batch: the batch's row and the item's place in it (payouts.batches.ts). */
  batch_tx_id: ['tx.batch_tx_id', numOrNull],
  batch_index: ['tx.batch_index', numOrNull],
  /** The deposit address a receipt reached (its reference in `reference`), else null (migration 035). */
  deposit_address_id: ['tx.deposit_address_id', numOrNull],
  /**
   * Why it was held for approval, kept after the decision (migration 039): the rule, and for
   * `approval_above` the threshold in base units with its token's symbol and decimals as at the
   * hold; all null for a row never held (or held before the migration).
   */
  held_rule: ['tx.held_rule', as<HeldRule | null>()],
  held_limit: ['tx.held_limit', weiOrNull],
  held_symbol: ['tx.held_symbol', as<string | null>()],
  held_decimals: ['tx.held_decimals', numOrNull],
} as const satisfies Record<string, readonly [string, (v: unknown) => unknown]>;

type Fields = typeof FIELDS;

/** A transaction with its token's display fields, as the API and the events need it. */
export type TxRecord = { -readonly [K in keyof Fields]: ReturnType<Fields[K][1]> };

/** The columns a `TxRecord` is selected from (`records`), in `FIELDS`' order. */
export const RECORD_COLUMNS = Object.values(FIELDS).map(([column]) => column) as ReadonlyArray<Fields[keyof Fields][0]>;

const READERS = Object.entries(FIELDS).map(([key, [, read]]) => [key, read] as const);

/** A row selected with `RECORD_COLUMNS` (or returning its columns), read into a `TxRecord`. */
export function toRecord(r: object): TxRecord {
  const row = r as Record<string, unknown>;
  const out: Record<string, unknown> = {};
  for (const [key, read] of READERS) out[key] = read(row[key]);
  return out as TxRecord;
}

export const big = (v: string | null): bigint | null => (v === null ? null : BigInt(v));

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
  return r ? toRecord(r) : undefined;
}

export async function findRecordForWallet(db: Executor, walletId: number, id: number): Promise<TxRecord | undefined> {
  const r = await records(db)
    .where('tx.id', '=', id)
    .where('tx.wallet_id', '=', walletId)
    .where('tx.status', '!=', ORPHANED)
    .executeTakeFirst();
  return r ? toRecord(r) : undefined;
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

/**
 * A row to insert, in the record's terms (its types from `FIELDS`): what every insert sets, what
 * an outgoing row may set (absent: legacy, no calldata, no L1 fee, the database's defaults), and
 * the columns no read selects. `tx_hash` is null only for a transfer held for approval (nothing
 * signed); `broadcast_attempts` counts sends already made (`claimAttempt`): a new transfer about
 * to be sent by its create counts its first here.
 */
export type NewTx = Pick<
  TxRecord,
  | 'wallet_id'
  | 'token_id'
  | 'symbol'
  | 'type'
  | 'status'
  | 'amount'
  | 'fee_reserved'
  | 'from_address'
  | 'to_address'
  | 'tx_hash'
  | 'log_index'
  | 'block_number'
  | 'block_hash'
  | 'block_timestamp'
  | 'nonce'
  | 'gas'
  | 'gas_price'
  | 'gas_used'
  | 'cumulative_gas_used'
  | 'receipt_status'
  | 'confirmed_at'
> &
  Partial<
    Pick<
      TxRecord,
      | 'tx_kind'
      | 'max_fee_per_gas'
      | 'max_priority_fee_per_gas'
      | 'data'
      | 'l1_fee'
      | 'broadcast_attempts'
      | 'refund_id'
      | 'payout_id'
      | 'reference'
      | 'batch_tx_id'
      | 'batch_index'
      | 'held_rule'
      | 'held_limit'
      | 'held_symbol'
      | 'held_decimals'
    >
  > & {
    /** PostgreSQL: an id drawn beforehand (`drawTransactionId`); absent, the insert draws it. */
    id?: number;
    raw_tx: string | null;
    /** A transfer held for approval: the create's fee choice, JSON. */
    requested_fees?: string | null;
    /** A call to one of the wallet's token contracts: the token, the amount policed, what it takes from the balance. */
    call_token_id?: number | null;
    call_amount?: bigint | null;
    call_spend?: bigint | null;
  };

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
    ...(t.batch_tx_id == null ? {} : { batch_tx_id: t.batch_tx_id, batch_index: t.batch_index ?? null }),
    ...(t.held_rule == null
      ? {}
      : {
          held_rule: t.held_rule,
          held_limit: str(t.held_limit ?? null),
          held_symbol: t.held_symbol ?? null,
          held_decimals: t.held_decimals ?? null,
        }),
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
  return toRecord(r!);
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

/** Every create reads it: compiled once (src/db/prepared.ts). */
const nextNonceRead = prepare((db: Executor, walletId: number) =>
  db.selectFrom('wallet_nonces').select('next_nonce').where('wallet_id', '=', walletId),
);

/**
 * The wallet's next nonce to hand out (null: none handed out yet); read under the wallet lock, by
 * a statement issued after the lock statement (on PostgreSQL one that waited for the lock reads
 * other rows as they were before the commit it waited for: `lockWalletForCreate`).
 */
export async function findNextNonce(db: Executor, walletId: number): Promise<number | null> {
  return (await nextNonceRead.executeTakeFirst(db, walletId))?.next_nonce ?? null;
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
