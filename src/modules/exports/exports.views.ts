/**
 * The CSV exports' records: the header of each file and each row's fields, in the order of its
 * columns (docs/exports.md). Amounts are 18-place strings as in the JSON, datetimes the
 * contract's `YYYY-MM-DD HH:MM:SS` UTC; text a user wrote goes through `userText` (lib/csv.ts).
 */
import { checksummedAddress } from '../../lib/address.js';
import { type CsvField, userText } from '../../lib/csv.js';
import { formatStoredUnits18, formatUnits18 } from '../../lib/money.js';
import { formatDateTime } from '../../lib/time.js';
import type { ChargeRow } from '../charges/charges.repository.js';
import type { ItemRow, PayoutRow } from '../payouts/payouts.repository.js';
import { itemFailure, itemStatus } from '../payouts/payouts.views.js';
import type { ExportRow } from '../transactions/transactions.list.repository.js';
import { storedFeePaid } from '../transactions/transactions.repository.js';

export const TRANSACTION_COLUMNS = [
  'id',
  'created_at',
  'type',
  'status',
  'token',
  'amount',
  'fee',
  'from',
  'to',
  'tx_hash',
  'block_number',
  'reference',
] as const;

export const CHARGE_COLUMNS = [
  'id',
  'uuid',
  'created_at',
  'status',
  'token',
  'amount',
  'paid_amount',
  'price_amount',
  'price_currency',
  'content',
  'info',
] as const;

export const PAYOUT_COLUMNS = [
  'payout_id',
  'item_id',
  'reference',
  'address',
  'token',
  'amount',
  'status',
  'tx_hash',
  'failure_reason',
  'created_at',
] as const;

const NO_FEE = formatUnits18(0n, 18);

/**
 * The native fee the wallet paid for the row: none for a receipt (its sender paid), unknown
 * (empty) for an outgoing row not mined yet, else what the chain charged (`storedFeePaid`).
 */
function feeField(r: ExportRow): CsvField {
  if (r.type === 'receipt') return NO_FEE;
  return r.block_number === null ? null : formatStoredUnits18(storedFeePaid(r), 18);
}

/** A transactions row: `from` and `to` checksummed (a receipt's `to` is the wallet's own address). */
export function transactionFields(r: ExportRow): CsvField[] {
  return [
    String(r.id),
    formatDateTime(r.created_at),
    r.type,
    r.status,
    r.symbol,
    formatStoredUnits18(r.amount, r.decimals),
    feeField(r),
    checksummedAddress(r.from_address),
    checksummedAddress(r.to_address),
    r.tx_hash,
    r.block_number === null ? null : String(r.block_number),
    userText(r.reference),
  ];
}

/**
 * A charge: `content` and `info` as their JSON text; a price charge's price as it was asked (a
 * decimal string of 2 places and its currency), empty for a charge of an amount of one token.
 */
export function chargeFields(c: ChargeRow): CsvField[] {
  return [
    String(c.id),
    c.uuid,
    formatDateTime(c.created_at),
    c.status,
    c.symbol,
    formatUnits18(c.amount, c.decimals),
    formatUnits18(c.paid_amount, c.decimals),
    c.price_amount,
    c.price_currency,
    userText(c.content),
    userText(c.info),
  ];
}

/** A payout item, with its status and failure reason as the payout's JSON shows them. */
export function payoutItemFields(p: PayoutRow, i: ItemRow): CsvField[] {
  return [
    String(p.id),
    String(i.id),
    userText(i.reference),
    i.address,
    p.symbol,
    formatUnits18(i.amount, p.decimals),
    itemStatus(p, i),
    i.tx_hash,
    itemFailure(p, i),
    formatDateTime(p.created_at),
  ];
}
