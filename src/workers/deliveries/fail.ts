/**
 * Queue state change 4 of 4: an attempt failed (non-2xx, time-out, refused, private
 * destination). With `attempts` counting every HTTP attempt, the first included, and the
 * schedule `retryDelaysS` (default 60, 300, 900 s): after attempt n the next one is due
 * `retryDelaysS[n-1]` seconds later (status `retrying`); when the schedule is exhausted the
 * delivery is `failed` (so by default after 4 attempts). The attempt is recorded with it, only
 * while this worker still holds the lease. Runs inside the caller's transaction (see complete.ts).
 */
import type { Db, SqlDialect } from '../../db/dialect.js';
import type { AttemptOutcome } from '../../modules/webhooks/sender.js';

export interface FailResult {
  status: 'retrying' | 'failed';
  attempts: number;
  nextAttemptAt: number | null;
}

export async function failAttempt(
  trx: Db,
  dialect: SqlDialect,
  id: number,
  workerId: string,
  outcome: AttemptOutcome,
  retryDelaysS: readonly number[],
  nowMs: number,
): Promise<FailResult | null> {
  const held = await dialect
    .forUpdate(trx.selectFrom('webhook_deliveries').select('attempts').where('id', '=', id).where('locked_by', '=', workerId))
    .executeTakeFirst();
  if (!held) return null;
  const attempts = held.attempts + 1;
  const delayS = retryDelaysS[attempts - 1];
  const result: FailResult =
    delayS === undefined
      ? { status: 'failed', attempts, nextAttemptAt: null }
      : { status: 'retrying', attempts, nextAttemptAt: nowMs + delayS * 1000 };
  await trx
    .updateTable('webhook_deliveries')
    .set({
      status: result.status,
      attempts,
      response_status: outcome.statusCode,
      last_error: outcome.error,
      ...(result.nextAttemptAt === null ? {} : { next_attempt_at: result.nextAttemptAt }),
      locked_by: null,
      locked_until: null,
      updated_at: nowMs,
    })
    .where('id', '=', id)
    .where('locked_by', '=', workerId)
    .execute();
  await trx
    .insertInto('webhook_attempts')
    .values({
      delivery_id: id,
      attempt: attempts,
      response_status: outcome.statusCode,
      duration_ms: outcome.durationMs,
      response_body: outcome.responseBody,
      error: outcome.error,
      created_at: nowMs,
    })
    .execute();
  return result;
}
