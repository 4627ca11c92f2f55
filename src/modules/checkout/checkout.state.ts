/**
 * What the checkout page shows, as a pure function of the charge, the payments seen on its
 * address and the service's clock (docs/charges.md, "What the page says").
 *
 * The charge's `status` is decided by block time (charges.decide.ts), so it stays `pending` for
 * as long as no block stamped after `expires_at` is confirmed: on an idle chain, for any length
 * of time. The page must not go on taking money meanwhile, so it decides by the clock whether
 * payment is still offered: once `expires_at` has passed, an unsettled charge is `closed` (no QR
 * code, no address to pay, no wallet link), whatever the chain's blocks say. It never says more
 * than the chain does either: `confirming` only while a payment it has seen waits for its
 * confirmations, and a payment that arrived after the expiry is shown as late, never as nothing.
 *
 * A price charge may be paid in any of its quoted tokens, each payment counting as its amount
 * over its token's quote (docs/prices.md). So what has been seen is a share of the charge, not an
 * amount of one token: the counted part as the settlement wrote it (`paid_fraction`; for a charge
 * of one token, `paid_amount` of `amount`, exact) plus each payment still confirming over its
 * quote, kept as an exact ratio of integers. What is still due is that share's rest in each
 * quoted token, rounded up, so that paying it in any one of them always completes the charge.
 */
import { FRACTION_DECIMALS, isLate } from '../charges/charges.decide.js';
import type { CheckoutPaymentRow, CheckoutQuote, CheckoutRefundRow, CheckoutRow } from './checkout.repository.js';

export type CheckoutState = 'awaiting' | 'partial' | 'confirming' | 'closed' | 'paid' | 'expired' | 'failed' | 'late';

/** The states in which the page offers to take money (QR code, address, wallet link). */
export const OPEN_STATES: readonly CheckoutState[] = ['awaiting', 'partial'];

/** A payment on the charge's address as the page shows it (a screened one is never listed). */
export interface SeenPayment {
  /** Null: found on the address by its balance after its watch (no transaction known). */
  tx_hash: string | null;
  /** The token paid in, with its symbol and decimals. */
  token_id: number;
  symbol: string;
  decimals: number;
  amount: bigint;
  confirmed: boolean;
  /** Stamped after `expires_at`, or mined after the charge was settled: never counted. */
  late: boolean;
}

export function seenPayments(c: CheckoutRow, rows: CheckoutPaymentRow[]): SeenPayment[] {
  return rows.map((p) => ({
    tx_hash: p.tx_hash,
    token_id: p.token_id,
    symbol: p.symbol,
    decimals: p.decimals,
    amount: p.amount,
    confirmed: p.confirmed === 1,
    late: isLate(p, c),
  }));
}

/** A refund of the charge that was sent back to the payer (on its way, or confirmed). */
export interface SentRefund {
  amount: bigint;
  /** Null while its transfer waits for approval. */
  tx_hash: string | null;
  confirmed: boolean;
}

export function sentRefunds(rows: CheckoutRefundRow[]): SentRefund[] {
  return rows.map((r) => ({ amount: r.amount, tx_hash: r.tx_hash, confirmed: r.tx_status === 'confirmed' }));
}

const sum = (ps: { amount: bigint }[]) => ps.reduce((a, p) => a + p.amount, 0n);

/** Paid in time but not confirmed yet (it counts once confirmed). */
export const confirmingPayments = (ps: SeenPayment[]) => ps.filter((p) => !p.late && !p.confirmed);
export const latePayments = (ps: SeenPayment[]) => ps.filter((p) => p.late);

/** A charge of one token: what has reached the address in time, counted or waiting for its confirmations. */
export function seenAmount(c: CheckoutRow, ps: SeenPayment[]): bigint {
  return c.paid_amount + sum(confirmingPayments(ps));
}

export const isPriceCharge = (c: CheckoutRow) => c.price_amount !== null;

/** The tokens that pay the charge, each with the amount that pays it whole: a price charge's quotes, else its one token. */
export function quotesOf(c: CheckoutRow): CheckoutQuote[] {
  if (c.quotes.length > 0) return c.quotes;
  return [{ token_id: c.token_id, symbol: c.symbol, decimals: c.decimals, contract: c.contract, is_native: c.is_native, amount: c.amount }];
}

