/**
 * The webhook delivery worker. Each tick:
 *   1. dispatch: fan a batch of outbox events out into deliveries (deliveries/dispatch.ts);
 *   2. claim: lease as many due deliveries as there are free slots (deliveries/claim.ts);
 *   3. send each claimed delivery in the background, outside any transaction, then record the
 *      outcome with complete or fail (deliveries/complete.ts, deliveries/fail.ts); outcomes
 *      that finish together are recorded in one transaction. Every query of these steps is in
 *      deliveries/deliveries.repository.ts (events: modules/events/events.repository.ts).
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
import type { Logger } from 'pino';
import type { AppContext } from '../context.js';
import { deliveryHeaders } from '../modules/webhooks/webhooks.signing.js';
import { DeliverySender, type AttemptOutcome } from '../modules/webhooks/webhooks.sender.js';
import type { WebhooksService } from '../modules/webhooks/webhooks.service.js';
import { claimDeliveries, type ClaimedDelivery } from './deliveries/claim.js';
import { completeDeliveries } from './deliveries/complete.js';
import { dispatchEvents } from './deliveries/dispatch.js';
import { failAttempt, type FailResult } from './deliveries/fail.js';
import type { Worker } from './worker.js';
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
  const id = (opts.id ?? `${hostname()}:${process.pid}:${randomBytes(4).toString('hex')}`).slice(0, 64);
  const run = new DeliveryRun(ctx, id);
  run.subscribe(opts.webhooks);
  run.start();
  return {
    name: 'deliveries',
    id,
    wake: () => run.wake(),
    stats: () => run.stats(),
    status: () => run.status(),
    stop: () => run.stop(),
  };
}

/** The outcome of an attempt that could not be made: the webhook's secrets are unreadable. */
function unreadableOutcome(): AttemptOutcome {
  return { delivered: false, statusCode: null, durationMs: 0, responseBody: null, error: "the webhook's secret or headers cannot be decrypted with the configured keys" };
}

/** One running delivery worker: its slots, its wake-ups and its batches of outcomes. */
class DeliveryRun {
  readonly #ctx: AppContext;
  readonly #id: string;
  readonly #cfg: AppContext['config']['webhook'];
  readonly #log: Logger;
  readonly #perWebhookLimit: number;
  readonly #leaseMs: number;
  readonly #sender: DeliverySender;
  readonly #inFlight = new Map<number, Promise<void>>();
  readonly #inFlightByWebhook = new Map<number, number>();
  readonly #counts = { delivered: 0, failedAttempts: 0 };
  readonly #toRecord: PendingRecord[] = [];
  readonly #unsubscribe: Array<() => unknown> = [];
  #unlisten: (() => Promise<void>) | null = null;
  #recording: Promise<void> | null = null;
  #loop: Promise<void> | null = null;
  #stopping = false;
  #stopped = false;
  #stopPromise: Promise<void> | null = null;
  #wakeRequested = false;
  #wakeSleeper: (() => void) | null = null;
  #refillTimer: NodeJS.Timeout | null = null;

