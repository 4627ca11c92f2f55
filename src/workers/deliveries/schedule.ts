/**
 * When a failed delivery is tried again: pure functions, unit-tested in
 * test/webhooks/schedule.test.ts.
 *
 * - After attempt n (the first included) the next is due `retryDelaysS[n-1]` seconds later,
 *   with ±10% jitter so deliveries that failed together (a receiver's outage) do not all come
 *   back in the same instant; when the schedule is used up the delivery is `failed`.
 * - A `429` or `503` answer with `Retry-After` pushes the next attempt to at least that time,
 *   capped at the largest delay of the schedule (a receiver cannot park a delivery for days).
 * - `410 Gone` ends the delivery at once: the receiver says the endpoint is no more (the worker
 *   deactivates the webhook too).
 */

/** Jitter: each delay is drawn uniformly from [delay × (1 − JITTER), delay × (1 + JITTER)]. */
export const JITTER = 0.1;

/** Statuses whose `Retry-After` is honoured (RFC 9110 §10.2.3 names 503 and 429, RFC 6585). */
const RETRY_AFTER_STATUSES = new Set([429, 503]);

export interface FailureInput {
  /** Attempts made so far, this one included. */
  attempts: number;
  statusCode: number | null;
  /** The `Retry-After` of the answer as a delay in ms from now, or null. */
  retryAfterMs: number | null;
  retryDelaysS: readonly number[];
  nowMs: number;
  /** Uniform in [0, 1): Math.random unless a test fixes it. */
  random?: () => number;
}

export interface NextStep {
  status: 'retrying' | 'failed';
  attempts: number;
  /** When the next attempt is due; null once `failed`. */
  nextAttemptAt: number | null;
}

/** `delayS` seconds in ms with ±JITTER, as a whole number of ms. */
export function jittered(delayS: number, random: () => number = Math.random): number {
  const factor = 1 - JITTER + 2 * JITTER * random();
  return Math.round(delayS * 1000 * factor);
}

export function nextAfterFailure(f: FailureInput): NextStep {
  const delayS = f.retryDelaysS[f.attempts - 1];
  if (delayS === undefined || f.statusCode === 410) return { status: 'failed', attempts: f.attempts, nextAttemptAt: null };
  let delayMs = jittered(delayS, f.random);
  if (f.retryAfterMs !== null && f.statusCode !== null && RETRY_AFTER_STATUSES.has(f.statusCode)) {
    const capMs = Math.max(...f.retryDelaysS) * 1000;
    delayMs = Math.max(delayMs, Math.min(f.retryAfterMs, capMs));
  }
  return { status: 'retrying', attempts: f.attempts, nextAttemptAt: f.nowMs + delayMs };
}