/** The quote in the network's own coin, if the charge has one (the devnet's payer button pays in it). */
export const nativeQuote = (c: CheckoutRow) => quotesOf(c).find((q) => q.is_native === 1);

/** A share of the charge as an exact ratio `num / den` (1: paid in full). */
export interface Share {
  num: bigint;
  den: bigint;
}

const FRACTION_ONE = 10n ** BigInt(FRACTION_DECIMALS);

/** What the settlement counted: `paid_fraction` of a price charge, `paid_amount` of `amount` for a charge of one token. */
export function countedShare(c: CheckoutRow): Share {
  if (isPriceCharge(c)) return { num: c.paid_fraction ?? 0n, den: FRACTION_ONE };
  return { num: c.paid_amount, den: c.amount };
}

/**
 * Some payments' share of the charge, each over its token's quote (a token not quoted: none).
 * `whole` is the product of the quotes, so every quote divides it and the sum stays exact.
 */
export function paymentsShare(c: CheckoutRow, ps: ReadonlyArray<{ token_id: number; amount: bigint }>): Share {
  const quotes = quotesOf(c);
  const whole = quotes.reduce((a, q) => a * q.amount, 1n);
  const weight = new Map(quotes.map((q) => [q.token_id, whole / q.amount]));
  return { num: ps.reduce((a, p) => a + p.amount * (weight.get(p.token_id) ?? 0n), 0n), den: whole };
}

const addShares = (a: Share, b: Share): Share => ({ num: a.num * b.den + b.num * a.den, den: a.den * b.den });

/** What has reached the address in time, as a share of the charge: counted, or waiting for its confirmations. */
export function seenShare(c: CheckoutRow, ps: SeenPayment[]): Share {
  return addShares(countedShare(c), paymentsShare(c, confirmingPayments(ps)));
}

export const isWhole = (s: Share) => s.num >= s.den;

/** The rest of the charge after `seen`, in the quote's token (base units, rounded up: paying it always completes the charge). */
export function dueIn(q: Pick<CheckoutQuote, 'amount'>, seen: Share): bigint {
  if (isWhole(seen)) return 0n;
  const rest = q.amount * (seen.den - seen.num);
  return (rest + seen.den - 1n) / seen.den;
}

/** What is still to pay in the charge's own token while it is open: the amount less what was seen in time. */
export function amountDue(c: CheckoutRow, ps: SeenPayment[]): bigint {
  return dueIn(quotesOf(c)[0]!, seenShare(c, ps));
}

export function checkoutState(c: CheckoutRow, ps: SeenPayment[], nowMs: number): CheckoutState {
  if (c.status === 'paid') return 'paid';
  if (c.status === 'failed') return 'failed';
  const late = latePayments(ps).length > 0;
  if (c.status === 'expired') return late ? 'late' : 'expired';
  // Pending: nothing decided on the chain yet.
  const open = nowMs < c.expires_at;
  const confirming = confirmingPayments(ps).length > 0;
  const seen = seenShare(c, ps);
  if (confirming && (!open || isWhole(seen))) return 'confirming';
  if (late) return 'late';
  if (!open) return 'closed';
  return seen.num > 0n ? 'partial' : 'awaiting';
}

/**
 * What the page was rendered from, as one string: the script compares it with each poll's answer
 * (the same fields in GET /api/pay/{uuid}) and renders the page again when it differs.
 */
export function changeKey(
  state: string,
  paidAmount: string,
  payments: { tx_hash: string | null; confirmed: boolean; late: boolean }[],
  refunds: { tx_hash: string | null; confirmed: boolean }[],
) {
  const ps = payments.map((p) => `${p.tx_hash ?? '-'}:${p.confirmed ? 1 : 0}:${p.late ? 1 : 0}`).join(',');
  const rs = refunds.map((r) => `${r.tx_hash ?? '-'}:${r.confirmed ? 1 : 0}`).join(',');
  return [state, paidAmount, ps, rs].join('|');
}