  constructor(ctx: AppContext, id: string) {
    this.#ctx = ctx;
    this.#id = id;
    this.#cfg = ctx.config.webhook;
    this.#log = ctx.log.child({ component: 'deliveries', worker: id });
    this.#perWebhookLimit = Math.max(1, Math.ceil(this.#cfg.concurrency / 2));
    this.#leaseMs = this.#cfg.totalTimeoutMs + LEASE_MARGIN_MS;
    this.#sender = new DeliverySender({
      connectTimeoutMs: this.#cfg.connectTimeoutMs,
      readTimeoutMs: this.#cfg.readTimeoutMs,
      totalTimeoutMs: this.#cfg.totalTimeoutMs,
      allowPrivate: this.#cfg.allowPrivate,
      connectionsPerOrigin: this.#cfg.concurrency,
    });
  }

  /** Manual retries in this process, new outbox events here and (PostgreSQL) elsewhere wake the worker. */
  subscribe(webhooks: WebhooksService | undefined): void {
    const wake = () => this.wake();
    if (webhooks) this.#unsubscribe.push(webhooks.onWork(wake));
    this.#unsubscribe.push(onOutboxEvent(wake));
    this.#unlisten = this.#ctx.store.listenOutbox(wake, (err) => this.#log.warn({ err }, 'outbox LISTEN connection failed; reconnecting'));
  }

  start(): void {
    this.#loop = this.#run();
  }

  wake(): void {
    this.#wakeRequested = true;
    this.#wakeSleeper?.();
  }

  stats(): DeliveryWorkerStats {
    return { ...this.#counts, inFlight: this.#inFlight.size };
  }

  status(): 'running' | 'stopped' {
    return this.#stopped ? 'stopped' : 'running';
  }

  /** Stops claiming; resolves once the sends in flight are recorded. */
  stop(): Promise<void> {
    this.#stopPromise ??= (async () => {
      this.#stopping = true;
      for (const off of this.#unsubscribe) off();
      await this.#unlisten?.();
      this.#wakeSleeper?.();
      await this.#loop;
      await Promise.allSettled([...this.#inFlight.values()]);
      if (this.#refillTimer) clearTimeout(this.#refillTimer);
      await this.#sender.close();
      this.#stopped = true;
      this.#log.info(this.#counts, 'delivery worker stopped');
    })();
    return this.#stopPromise;
  }

  async #run(): Promise<void> {
    const cfg = this.#cfg;
    this.#log.info({ concurrency: cfg.concurrency, per_webhook: this.#perWebhookLimit, retry_delays_s: cfg.retryDelaysS }, 'delivery worker started');
    while (!this.#stopping) {
      let more = false;
      try {
        more = await this.#tick();
      } catch (err) {
        if (!this.#stopping) this.#log.error({ err }, 'delivery tick failed');
      }
      if (this.#stopping) break;
      if (!more && !this.#wakeRequested) await this.#sleep(cfg.pollIntervalMs);
      this.#wakeRequested = false;
    }
  }

  #sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.#wakeSleeper = null;
        resolve();
      };
      const timer = setTimeout(done, ms);
      this.#wakeSleeper = done;
    });
  }

  /** One tick; true when more work is known to be waiting. */
  async #tick(): Promise<boolean> {
    const { db, dialect } = this.#ctx.store;
    const dispatched = await dispatchEvents(db, dialect, this.#ctx.clock.nowMs(), DISPATCH_BATCH);
    let more = dispatched.events === DISPATCH_BATCH;
    const free = this.#cfg.concurrency - this.#inFlight.size;
    if (free > 0 && !this.#stopping) {
      const { claimed, deferred, cancelled } = await claimDeliveries(db, dialect, {
        workerId: this.#id,
        limit: free,
        leaseMs: this.#leaseMs,
        nowMs: this.#ctx.clock.nowMs(),
        inFlightByWebhook: this.#inFlightByWebhook,
        perWebhookLimit: this.#perWebhookLimit,
      });
      if (cancelled > 0) this.#log.info({ cancelled }, 'deliveries of deleted or inactive webhooks cancelled');
      for (const c of claimed) this.#launch(c);
      // Rows passed over for a busy webhook may leave slots other webhooks can use now.
      if (deferred > 0 && this.#inFlight.size < this.#cfg.concurrency) more = true;
    }
    return more;
  }

  #launch(c: ClaimedDelivery): void {
    this.#inFlightByWebhook.set(c.webhook_id, (this.#inFlightByWebhook.get(c.webhook_id) ?? 0) + 1);
    const p = this.#deliver(c)
      .catch((err: unknown) =>
        this.#log.error({ err, delivery: c.uuid, webhook_id: c.webhook_id }, 'delivery bookkeeping failed; the lease will expire and it will be retried'),
      )
      .finally(() => this.#release(c));
    this.#inFlight.set(c.id, p);
  }

  /** Frees the slot of a finished send and schedules the refill (see REFILL_COALESCE_MS). */
  #release(c: ClaimedDelivery): void {
    this.#inFlight.delete(c.id);
    const n = (this.#inFlightByWebhook.get(c.webhook_id) ?? 1) - 1;
    if (n <= 0) this.#inFlightByWebhook.delete(c.webhook_id);
    else this.#inFlightByWebhook.set(c.webhook_id, n);
    if (this.#stopping) return;
    if (this.#inFlight.size === 0) this.wake();
    else
      this.#refillTimer ??= setTimeout(() => {
        this.#refillTimer = null;
        this.wake();
      }, REFILL_COALESCE_MS);
  }

  async #deliver(c: ClaimedDelivery): Promise<void> {
    const outcome = await this.#attempt(c);
    this.#logOutcome(c, outcome, await this.#record(c, outcome));
  }

  /** One HTTP attempt, outside any transaction. */
  async #attempt(c: ClaimedDelivery): Promise<AttemptOutcome> {
    let secret: string | null;
    let previousSecret: string | null;
    let extra: Record<string, string>;
    try {
      secret = c.signature_enc === null ? null : this.#ctx.secrets.decrypt(c.signature_enc);
      previousSecret = c.previous_signature_enc === null ? null : this.#ctx.secrets.decrypt(c.previous_signature_enc);
      extra = c.headers_enc === null ? {} : (JSON.parse(this.#ctx.secrets.decrypt(c.headers_enc)) as Record<string, string>);
    } catch {
      return unreadableOutcome();
    }
    const headers = deliveryHeaders({
      deliveryId: c.uuid,
      eventName: c.event_name,
      body: c.body,
      secret,
      previousSecret,
      extra,
      timestampS: Math.floor(this.#ctx.clock.nowMs() / 1000),
    });
    return this.#sender.send(c.url, headers, c.body);
  }

  #logOutcome(c: ClaimedDelivery, outcome: AttemptOutcome, rec: Recorded): void {
    const base = { delivery: c.uuid, webhook_id: c.webhook_id, event: c.event_name, status_code: outcome.statusCode, duration_ms: outcome.durationMs };
    if (rec === null) {
      this.#log.warn(base, 'delivery lease lost before its outcome was recorded');
    } else if (rec.delivered) {
      this.#counts.delivered += 1;
      this.#log.info({ ...base, attempt: rec.attempts }, 'webhook delivered');
    } else {
      this.#counts.failedAttempts += 1;
      this.#log.warn(
        { ...base, attempt: rec.result.attempts, error: outcome.error, next: rec.result.status },
        rec.result.status === 'failed' ? 'webhook delivery failed; no retries left' : 'webhook delivery attempt failed; will retry',
      );
      if (rec.result.disabled !== null) this.#log.warn({ webhook_id: c.webhook_id, reason: rec.result.disabled }, 'webhook deactivated');
    }
  }

  /**
   * Records an outcome. Outcomes are written in batches, one transaction each, one batch at a
   * time: whatever finished while the previous batch was committing goes into the next. A busy
   * worker thus pays one commit per batch rather than one per delivery (PostgreSQL manages
   * about 800 single-row commits a second on the benchmark machine: that, not HTTP, was the
   * ceiling). The slot stays taken until its outcome is recorded.
   */
  #record(c: ClaimedDelivery, outcome: AttemptOutcome): Promise<Recorded> {
    return new Promise((resolve, reject) => {
      this.#toRecord.push({ c, outcome, resolve, reject });
      // setImmediate: outcomes that arrive in the same turn of the event loop join the batch.
      this.#recording ??= new Promise<void>((r) => setImmediate(r)).then(() => this.#drainRecords());
    });
  }

  async #drainRecords(): Promise<void> {
    while (this.#toRecord.length > 0) {
      const batch = this.#toRecord.splice(0, RECORD_BATCH);
      try {
        const out = await this.#recordBatch(batch);
        for (const b of batch) b.resolve(out.get(b.c.id) ?? null);
      } catch (err) {
        for (const b of batch) b.reject(err);
      }
    }
    this.#recording = null;
  }

  /** complete and fail for one batch, in one transaction. */
  #recordBatch(batch: readonly PendingRecord[]): Promise<Map<number, Recorded>> {
    return this.#ctx.store.db.transaction().execute(async (trx) => {
      const now = this.#ctx.clock.nowMs();
      const results = new Map<number, Recorded>();
      const ok = batch.filter((b) => b.outcome.delivered);
      const done = await completeDeliveries(trx, this.#id, ok.map((b) => ({ id: b.c.id, webhookId: b.c.webhook_id, outcome: b.outcome })), now);
      for (const b of ok) {
        const attempts = done.get(b.c.id);
        results.set(b.c.id, attempts === undefined ? null : { delivered: true, attempts });
      }
      // By webhook id: two workers recording at once touch the webhooks' rows in the same order.
      const failed = batch.filter((x) => !x.outcome.delivered).sort((a, b) => a.c.webhook_id - b.c.webhook_id);
      for (const b of failed) {
        const send = { id: b.c.id, webhookId: b.c.webhook_id, workerId: this.#id, outcome: b.outcome, nowMs: now };
        const result = await failAttempt(trx, this.#ctx.store.dialect, send, this.#cfg);
        results.set(b.c.id, result === null ? null : { delivered: false, result });
      }
      return results;
    });
  }
}
