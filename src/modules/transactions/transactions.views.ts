/** Transactions as the API shows them, and the data of the transaction.* events. */
import { checksummedAddress } from '../../lib/address.js';
import type { WalletTokenRow } from '../../db/types.js';
import { formatStoredUnits18, formatUnits18, toNumber18 } from '../../lib/money.js';
import { formatDateTime, formatDateTimeOrNull, unixSeconds } from '../../lib/time.js';
import { tokenView } from '../tokens/tokens.views.js';
import { isInternalReceipt, type TxRecord } from './transactions.repository.js';
import type { ListRow } from './transactions.list.repository.js';
import type { FeeLevel, Fees } from '../../chain/fees.js';

/**
 * `held_by` of a Transaction object: the rule that held it for approval, kept after the decision
 * (migration 039); for `approval_above` its threshold (formatted at its token's decimals) and token.
 */
export function heldByView(t: Pick<TxRecord, 'held_rule' | 'held_limit' | 'held_symbol' | 'held_decimals'>) {
  if (t.held_rule === null) return null;
  return { rule: t.held_rule, limit: dec(t.held_limit, t.held_decimals ?? 0), token: t.held_symbol };
}

const dec = (v: bigint | null, decimals: number): string | null => (v === null ? null : formatUnits18(v, decimals));
const num = (v: bigint | null, decimals: number): number | null => (v === null ? null : toNumber18(v, decimals));
const receiptStatus = (v: number | null): boolean | null => (v === null ? null : v === 1);

/** Why it failed, its earlier hashes, whether it is stuck (every Transaction object). */
function finalityFields(t: TxRecord) {
  return {
    failure_reason: t.status === 'failed' ? t.failure_reason : null,
    replaced_hashes: t.replaced_hashes,
    stuck: t.status === 'pending' && t.stuck_at !== null,
    stuck_reason: t.status === 'pending' ? t.stuck_reason : null,
  };
}

/**
 * A Transaction object from the full record (the detail, speed-up and cancel responses):
 * decimals as 18-place strings. The list builds the same object from its own rows
 * (`transactionListItem`). The fields are written out rather than spread from `finalityFields`
 * (an object spread followed by twenty properties took V8's slow path, several times slower).
 */
export function transactionView(t: TxRecord) {
  const { failure_reason, replaced_hashes, stuck, stuck_reason } = finalityFields(t);
  return {
    failure_reason,
    replaced_hashes,
    stuck,
    stuck_reason,
    id: t.id,
    amount: formatUnits18(t.amount, t.decimals),
    type: t.type,
    data: t.data,
    status: t.status,
    tx_hash: t.tx_hash,
    block_number: t.block_number,
    block_timestamp: formatDateTimeOrNull(t.block_timestamp),
    block_hash: t.block_hash,
    nonce: t.nonce,
    gas: dec(t.gas, 0),
    gas_price: dec(t.gas_price, 18),
    gas_used: dec(t.gas_used, 0),
    cumulative_gas_used: dec(t.cumulative_gas_used, 0),
    receipt_status: receiptStatus(t.receipt_status),
    symbol: t.symbol,
    refund_id: t.refund_id,
    payout_id: t.payout_id,
    reference: t.reference,
    batch_index: t.batch_index,
    deposit_address_id: t.deposit_address_id,
    created_at: formatDateTime(t.created_at),
    updated_at: formatDateTime(t.updated_at),
    internal: isInternalReceipt(t),
    held_by: heldByView(t),
    from: checksummedAddress(t.from_address),
    to: checksummedAddress(t.to_address),
  };
}

const stored = (v: string | null, decimals: number): string | null => (v === null ? null : formatStoredUnits18(v, decimals));

/**
 * A list item from a list row (transactions.list.repository.ts): the same object as
 * `transactionView` of the full record, field for field (a test compares the two over HTTP), built
 * for up to 1,000 rows a request: amounts formatted from the stored strings (no bigint), dates
 * by `formatDateTime`'s integer arithmetic, one object literal with no spread. The response
 * schema (fast-json-stringify) serialises it.
 */
export function transactionListItem(r: ListRow) {
  return {
    id: r.id,
    amount: formatStoredUnits18(r.amount, r.decimals),
    type: r.type,
    status: r.status,
    tx_hash: r.tx_hash,
    block_number: r.block_number,
    failure_reason: r.status === 'failed' ? r.failure_reason : null,
    replaced_hashes: r.replaced_hashes ? r.replaced_hashes.split(',') : [],
    stuck: r.status === 'pending' && r.stuck_at !== null,
    stuck_reason: r.status === 'pending' ? r.stuck_reason : null,
    data: r.data,
    block_timestamp: r.block_timestamp === null ? null : formatDateTime(r.block_timestamp),
    block_hash: r.block_hash,
    nonce: r.nonce,
    gas: stored(r.gas, 0),
    gas_price: stored(r.gas_price, 18),
    gas_used: stored(r.gas_used, 0),
    cumulative_gas_used: stored(r.cumulative_gas_used, 0),
    receipt_status: receiptStatus(r.receipt_status),
    symbol: r.symbol,
    refund_id: r.refund_id,
    payout_id: r.payout_id,
    reference: r.reference,
    batch_index: r.batch_index,
    deposit_address_id: r.deposit_address_id ?? null,
    created_at: formatDateTime(r.created_at),
    updated_at: formatDateTime(r.updated_at),
    internal: isInternalReceipt(r),
    held_by: r.held_rule === null ? null : { rule: r.held_rule, limit: stored(r.held_limit, r.held_decimals ?? 0), token: r.held_symbol },
    from: checksummedAddress(r.from_address),
    to: checksummedAddress(r.to_address),
  };
}

