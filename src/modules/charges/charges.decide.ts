/**
 * The settlement rule, as a pure function of a charge's terms, its payments and the confirmed
 * height (`height`: the follower's cursor − confirmations + 1) with that block's timestamp.
 *
 * - Counted: payments mined at or below the confirmed height and stamped at or before
 *   `expires_at`, except screened ones (a sender on the SCREENING_FILE list: kept and listed,
 *   never counted). Each counts as its amount over its token's quote (a charge made with
 *   `amount` and `token` has one quote: `amount` of `token`); the fraction paid is their sum
 *   (`paid_fraction`), and `paid_amount` is that fraction of `amount`, in `token` (for a charge
 *   paid in its one token: the sum of the payments). An overpayment is kept and shown.
 * - `paid` as soon as the fraction reaches 1 (`paid_at` the timestamp of the block whose payment
 *   made it reach it). Exact: the fraction is compared as an integer ratio, never rounded.
 * - `expired` (nothing counted) or `failed` (less than `amount`) once the confirmed block is
 *   stamped after `expires_at`: every block stamped at or before it then has the network's
 *   confirmations, so a payment mined in the last seconds before expiry has been counted.
 * - Otherwise still `pending`.
 * - Late (never counted): stamped after `expires_at`, or mined above the block a settlement was
 *   decided on (`settled_block`).
 */
export interface Terms {
  /** The amount of `token_id` that pays the charge (a price charge's first quote). */
  amount: bigint;
  token_id: number;
  expires_at: number;
  /** A price charge's quotes: the amount of each token that pays it whole; null: only `amount` of `token_id`. */
  quotes: ReadonlyMap<number, bigint> | null;
}

export interface PaymentFacts {
  amount: bigint;
  /** The token paid in. */
  token_id: number;
  block_number: number;
  block_timestamp: number;
  log_index: number;
  /** 1: its sender was listed by screening when recorded (never counted). */
  screened: number;
}

export interface Decision {
  status: 'pending' | 'paid' | 'expired' | 'failed';
  /** `paid_amount`: the fraction paid of `amount`, in base units of `token_id` (rounded down). */
  paid: bigint;
  /** `paid_fraction`: the counted payments over their quotes, FRACTION_DECIMALS places (rounded down). */
  fraction: bigint;
  /** The block of the payment that reached the amount (paid only). */
  paidAtMs: number | null;
}

/** `paid_fraction` is a fixed-point decimal of this many places. */
export const FRACTION_DECIMALS = 18;
const FRACTION_ONE = 10n ** BigInt(FRACTION_DECIMALS);

/**
 * The fraction paid is `sum / whole`, `whole` the product of the quotes' amounts: every quote
 * divides it, so each payment adds `amount * (whole / quote)` exactly.
 */
function scale(terms: Pick<Terms, 'amount' | 'token_id' | 'quotes'>) {
  const quotes = terms.quotes ?? new Map([[terms.token_id, terms.amount]]);
  const whole = [...quotes.values()].reduce((a, q) => a * q, 1n);
  const weight = new Map([...quotes].map(([token, q]) => [token, whole / q]));
  return { whole, weight };
}

/**
 * What some payments are worth in the charge's token (base units, rounded down): their sum for a
 * charge of one token; for a price charge, each at its quote. Payments in an unquoted token: none.
 */
export function worthInToken(
  terms: Pick<Terms, 'amount' | 'token_id' | 'quotes'>,
  payments: ReadonlyArray<{ token_id: number; amount: bigint }>,
): bigint {
  const { whole, weight } = scale(terms);
  const sum = payments.reduce((a, p) => a + p.amount * (weight.get(p.token_id) ?? 0n), 0n);
  return (sum * terms.amount) / whole;
}

export function decide(terms: Terms, payments: PaymentFacts[], height: number, heightTimeMs: number | null): Decision {
  const { whole, weight } = scale(terms);
  const counted = payments
    .filter((p) => p.screened !== 1 && p.block_number <= height && p.block_timestamp <= terms.expires_at && weight.has(p.token_id))
    .sort((a, b) => a.block_number - b.block_number || a.log_index - b.log_index);
  let sum = 0n;
  let paidAtMs: number | null = null;
  for (const p of counted) {
    sum += p.amount * weight.get(p.token_id)!;
    if (paidAtMs === null && sum >= whole) paidAtMs = p.block_timestamp;
  }
  const paid = (sum * terms.amount) / whole;
  const fraction = (sum * FRACTION_ONE) / whole;
  if (paidAtMs !== null) return { status: 'paid', paid, fraction, paidAtMs };
  if (heightTimeMs !== null && heightTimeMs > terms.expires_at)
    return { status: sum === 0n ? 'expired' : 'failed', paid, fraction, paidAtMs: null };
  return { status: 'pending', paid, fraction, paidAtMs: null };
}

export function isLate(
  p: { block_number: number; block_timestamp: number },
  c: { expires_at: number; settled_block: number | null },
): boolean {
  return p.block_timestamp > c.expires_at || (c.settled_block !== null && p.block_number > c.settled_block);
}
