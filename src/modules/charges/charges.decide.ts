/**
 * The settlement rule, as a pure function of a charge's terms, its payments and the confirmed
 * height (`height`: the follower's cursor − confirmations + 1) with that block's timestamp.
 *
 * - Counted: payments mined at or below the confirmed height and stamped at or before
 *   `expires_at`, except screened ones (a sender on the SCREENING_FILE list: kept and listed,
 *   never counted). `paid_amount` is their sum (an overpayment is kept and shown).
 * - `paid` as soon as the counted sum reaches `amount` (`paid_at` the timestamp of the block
 *   whose payment made it reach it).
 * - `expired` (nothing counted) or `failed` (less than `amount`) once the confirmed block is
 *   stamped after `expires_at`: every block stamped at or before it then has the network's
 *   confirmations, so a payment mined in the last seconds before expiry has been counted.
 * - Otherwise still `pending`.
 * - Late (never counted): stamped after `expires_at`, or mined above the block a settlement was
 *   decided on (`settled_block`).
 */
export interface Terms {
  amount: bigint;
  expires_at: number;
}

export interface PaymentFacts {
  amount: bigint;
  block_number: number;
  block_timestamp: number;
  log_index: number;
  /** 1: its sender was listed by screening when recorded (never counted). */
  screened: number;
}

export interface Decision {
  status: 'pending' | 'paid' | 'expired' | 'failed';
  paid: bigint;
  /** The block of the payment that reached the amount (paid only). */
  paidAtMs: number | null;
}

export function decide(terms: Terms, payments: PaymentFacts[], height: number, heightTimeMs: number | null): Decision {
  const counted = payments
    .filter((p) => p.screened !== 1 && p.block_number <= height && p.block_timestamp <= terms.expires_at)
    .sort((a, b) => a.block_number - b.block_number || a.log_index - b.log_index);
  let paid = 0n;
  let paidAtMs: number | null = null;
  for (const p of counted) {
    paid += p.amount;
    if (paidAtMs === null && paid >= terms.amount) paidAtMs = p.block_timestamp;
  }
  if (paidAtMs !== null) return { status: 'paid', paid, paidAtMs };
  if (heightTimeMs !== null && heightTimeMs > terms.expires_at) return { status: paid === 0n ? 'expired' : 'failed', paid, paidAtMs: null };
  return { status: 'pending', paid, paidAtMs: null };
}

export function isLate(
  p: { block_number: number; block_timestamp: number },
  c: { expires_at: number; settled_block: number | null },
): boolean {
  return p.block_timestamp > c.expires_at || (c.settled_block !== null && p.block_number > c.settled_block);
}
