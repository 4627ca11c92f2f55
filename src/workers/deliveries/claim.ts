/**
 * Queue state change 2 of 4: claim due deliveries for this worker.
 *
 * A short transaction selects due rows (`pending` or `retrying`, `next_attempt_at` reached, no
 * live lease) with FOR UPDATE SKIP LOCKED on PostgreSQL, so any number of worker processes
 * claim disjoint rows without waiting on each other; on SQLite the transaction is
 * BEGIN IMMEDIATE, one writer at a time, which gives the same exclusion for one worker. The
 * chosen rows get a lease (`locked_by` = this worker, `locked_until` = now + lease) and the
 * transaction commits before any HTTP request is made: nothing is sent inside a transaction.
 *
 * The lease outlives the longest possible attempt (the total time-out, 30 s by default, plus a
 * margin), so it only expires when a worker died mid-attempt; the row is then due again and
 * another worker sends it (at-least-once: the receiver may see that delivery id twice).
 *
 * A delivery whose webhook has since been deleted or made inactive is not sent: it ends
 * `failed` with the reason, no attempt recorded. A replaced secret whose overlap is over is
 * erased from the webhooks seen here (it signs nothing any more and is not kept).
 *
 * Fairness: the caller passes how many rows each webhook already holds in the worker (queued or
 * in flight); a webhook at `perWebhookLimit` has no candidates, and a claim takes no more of
 * its rows than its limit leaves. The worker then sends at most half its slots' worth of one
 * webhook at a time, so one slow receiver can hold some slots, never all of them.
 */
import type { Db, SqlDialect } from '../../db/dialect.js';
import * as queue from './deliveries.repository.js';
import type { DueDelivery, TargetWebhook } from './deliveries.repository.js';

export interface ClaimedDelivery extends DueDelivery {
  url: string;
  signature_enc: string | null;
  headers_enc: string | null;
  /** The secret a rotation replaced, while its overlap lasts (else null). */
  previous_signature_enc: string | null;
}

export interface ClaimRequest {
  workerId: string;
  limit: number;
  leaseMs: number;
  nowMs: number;
  /** Rows each webhook holds in this worker (queued or in flight). */
  heldByWebhook: ReadonlyMap<number, number>;
  /** Rows one webhook may hold in this worker. */
  perWebhookLimit: number;
}

export interface ClaimResult {
  claimed: ClaimedDelivery[];
  /** Due rows left for later because their webhook had its share of slots. */
  deferred: number;
  cancelled: number;
}

/**
 * Candidates looked at per free place: enough to fill it past a few saturated webhooks, at
 * most CANDIDATES_EXTRA more than the claim can take (a large claim does not lock, read and
 * leave hundreds of rows; rows passed over are reached by the next claim).
 */
const CANDIDATES_PER_SLOT = 4;
const CANDIDATES_EXTRA = 64;

interface Selection {
  claimed: ClaimedDelivery[];
  /** Row ids to end `failed`, by reason. */
  cancel: Map<string, number[]>;
  deferred: number;
}

export async function claimDeliveries(db: Db, dialect: SqlDialect, r: ClaimRequest): Promise<ClaimResult> {
  const saturated = [...r.heldByWebhook].filter(([, n]) => n >= r.perWebhookLimit).map(([id]) => id);
  return db.transaction().execute(async (trx) => {
    const candidates = await queue.lockDueDeliveries(trx, dialect, {
      nowMs: r.nowMs,
      excludeWebhooks: saturated,
      limit: Math.min(r.limit * CANDIDATES_PER_SLOT, r.limit + CANDIDATES_EXTRA),
    });
    if (candidates.length === 0) return { claimed: [], deferred: 0, cancelled: 0 };
    const hooks = await queue.findTargetWebhooks(trx, [...new Set(candidates.map((c) => c.webhook_id))]);
    const { claimed, cancel, deferred } = select(candidates, new Map(hooks.map((h) => [h.id, h])), r);
    const expired = hooks.filter((h) => h.previous_signature_enc !== null && (h.previous_signature_until ?? 0) <= r.nowMs);
    await queue.erasePreviousSecrets(
      trx,
      expired.map((h) => h.id),
      r.nowMs,
    );
    let cancelled = 0;
    for (const [reason, ids] of cancel) {
      await queue.cancelDeliveries(trx, ids, reason, r.nowMs);
      cancelled += ids.length;
    }
    await queue.leaseDeliveries(
      trx,
      claimed.map((c) => c.id),
      r.workerId,
      r.nowMs + r.leaseMs,
    );
    return { claimed, deferred, cancelled };
  });
}

/** Which candidates to send now, which to leave for later (fairness), which to cancel. */
function select(candidates: readonly DueDelivery[], hookById: ReadonlyMap<number, TargetWebhook>, r: ClaimRequest): Selection {
  const out: Selection = { claimed: [], cancel: new Map(), deferred: 0 };
  const taken = new Map<number, number>();
  for (const c of candidates) {
    const h = hookById.get(c.webhook_id);
    if (!h || h.deleted_at !== null || h.status !== 'active') {
      const reason = !h || h.deleted_at !== null ? 'Webhook deleted' : 'Webhook inactive';
      out.cancel.set(reason, [...(out.cancel.get(reason) ?? []), c.id]);
      continue;
    }
    const share = (r.heldByWebhook.get(c.webhook_id) ?? 0) + (taken.get(c.webhook_id) ?? 0);
    if (out.claimed.length >= r.limit || share >= r.perWebhookLimit) {
      out.deferred += 1;
      continue;
    }
    taken.set(c.webhook_id, (taken.get(c.webhook_id) ?? 0) + 1);
    out.claimed.push(claimedAs(c, h, r.nowMs));
  }
  return out;
}

/** A leased row with what signs and sends it: the webhook's URL, secret, headers, and the replaced secret while its overlap lasts. */
export function claimedAs(c: DueDelivery, h: TargetWebhook, nowMs: number): ClaimedDelivery {
  const overlap = h.previous_signature_until !== null && h.previous_signature_until > nowMs;
  return {
    ...c,
    url: h.url,
    signature_enc: h.signature_enc,
    headers_enc: h.headers_enc,
    previous_signature_enc: overlap ? h.previous_signature_enc : null,
  };
}
