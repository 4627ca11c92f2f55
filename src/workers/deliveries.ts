/**
 * The webhook delivery worker. Each tick:
 *   1. dispatch: fan a batch of outbox events out into deliveries (deliveries/dispatch.ts);
 *   2. claim: lease as many due deliveries as there are free slots (deliveries/claim.ts);
 *   3. send each claimed delivery in the background, outside any transaction, then record the
 *      outcome with complete or fail (deliveries/complete.ts, deliveries/fail.ts); outcomes
 *      that finish together are recorded in one transaction.
 *
 * Bounds: at most `WEBHOOK_CONCURRENCY` (16) sends in flight per process, and at most half of
 * them (8) to one webhook, so one slow or hanging receiver (up to 30 s an attempt) holds some
 * slots while the others keep flowing. Ticks run every `WEBHOOK_POLL_MS` (500 ms), and at once
 * when a send finishes, when a batch was full (more work is waiting) or when a manual retry
 * is queued in this process.
 *
 * Many processes can run this worker against one PostgreSQL database (claims use
 * FOR UPDATE SKIP LOCKED); on SQLite run one. A restart resumes: pending and retrying rows are
 * simply due again, and a lease left by a crashed process expires after the longest attempt
 * plus a margin. `stop()` stops claiming and resolves once the sends in flight are recorded.
 */
import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import type { AppContext } from '../context.js';
import { deliveryHeaders } from '../modules/webhooks/signing.js';
import { DeliverySender, type AttemptOutcome } from '../modules/webhooks/sender.js';
import type { WebhooksService } from '../modules/webhooks/webhooks.service.js';
import { claimDeliveries, type ClaimedDelivery } from './deliveries/claim.js';
import { completeDeliveries } from './deliveries/complete.js';
import { dispatchEvents } from './deliveries/dispatch.js';
import { failAttempt, type FailResult } from './deliveries/fail.js';
import type { Worker } from './index.js';
import { onOutboxEvent } from '../modules/events/outbox.js';

/** Outbox events fanned out per transaction. */
const DISPATCH_BATCH = 200;
/**
 * Lease = total time-out + 30 s. An attempt cannot outlive the total time-out (the request is
 * aborted), and recording its outcome takes milliseconds, so with the defaults (30 s) a lease
 * of 60 s expires only when its holder died; the delivery is then sent again by another worker.
 */
const LEASE_MARGIN_MS = 30_000;
/**
 * A finished send frees a slot; refilling it costs a claim transaction. While other sends are
 * still in flight, the refill waits this long so the slots freed meanwhile are claimed together
 * (on a busy worker that cuts the claims per delivery from one to a fraction; an idle worker
 * still starts the next tick at once when its last send finishes).
 */
const REFILL_COALESCE_MS = 5;
/** Outcomes recorded per transaction (see `record`). */
const RECORD_BATCH = 100;

type Recorded = { delivered: true; attempts: number } | { delivered: false; result: FailResult } | null;

interface PendingRecord {
  c: ClaimedDelivery;
  outcome: AttemptOutcome;
  resolve(r: Recorded): void;
  reject(err: unknown): void;
}

export interface DeliveryWorkerStats {
  delivered: number;
  failedAttempts: number;
  inFlight: number;
}

export interface DeliveryWorker extends Worker {
  readonly id: string;
  /** Run a tick now (new work was queued in this process). */
  wake(): void;
  stats(): DeliveryWorkerStats;
}

