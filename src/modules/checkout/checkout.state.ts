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
 */
import { isLate } from '../charges/charges.decide.js';
import type { CheckoutPaymentRow, CheckoutRefundRow, CheckoutRow } from './checkout.repository.js';

export type CheckoutState = 'awaiting' | 'partial' | 'confirming' | 'closed' | 'paid' | 'expired' | 'failed' | 'late';

/** The states in which the page offers to take money (QR code, address, wallet link). */
export const OPEN_STATES: readonly CheckoutState[] = ['awaiting', 'partial'];

/** A payment on the charge's address as the page shows it (a screened one is never listed). */
export interface SeenPayment {
  /** Null: found on the address by its balance after its watch (no transaction known). */
  tx_hash: string | null;
  amount: bigint;
  confirmed: boolean;
  /** Stamped after `expires_at`, or mined after the charge was settled: never counted. */
  late: boolean;
}

export function seenPayments(c: CheckoutRow, rows: CheckoutPaymentRow[]): SeenPayment[] {
  return rows.map((p) => ({
    tx_hash: p.tx_hash,
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

/** What has reached the address in time: counted, or waiting for its confirmations. */
export function seenAmount(c: CheckoutRow, ps: SeenPayment[]): bigint {
  return c.paid_amount + sum(confirmingPayments(ps));
}

/** What is still to pay while the charge is open: the amount less what was seen in time. */
export function amountDue(c: CheckoutRow, ps: SeenPayment[]): bigint {
  const seen = seenAmount(c, ps);
  return seen < c.amount ? c.amount - seen : 0n;
}

export function checkoutState(c: CheckoutRow, ps: SeenPayment[], nowMs: number): CheckoutState {
  if (c.status === 'paid') return 'paid';
  if (c.status === 'failed') return 'failed';
  const late = latePayments(ps).length > 0;
  if (c.status === 'expired') return late ? 'late' : 'expired';
  // Pending: nothing decided on the chain yet.
  const open = nowMs < c.expires_at;
  const confirming = confirmingPayments(ps).length > 0;
  if (confirming && (!open || amountDue(c, ps) === 0n)) return 'confirming';
  if (late) return 'late';
  if (!open) return 'closed';
  return seenAmount(c, ps) > 0n ? 'partial' : 'awaiting';
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
