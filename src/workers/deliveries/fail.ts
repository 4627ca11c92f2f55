/**
 * Queue state change 4 of 4: an attempt failed (non-2xx, time-out, refused, private
 * destination). With `attempts` counting every HTTP attempt, the first included, and the
 * schedule `retryDelaysS` (default 60, 300, 900 s, each ±10%; schedule.ts): the delivery is
 * `retrying` until the schedule is used up, then `failed` (so by default after 4 attempts). The
 * attempt is recorded with it, only while this worker still holds the lease. Runs inside the
 * caller's transaction (see complete.ts).
 *
 * The webhook may be deactivated here too, with the reason:
 * - `gone`: the receiver answered `410 Gone`; the delivery ends `failed` at once;
 * - `failing`: every attempt since the first failure of the current run has failed for
 *   `disableAfterS` (`WEBHOOK_DISABLE_AFTER_S`, 0 never); a delivered attempt ends the run.
 * Either way its waiting deliveries end `failed` (`Webhook inactive`), as when a user
 * deactivates it.
 */
import type { Db, SqlDialect } from '../../db/dialect.js';
import type { AttemptOutcome } from '../../modules/webhooks/webhooks.sender.js';
import { cancelOpenDeliveries } from '../../modules/webhooks/webhooks.repository.js';
import * as queue from './deliveries.repository.js';
import { nextAfterFailure, type NextStep } from './schedule.js';

export interface FailResult extends NextStep {
  /** Set when this attempt made the webhook inactive. */
  disabled: 'gone' | 'failing' | null;
}

export interface FailedSend {
  id: number;
  webhookId: number;
  workerId: string;
  outcome: AttemptOutcome;
  nowMs: number;
}

export interface FailPolicy {
  retryDelaysS: readonly number[];
  disableAfterS: number;
}

export async function failAttempt(trx: Db, dialect: SqlDialect, f: FailedSend, policy: FailPolicy): Promise<FailResult | null> {
  const held = await queue.findHeldAttempts(trx, dialect, f.id, f.workerId);
  if (held === undefined) return null;
  const { outcome, nowMs } = f;
  const step = nextAfterFailure({
    attempts: held + 1,
    statusCode: outcome.statusCode,
    retryAfterMs: outcome.retryAfterMs ?? null,
    retryDelaysS: policy.retryDelaysS,
    nowMs,
  });
  await queue.markFailed(trx, f.id, f.workerId, { ...step, responseStatus: outcome.statusCode, error: outcome.error }, nowMs);
  await queue.insertAttempts(trx, [
    {
      delivery_id: f.id,
      attempt: step.attempts,
      response_status: outcome.statusCode,
      duration_ms: outcome.durationMs,
      response_body: outcome.responseBody,
      error: outcome.error,
      created_at: nowMs,
    },
  ]);
  return { ...step, disabled: await disableIfDue(trx, f, policy) };
}

/** Deactivates the webhook after a 410, or once it has failed for `disableAfterS`. */
async function disableIfDue(trx: Db, f: FailedSend, policy: FailPolicy): Promise<'gone' | 'failing' | null> {
  let reason: 'gone' | 'failing' | null = null;
  if (f.outcome.statusCode === 410) {
    if (await queue.disableWebhook(trx, f.webhookId, 'gone', f.nowMs)) reason = 'gone';
  } else {
    await queue.markFailing(trx, f.webhookId, f.nowMs);
    const since = f.nowMs - policy.disableAfterS * 1000;
    if (policy.disableAfterS > 0 && (await queue.disableWebhook(trx, f.webhookId, 'failing', f.nowMs, since))) reason = 'failing';
  }
  if (reason !== null) await cancelOpenDeliveries(trx, f.webhookId, 'Webhook inactive', f.nowMs);
  return reason;
}