export function startDeliveryWorker(ctx: AppContext, opts: { webhooks?: WebhooksService; id?: string } = {}): DeliveryWorker {
  const cfg = ctx.config.webhook;
  const { db, dialect } = ctx.store;
  const id = (opts.id ?? `${hostname()}:${process.pid}:${randomBytes(4).toString('hex')}`).slice(0, 64);
  const log = ctx.log.child({ component: 'deliveries', worker: id });
  const perWebhookLimit = Math.max(1, Math.ceil(cfg.concurrency / 2));
  const leaseMs = cfg.totalTimeoutMs + LEASE_MARGIN_MS;
  const sender = new DeliverySender({
    connectTimeoutMs: cfg.connectTimeoutMs,
    readTimeoutMs: cfg.readTimeoutMs,
    totalTimeoutMs: cfg.totalTimeoutMs,
    allowPrivate: cfg.allowPrivate,
    connectionsPerOrigin: cfg.concurrency,
  });

  const inFlight = new Map<number, Promise<void>>();
  const inFlightByWebhook = new Map<number, number>();
  const stats = { delivered: 0, failedAttempts: 0 };
  let stopping = false;
  let stopped = false;
  let stopPromise: Promise<void> | null = null;
  let wakeRequested = false;
  let wakeSleeper: (() => void) | null = null;
  let refillTimer: NodeJS.Timeout | null = null;
  const toRecord: PendingRecord[] = [];
  let recording: Promise<void> | null = null;

  function wake(): void {
    wakeRequested = true;
    wakeSleeper?.();
  }

  function sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(done, ms);
      function done() {
        clearTimeout(timer);
        wakeSleeper = null;
        resolve();
      }
      wakeSleeper = done;
    });
  }

  const unsubscribe = opts.webhooks?.onWork(wake);
  // New outbox events wake the worker at once instead of at the next poll.
  const offOutbox = onOutboxEvent(wake);
  const unlisten = ctx.store.listenOutbox(wake, (err) => log.warn({ err }, 'outbox LISTEN connection failed; reconnecting'));

  /** One tick; true when more work is known to be waiting. */
  async function tick(): Promise<boolean> {
    const dispatched = await dispatchEvents(db, dialect, ctx.clock.nowMs(), DISPATCH_BATCH);
    let more = dispatched.events === DISPATCH_BATCH;
    const free = cfg.concurrency - inFlight.size;
    if (free > 0 && !stopping) {
      const { claimed, deferred, cancelled } = await claimDeliveries(db, dialect, {
        workerId: id,
        limit: free,
        leaseMs,
        nowMs: ctx.clock.nowMs(),
        inFlightByWebhook,
        perWebhookLimit,
      });
      if (cancelled > 0) log.info({ cancelled }, 'deliveries of deleted or inactive webhooks cancelled');
      for (const c of claimed) launch(c);
      // Rows passed over for a busy webhook may leave slots other webhooks can use now.
      if (deferred > 0 && inFlight.size < cfg.concurrency) more = true;
    }
    return more;
  }

  function launch(c: ClaimedDelivery): void {
    inFlightByWebhook.set(c.webhook_id, (inFlightByWebhook.get(c.webhook_id) ?? 0) + 1);
    const p = deliver(c)
      .catch((err: unknown) => log.error({ err, delivery: c.uuid, webhook_id: c.webhook_id }, 'delivery bookkeeping failed; the lease will expire and it will be retried'))
      .finally(() => {
        inFlight.delete(c.id);
        const n = (inFlightByWebhook.get(c.webhook_id) ?? 1) - 1;
        if (n <= 0) inFlightByWebhook.delete(c.webhook_id);
        else inFlightByWebhook.set(c.webhook_id, n);
        if (stopping) return;
        if (inFlight.size === 0) wake();
        else refillTimer ??= setTimeout(() => {
          refillTimer = null;
          wake();
        }, REFILL_COALESCE_MS);
      });
    inFlight.set(c.id, p);
  }

  async function deliver(c: ClaimedDelivery): Promise<void> {
    let outcome: AttemptOutcome;
    let secret: string | null = null;
    let extra: Record<string, string> = {};
    let readable = true;
    try {
      secret = c.signature_enc === null ? null : ctx.secrets.decrypt(c.signature_enc);
      extra = c.headers_enc === null ? {} : (JSON.parse(ctx.secrets.decrypt(c.headers_enc)) as Record<string, string>);
    } catch {
      readable = false;
    }
    if (readable) {
      const headers = deliveryHeaders({
        deliveryId: c.uuid,
        eventName: c.event_name,
        body: c.body,
        secret,
        extra,
        timestampS: Math.floor(ctx.clock.nowMs() / 1000),
      });
      outcome = await sender.send(c.url, headers, c.body);
    } else {
      outcome = { delivered: false, statusCode: null, durationMs: 0, responseBody: null, error: "the webhook's secret or headers cannot be decrypted with the configured keys" };
    }

    const base = { delivery: c.uuid, webhook_id: c.webhook_id, event: c.event_name, status_code: outcome.statusCode, duration_ms: outcome.durationMs };
    const rec = await record(c, outcome);
    if (rec === null) {
      log.warn(base, 'delivery lease lost before its outcome was recorded');
    } else if (rec.delivered) {
      stats.delivered += 1;
      log.info({ ...base, attempt: rec.attempts }, 'webhook delivered');
    } else {
      stats.failedAttempts += 1;
      log.warn(
        { ...base, attempt: rec.result.attempts, error: outcome.error, next: rec.result.status },
        rec.result.status === 'failed' ? 'webhook delivery failed; no retries left' : 'webhook delivery attempt failed; will retry',
      );
    }
  }

  /**
   * Records an outcome. Outcomes are written in batches, one transaction each, one batch at a
   * time: whatever finished while the previous batch was committing goes into the next. A busy
   * worker thus pays one commit per batch rather than one per delivery (PostgreSQL manages
   * about 800 single-row commits a second on the benchmark machine: that, not HTTP, was the
   * ceiling). The slot stays taken until its outcome is recorded.
   */
  function record(c: ClaimedDelivery, outcome: AttemptOutcome): Promise<Recorded> {
    return new Promise((resolve, reject) => {
      toRecord.push({ c, outcome, resolve, reject });
      // setImmediate: outcomes that arrive in the same turn of the event loop join the batch.
      recording ??= new Promise<void>((r) => setImmediate(r)).then(drainRecords);
    });
  }

  async function drainRecords(): Promise<void> {
    while (toRecord.length > 0) {
      const batch = toRecord.splice(0, RECORD_BATCH);
      try {
        const out = await db.transaction().execute(async (trx) => {
          const now = ctx.clock.nowMs();
          const results = new Map<number, Recorded>();
          const ok = batch.filter((b) => b.outcome.delivered);
          const done = await completeDeliveries(trx, id, ok.map((b) => ({ id: b.c.id, outcome: b.outcome })), now);
          for (const b of ok) {
            const attempts = done.get(b.c.id);
            results.set(b.c.id, attempts === undefined ? null : { delivered: true, attempts });
          }
          for (const b of batch.filter((x) => !x.outcome.delivered)) {
            const result = await failAttempt(trx, dialect, b.c.id, id, b.outcome, cfg.retryDelaysS, now);
            results.set(b.c.id, result === null ? null : { delivered: false, result });
          }
          return results;
        });
        for (const b of batch) b.resolve(out.get(b.c.id) ?? null);
      } catch (err) {
        for (const b of batch) b.reject(err);
      }
    }
    recording = null;
  }

  const loop = (async () => {
    log.info({ concurrency: cfg.concurrency, per_webhook: perWebhookLimit, retry_delays_s: cfg.retryDelaysS }, 'delivery worker started');
    while (!stopping) {
      let more = false;
      try {
        more = await tick();
      } catch (err) {
        if (!stopping) log.error({ err }, 'delivery tick failed');
      }
      if (stopping) break;
      if (!more && !wakeRequested) await sleep(cfg.pollIntervalMs);
      wakeRequested = false;
    }
  })();

  return {
    name: 'deliveries',
    id,
    wake,
    stats: () => ({ ...stats, inFlight: inFlight.size }),
    status: () => (stopped ? 'stopped' : 'running'),
    stop() {
      stopPromise ??= (async () => {
        stopping = true;
        unsubscribe?.();
        offOutbox();
        await unlisten();
        wakeSleeper?.();
        await loop;
        await Promise.allSettled([...inFlight.values()]);
        if (refillTimer) clearTimeout(refillTimer);
        await sender.close();
        stopped = true;
        log.info(stats, 'delivery worker stopped');
      })();
      return stopPromise;
    },
  };
}