export function transactionDetailView(t: TxRecord, token: WalletTokenRow) {
  return { ...transactionView(t), wallet_token: tokenView(token) };
}

/** The creation response: gas fields as JSON numbers, block_timestamp the Unix submission time. */
export function createdView(t: TxRecord) {
  return {
    ...finalityFields(t),
    id: t.id,
    amount: formatUnits18(t.amount, t.decimals),
    type: t.type,
    data: t.data,
    status: t.status,
    tx_hash: t.tx_hash,
    block_number: t.block_number,
    block_timestamp: unixSeconds(t.block_timestamp ?? t.created_at),
    block_hash: t.block_hash,
    nonce: t.nonce,
    gas: num(t.gas, 0) ?? 0,
    gas_price: num(t.gas_price, 18) ?? 0,
    gas_used: num(t.gas_used, 0),
    cumulative_gas_used: num(t.cumulative_gas_used, 0),
    receipt_status: receiptStatus(t.receipt_status),
    symbol: t.symbol,
    refund_id: t.refund_id,
    payout_id: t.payout_id,
    reference: t.reference,
    batch_index: t.batch_index,
    created_at: formatDateTime(t.created_at),
    updated_at: formatDateTime(t.updated_at),
    held_by: heldByView(t),
    from: checksummedAddress(t.from_address),
    to: checksummedAddress(t.to_address),
  };
}

export type TxEventName =
  | 'transaction.created'
  | 'transaction.confirmed'
  | 'transaction.failed'
  | 'transaction.reorged'
  | 'transaction.approval_required'
  | 'transaction.stuck';

const EVENT_TIME_FIELD: Record<TxEventName, string> = {
  'transaction.created': 'created_at',
  'transaction.approval_required': 'created_at',
  'transaction.confirmed': 'confirmed_at',
  'transaction.failed': 'failed_at',
  'transaction.reorged': 'reorged_at',
  'transaction.stuck': 'created_at',
};

/** What a transfer's event shows of its row. */
export type TxEventFields = Pick<
  TxRecord,
  | 'id'
  | 'wallet_id'
  | 'amount'
  | 'decimals'
  | 'symbol'
  | 'tx_hash'
  | 'block_number'
  | 'status'
  | 'type'
  | 'failure_reason'
  | 'refund_id'
  | 'payout_id'
  | 'reference'
> & { stuck_reason?: string | null; deposit_address_id?: number | null };

/**
 * `data` of a transaction.* event (docs/transactions.md, "Events"). For
 * `transaction.reorged` the caller passes the row as it was with `status: 'pending'`, so
 * `block_number` is the removed block's.
 */

export function transactionEventPayload(t: TxEventFields, name: TxEventName, atMs: number) {
  const at = EVENT_TIME_FIELD[name];
  return {
    transaction_id: t.id,
    wallet_id: t.wallet_id,
    amount: formatUnits18(t.amount, t.decimals),
    token: t.symbol,
    tx_hash: t.tx_hash,
    block_number: t.block_number,
    status: t.status,
    type: t.type,
    ...(name === 'transaction.failed' ? { failure_reason: t.failure_reason } : {}),
    ...(name === 'transaction.stuck' ? { stuck_reason: t.stuck_reason } : {}),
    ...(t.refund_id !== null ? { refund_id: t.refund_id } : {}),
    ...(t.payout_id !== null ? { payout_id: t.payout_id, reference: t.reference } : {}),
    ...(t.deposit_address_id != null ? { deposit_address_id: t.deposit_address_id, reference: t.reference } : {}),
    [at]: formatDateTime(atMs),
  };
}

/** What a transfer would cost in fees at each level (the fee preview). */
export interface FeePreview {
  /** Next block's base fee (wei per gas); null on a legacy network. */
  baseFee: bigint | null;
  gas: bigint;
  l1Fee: bigint;
  levels: Record<FeeLevel, { fees: Fees; maxFee: bigint }>;
}

/** The fee preview: decimals as 18-place strings (fees per gas unit and totals in the native currency, gas in units). */
export function feePreviewView(p: FeePreview) {
  const level = (l: FeePreview['levels']['low']) => ({
    max_fee_per_gas: formatUnits18(l.fees.maxFeePerGas, 18),
    max_priority_fee_per_gas: formatUnits18(l.fees.maxPriorityFeePerGas, 18),
    max_fee: formatUnits18(l.maxFee, 18),
  });
  return {
    base_fee: dec(p.baseFee, 18),
    gas: formatUnits18(p.gas, 0),
    l1_fee: formatUnits18(p.l1Fee, 18),
    type: p.levels.low.fees.kind,
    levels: { low: level(p.levels.low), medium: level(p.levels.medium), high: level(p.levels.high) },
  };
}
