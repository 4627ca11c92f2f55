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
 * `failed` with the reason, no attempt recorded.
 *
 * Fairness: the caller passes the webhooks that already have their share of in-flight sends;
 * their rows are not even candidates, and at most `perWebhookLimit` rows of one webhook are
 * taken per claim. So one slow receiver can hold some slots, never all of them.
 */
import type { Db, SqlDialect } from '../../db/dialect.js';

export interface ClaimedDelivery {
  id: number;
  uuid: string;
  webhook_id: number;
  event_name: string;
  body: string;
  attempts: number;
  url: string;
  signature_enc: string | null;
  headers_enc: string | null;
}

export interface ClaimRequest {
  workerId: string;
  limit: number;
  leaseMs: number;
  nowMs: number;
  /** In-flight sends per webhook in this worker. */
  inFlightByWebhook: ReadonlyMap<number, number>;
  perWebhookLimit: number;
}

export interface ClaimResult {
  claimed: ClaimedDelivery[];
  /** Due rows left for later because their webhook had its share of slots. */
  deferred: number;
  cancelled: number;
}

/** Candidates looked at per free slot: enough to fill slots past a few saturated webhooks. */
const CANDIDATES_PER_SLOT = 4;

export async function claimDeliveries(db: Db, dialect: SqlDialect, r: ClaimRequest): Promise<ClaimResult> {
  const saturated = [...r.inFlightByWebhook].filter(([, n]) => n >= r.perWebhookLimit).map(([id]) => id);
  return db.transaction().execute(async (trx) => {
    let q = trx
      .selectFrom('webhook_deliveries')
      .select(['id', 'uuid', 'webhook_id', 'event_name', 'body', 'attempts'])
      .where('status', 'in', ['pending', 'retrying'])
      .where('next_attempt_at', '<=', r.nowMs)
      .where((eb) => eb.or([eb('locked_until', 'is', null), eb('locked_until', '<=', r.nowMs)]));
    if (saturated.length > 0) q = q.where('webhook_id', 'not in', saturated);
    const candidates = await dialect
      .forUpdateSkipLocked(q.orderBy('next_attempt_at', 'asc').orderBy('id', 'asc').limit(r.limit * CANDIDATES_PER_SLOT))
      .execute();
    if (candidates.length === 0) return { claimed: [], deferred: 0, cancelled: 0 };

    const hooks = await trx
      .selectFrom('webhooks')
      .select(['id', 'url', 'status', 'deleted_at', 'signature_enc', 'headers_enc'])
      .where('id', 'in', [...new Set(candidates.map((c) => c.webhook_id))])
      .execute();
    const hookById = new Map(hooks.map((h) => [h.id, h]));

    const claimed: ClaimedDelivery[] = [];
    const cancel = new Map<string, number[]>();
    const taken = new Map<number, number>();
    let deferred = 0;
    for (const c of candidates) {
      const h = hookById.get(c.webhook_id);
      if (!h || h.deleted_at !== null || h.status !== 'active') {
        const reason = !h || h.deleted_at !== null ? 'Webhook deleted' : 'Webhook inactive';
        cancel.set(reason, [...(cancel.get(reason) ?? []), c.id]);
        continue;
      }
      const share = (r.inFlightByWebhook.get(c.webhook_id) ?? 0) + (taken.get(c.webhook_id) ?? 0);
      if (claimed.length >= r.limit || share >= r.perWebhookLimit) {
        deferred += 1;
        continue;
      }
      taken.set(c.webhook_id, (taken.get(c.webhook_id) ?? 0) + 1);
      claimed.push({ ...c, url: h.url, signature_enc: h.signature_enc, headers_enc: h.headers_enc });
    }

    let cancelled = 0;
    for (const [reason, ids] of cancel) {
      await trx
        .updateTable('webhook_deliveries')
        .set({ status: 'failed', last_error: reason, updated_at: r.nowMs })
        .where('id', 'in', ids)
        .execute();
      cancelled += ids.length;
    }
    if (claimed.length > 0) {
      await trx
        .updateTable('webhook_deliveries')
        .set({ locked_by: r.workerId, locked_until: r.nowMs + r.leaseMs })
        .where(
          'id',
          'in',
          claimed.map((c) => c.id),
        )
        .execute();
    }
    return { claimed, deferred, cancelled };
  });
}
