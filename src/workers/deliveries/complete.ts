/**
 * Queue state change 3 of 4: attempts that got a 2xx answer. Each delivery becomes `delivered`
 * and its attempt is recorded, only while this worker still holds its lease (a worker whose
 * lease expired and was taken over records nothing: the new holder owns the row).
 *
 * Takes a batch and runs inside the caller's transaction: the worker records every outcome
 * that finished during the previous commit in one transaction, so a busy worker pays one
 * commit (one WAL flush on PostgreSQL) per batch instead of one per delivery.
 */
import type { Db } from '../../db/dialect.js';
import type { AttemptOutcome } from '../../modules/webhooks/webhooks.sender.js';
import * as queue from './deliveries.repository.js';

export interface SentDelivery {
  id: number;
  webhookId: number;
  outcome: AttemptOutcome;
}

/** Delivery id → its attempt count now, for the rows this worker still held. */
export async function completeDeliveries(
  trx: Db,
  workerId: string,
  items: readonly SentDelivery[],
  nowMs: number,
): Promise<Map<number, number>> {
  const done = new Map<number, number>();
  if (items.length === 0) return done;
  const byStatus = new Map<number | null, number[]>();
  for (const it of items) byStatus.set(it.outcome.statusCode, [...(byStatus.get(it.outcome.statusCode) ?? []), it.id]);
  for (const [statusCode, ids] of byStatus) {
    for (const r of await queue.markDelivered(trx, ids, workerId, statusCode, nowMs)) done.set(r.id, r.attempts);
  }
  const attempts = items
    .filter((it) => done.has(it.id))
    .map((it) => ({
      delivery_id: it.id,
      attempt: done.get(it.id)!,
      response_status: it.outcome.statusCode,
      duration_ms: it.outcome.durationMs,
      response_body: it.outcome.responseBody,
      error: null,
      created_at: nowMs,
    }));
  await queue.insertAttempts(trx, attempts);
  // The receivers answered: their webhooks' failing periods (automatic deactivation) end.
  await queue.clearFailing(trx, [...new Set(items.filter((it) => done.has(it.id)).map((it) => it.webhookId))]);
  return done;
}
