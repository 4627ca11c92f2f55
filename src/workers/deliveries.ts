/**
 * The webhook delivery worker. Each tick:
 *   1. dispatch: fan a batch of outbox events out into deliveries (deliveries/dispatch.ts), when
 *      an outbox signal, a poll interval or a full batch says there may be some; the rows the
 *      worker has room for are leased to it in the same transaction and queued (no claim
 *      transaction between an event and its first send);
 *   2. claim: lease due deliveries into this worker's queue (deliveries/claim.ts): the free slots
 *      plus up to PREFETCH_FACTOR × concurrency more, so one claim transaction serves many sends;
 *   3. send queued deliveries in the background, outside any transaction; a slot is freed as
 *      soon as the answer is read, and the outcome is recorded with complete or fail
 *      (deliveries/record.ts → complete.ts, fail.ts) in batches, one transaction each, while the
 *      row stays leased. Every query of these steps is in deliveries/deliveries.repository.ts
 *      (events: modules/events/events.repository.ts).
 *
 * Bounds: at most `WEBHOOK_CONCURRENCY` (64) sends in flight per process, and at most half of
 * them (32) to one webhook, so one slow or hanging receiver (up to 30 s an attempt) holds some
 * slots while the others keep flowing; one webhook also holds at most half of the queue. A
 * queued row not sent within QUEUE_MAX_WAIT_MS is given back. Ticks run every
 * `WEBHOOK_POLL_MS` (500 ms), and at once when new work is signalled, when the queue runs low,
 * or when a batch was full (more work is waiting), on the workers' shared loop (loop.ts).
 *
 * Many processes can run this worker against one PostgreSQL database (claims use
 * FOR UPDATE SKIP LOCKED); on SQLite run one. A restart resumes: pending and retrying rows are
 * simply due again, and a lease left by a crashed process expires after the longest attempt
 * plus a margin. `stop()` stops claiming, gives back the queued rows and resolves once the
 * sends in flight are recorded; the worker's modes, start to stop, are in deliveries/run-mode.ts.
 */
import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import type { Logger } from 'pino';
import { SecretCache } from './deliveries/secret-cache.js';
import type { AppContext } from '../context.js';
import { deliveryHeaders } from '../modules/webhooks/webhooks.signing.js';
import { DeliverySender, type AttemptOutcome } from '../modules/webhooks/webhooks.sender.js';
import { webhookPlace, type WebhooksService } from '../modules/webhooks/webhooks.service.js';
import { claimDeliveries, type ClaimedDelivery } from './deliveries/claim.js';
import { dispatchEvents } from './deliveries/dispatch.js';
import { OutcomeRecorder, type Recorded } from './deliveries/record.js';
import { RunState } from './deliveries/run-mode.js';
import { startLoop, type Loop, type RoundCause } from './loop.js';
import type { Worker } from './worker.js';
import { fixedLine, type LineValue } from '../logger.js';
import { onOutboxEvent } from '../modules/events/outbox.js';

/** Outbox events fanned out per transaction. */
const DISPATCH_BATCH = 200;
/**
 * Lease = total time-out + 30 s. An attempt cannot outlive the total time-out (the request is
 * aborted), a claimed row waits at most QUEUE_MAX_WAIT_MS in the worker's queue before it is
 * sent or given back, and recording its outcome takes milliseconds, so with the defaults (30 s)
 * a lease of 60 s expires only when its holder died; the delivery is then sent again by another
 * worker.
 */
const LEASE_MARGIN_MS = 30_000;
/**
 * The worker claims ahead: besides the `concurrency` rows in flight it keeps up to
 * PREFETCH_FACTOR × `concurrency` claimed rows queued (one webhook at most half of them), so a
 * finished send is replaced at once from the queue, and claims (one transaction each) run
 * beside the sends instead of between them, each taking many rows.
 */
const PREFETCH_FACTOR = 4;
/** A claim waits (while a slot's worth of rows is still queued) until 1/this of the places are free. */
const CLAIM_WHEN_FREE = 2;
/** A queued row not sent after this long (its webhook's slots stay busy) is given back. */
const QUEUE_MAX_WAIT_MS = 2_000;
/** While busy, outcomes are written once this many per slot are waiting (or after a short delay). */
const RECORD_MIN_BATCH_PER_SLOT = 4;
/** Outcomes waiting to be recorded, per slot, beyond which the worker stops claiming. */
const RECORD_BACKLOG_PER_SLOT = 8;
/**
 * While sends are in flight and the queue still holds work, a refill waits this long so the
 * rows sent meanwhile are replaced by one claim (an idle worker claims at once).
 */
const REFILL_COALESCE_MS = 2;

/** What the next tick does besides sending: each set by the events named, cleared when done. */
interface NextTick {
  /**
   * Look at the outbox: after an outbox signal, a poll interval, a manual wake or a full fan-out
   * batch. Refills after a send skip that read.
   */
  fanOut: boolean;
  /** An outbox signal came since the last fan-out began (it skips the read that looks first). */
  signalled: boolean;
  /**
   * Claim: after a poll interval, a manual wake, a fan-out that made rows it did not lease, or
   * freed slots or queue places while due rows may be waiting (`#dueUnleased`). An outbox
   * signal whose events made none (no webhook wants them) claims nothing: on a hot wallet
   * without webhooks that was a claim transaction for every event. Rows another process fanned
   * out are claimed by it, or here at the next poll.
   */
  claim: boolean;
}

interface Queued {
  c: ClaimedDelivery;
  /** When it was claimed (service clock, ms). */
  at: number;
}

export interface DeliveryWorkerStats {
  delivered: number;
  failedAttempts: number;
  /** Claim transactions run (each reads the due rows of both statuses). */
  claims: number;
  /** Fan-out passes run (each looks for undispatched events, on PostgreSQL after a signal in a transaction). */
  fanOuts: number;
  inFlight: number;
  /** Decrypted secrets and header sets held in memory now. */
  decryptedSecrets: number;
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
  return {
    delivered: false,
    statusCode: null,
    durationMs: 0,
    responseBody: null,
    error: "the webhook's secret or headers cannot be decrypted with the configured keys",
  };
}

/** One running delivery worker: its queue, its slots, its wake-ups; outcomes go to its recorder. */
class DeliveryRun {
  readonly #ctx: AppContext;
  readonly #id: string;
  readonly #cfg: AppContext['config']['webhook'];
  readonly #log: Logger;
  /** 'webhook delivered', a line a delivery: written as a fixed line (src/logger.ts). */
  readonly #deliveredLine: (...values: LineValue[]) => void;
  readonly #perWebhookLimit: number;
  readonly #leaseMs: number;
  readonly #sender: DeliverySender;
  readonly #recorder: OutcomeRecorder;
  /** Claimed rows waiting for a slot, oldest first. */
  #queue: Queued[] = [];
  /** Sends on the wire (the slots). */
  readonly #inFlight = new Set<number>();
  readonly #inFlightByWebhook = new Map<number, number>();
  /** Rows each webhook has in this worker: queued or in flight. */
  readonly #heldByWebhook = new Map<number, number>();
  /** Every send not yet recorded (stop waits for them). */
  readonly #tasks = new Set<Promise<void>>();
  readonly #counts = { delivered: 0, failedAttempts: 0, claims: 0, fanOuts: 0 };
  /** Decrypted secrets and headers (deliveries/secret-cache.ts: bounded in time and size, dropped on a change). */
  readonly #secrets: SecretCache;
  readonly #unsubscribe: Array<() => unknown> = [];
  #unlisten: (() => Promise<void>) | null = null;
  /** created → running → stopping → draining → stopped (deliveries/run-mode.ts). */
  readonly #state = new RunState();
  /** The shared loop that runs the ticks (from start()). */
  #loop: Loop | null = null;
  /** The stop in progress or done: stop() asked again answers the same. */
  #stopPromise: Promise<void> | null = null;
  /** The first tick fans out and claims. */
  readonly #next: NextTick = { fanOut: true, signalled: false, claim: true };
  /**
   * Whether due rows not leased to this worker may be waiting: false after a claim that found
   * fewer than it had room for, true again after a poll interval, a manual wake, a fan-out that
   * left rows unleased, a claim that filled its room or passed rows over, or rows given back.
   * While false, a freed slot claims nothing: under a steady flow every row comes leased from
   * this worker's own fan-out, and a claim per freed slot found nothing, while it held up the
   * next fan-out (PostgreSQL, 2 processes: a measurable wait per claim, every tick; BENCHMARKS.md).
   */
  #dueUnleased = true;
  /** Counts the times `#dueUnleased` was set: a claim clears it only if none came during its read. */
  #dueMarks = 0;
  /** A refill asked for while sends are in flight, held REFILL_COALESCE_MS to gather more freed slots. */
  #refillTimer: NodeJS.Timeout | null = null;

  constructor(ctx: AppContext, id: string) {
    this.#ctx = ctx;
    this.#id = id;
    this.#cfg = ctx.config.webhook;
    this.#log = ctx.log.child({ component: 'deliveries', worker: id });
    this.#deliveredLine = fixedLine(this.#log, 'info', 'webhook delivered', [
      'delivery',
      'webhook_id',
      'event',
      'status_code',
      'duration_ms',
      'attempt',
    ]);
    this.#perWebhookLimit = Math.max(1, Math.ceil(this.#cfg.concurrency / 2));
    this.#secrets = new SecretCache((enc, place) => ctx.secrets.decrypt(enc, place));
    this.#leaseMs = this.#cfg.totalTimeoutMs + LEASE_MARGIN_MS;
    this.#sender = new DeliverySender({
      connectTimeoutMs: this.#cfg.connectTimeoutMs,
      readTimeoutMs: this.#cfg.readTimeoutMs,
      totalTimeoutMs: this.#cfg.totalTimeoutMs,
      allowPrivate: this.#cfg.allowPrivate,
      connectionsPerOrigin: this.#cfg.concurrency,
    });
    this.#recorder = new OutcomeRecorder(
      ctx,
      id,
      {
        onBatch: () => this.#afterRecord(),
        onReleaseError: (err) => this.#log.warn({ err }, 'giving back unsent leases failed; they will expire'),
        busy: () => this.#inFlight.size > 0 || this.#queue.length > 0,
      },
      this.#cfg.concurrency * RECORD_MIN_BATCH_PER_SLOT,
    );
  }

  /** Manual retries in this process, new outbox events here and (PostgreSQL) elsewhere wake the worker. */
  subscribe(webhooks: WebhooksService | undefined): void {
    const wake = () => this.wake();
    const outbox = () => this.#outboxSignal();
    if (webhooks)
      this.#unsubscribe.push(
        webhooks.onWork(wake),
        webhooks.onChange((id) => this.#secrets.forget(id)),
      );
    this.#unsubscribe.push(onOutboxEvent(outbox));
    this.#unlisten = this.#ctx.store.listenOutbox(outbox, (err) =>
      this.#log.warn({ err }, 'outbox LISTEN connection failed; reconnecting'),
    );
  }

  start(): void {
    this.#state.transition('created', 'running');
    const cfg = this.#cfg;
    this.#log.info(
      { concurrency: cfg.concurrency, per_webhook: this.#perWebhookLimit, retry_delays_s: cfg.retryDelaysS },
      'delivery worker started',
    );
    this.#loop = startLoop({
      name: 'deliveries',
      intervalMs: cfg.pollIntervalMs,
      log: this.#log,
      tick: (_stopping, cause) => this.#round(cause),
      beforePause: () => this.#secrets.prune(this.#ctx.clock.nowMs()),
    });
  }

  /** Claims, sends and refills begin only while running (a stopping worker gives back what it holds). */
  get #running(): boolean {
    return this.#state.mode === 'running';
  }

  /** New work may be waiting, in the outbox too: the next tick fans it out and claims. */
  wake(): void {
    this.#next.fanOut = true;
    this.#markDue();
    this.#refill();
  }

  /** New outbox events: the next tick fans them out, and claims only if that made deliveries. */
  #outboxSignal(): void {
    this.#next.fanOut = true;
    this.#next.signalled = true;
    this.#loop?.wake();
  }

  /** Due rows not leased here may be waiting (`#dueUnleased`). */
  #markDue(): void {
    this.#dueUnleased = true;
    this.#dueMarks += 1;
  }

  /**
   * Slots or queue places were freed: the next tick claims, if due rows not leased here may be
   * waiting (the outbox is left to its signals).
   */
  #refill(): void {
    if (!this.#dueUnleased) return;
    this.#next.claim = true;
    this.#loop?.wake();
  }

  stats(): DeliveryWorkerStats {
    return { ...this.#counts, inFlight: this.#inFlight.size, decryptedSecrets: this.#secrets.size };
  }

  status(): 'running' | 'stopped' {
    return this.#state.mode === 'stopped' ? 'stopped' : 'running';
  }

  /** Stops claiming, gives back the queued rows; resolves once the sends in flight are recorded. */
  stop(): Promise<void> {
    this.#stopPromise ??= this.#stop();
    return this.#stopPromise;
  }

  async #stop(): Promise<void> {
    this.#state.transition('running', 'stopping');
    for (const off of this.#unsubscribe) off();
    await this.#unlisten?.();
    await this.#loop?.stop();
    this.#state.transition('stopping', 'draining');
    this.#giveBack(this.#queue);
    this.#queue = [];
    await Promise.allSettled([...this.#tasks]);
    await this.#recorder.idle();
    if (this.#refillTimer) clearTimeout(this.#refillTimer);
    await this.#sender.close();
    this.#state.transition('draining', 'stopped');
    this.#log.info(this.#counts, 'delivery worker stopped');
  }

  /**
   * One round of the loop; true when more work is known to be waiting. Its failure is logged
   * here, as an error (sends may be held up), not as the loop's warning.
   */
  async #round(cause: RoundCause): Promise<boolean> {
    // Stopping: the loop is stopped once the outbox listener is closed; a round until then does nothing.
    if (!this.#running) return false;
    // The poll interval passed (not a signal): look at the outbox and claim (retries now due).
    if (cause === 'timer') {
      this.#next.fanOut = this.#next.claim = true;
      this.#markDue();
    }
    try {
      return await this.#tick();
    } catch (err) {
      if (this.#running) this.#log.error({ err }, 'delivery tick failed');
      return false;
    }
  }

  /**
   * Room for more claimed rows: free slots plus the queue's free places. None while recording
   * lags, and none while the queue still holds a slot's worth of rows and less than half the
   * places are free: a claim (a commit) then takes many rows, not the few just sent.
   */
  #room(): number {
    const n = this.#cfg.concurrency;
    if (this.#recorder.backlog >= n * RECORD_BACKLOG_PER_SLOT) return 0;
    const capacity = n * (1 + PREFETCH_FACTOR);
    const room = capacity - this.#inFlight.size - this.#queue.length;
    return room < capacity / CLAIM_WHEN_FREE && this.#queue.length >= n ? 0 : room;
  }

  /** One tick; true when more work is known to be waiting. */
  async #tick(): Promise<boolean> {
    const { db, dialect } = this.#ctx.store;
    let more = false;
    if (this.#next.fanOut) {
      // Cleared before the read: a signal arriving meanwhile makes the next tick look again.
      this.#next.fanOut = false;
      const now = this.#ctx.clock.nowMs();
      const room = this.#running ? this.#room() : 0;
      const lease =
        room > 0
          ? {
              workerId: this.#id,
              limit: room,
              untilMs: now + this.#leaseMs,
              heldByWebhook: this.#heldByWebhook,
              perWebhookLimit: this.#perWebhookLimit * (1 + PREFETCH_FACTOR),
            }
          : undefined;
      const signalled = this.#next.signalled;
      this.#next.signalled = false;
      this.#counts.fanOuts += 1;
      const dispatched = await dispatchEvents(db, now, DISPATCH_BATCH, lease, signalled);
      this.#enqueue(dispatched.claimed);
      if (dispatched.events === DISPATCH_BATCH) this.#next.fanOut = more = true;
      // Rows the fan-out did not lease (no room, a webhook's share) wait for a claim.
      if (dispatched.deliveries > dispatched.claimed.length) {
        this.#next.claim = true;
        this.#markDue();
      }
    }
    this.#pump();
    const room = this.#room();
    if (room > 0 && this.#next.claim && this.#running) {
      this.#next.claim = false;
      this.#counts.claims += 1;
      const marks = this.#dueMarks;
      const { claimed, deferred, cancelled } = await claimDeliveries(db, dialect, {
        workerId: this.#id,
        limit: room,
        leaseMs: this.#leaseMs,
        nowMs: this.#ctx.clock.nowMs(),
        heldByWebhook: this.#heldByWebhook,
        perWebhookLimit: this.#perWebhookLimit * (1 + PREFETCH_FACTOR),
      });
      if (cancelled > 0) this.#log.info({ cancelled }, 'deliveries of deleted or inactive webhooks cancelled');
      if (claimed.length < room && deferred === 0 && marks === this.#dueMarks) this.#dueUnleased = false;
      this.#enqueue(claimed);
      this.#pump();
      // Rows passed over for a busy webhook may leave room other webhooks can use now.
      if (deferred > 0 && this.#room() > 0) more = this.#next.claim = true;
    }
    return more;
  }

  /** Rows leased to this worker (by a claim or its own fan-out) join the queue. */
  #enqueue(rows: readonly ClaimedDelivery[]): void {
    const at = this.#ctx.clock.nowMs();
    for (const c of rows) {
      this.#queue.push({ c, at });
      this.#heldByWebhook.set(c.webhook_id, (this.#heldByWebhook.get(c.webhook_id) ?? 0) + 1);
    }
  }

  /**
   * Starts queued rows while slots are free, oldest first, at most `perWebhookLimit` in flight
   * for one webhook (half the slots, so one slow receiver never holds them all). A row queued
   * longer than QUEUE_MAX_WAIT_MS is not sent but given back (its lease must outlast the send).
   */
  #pump(): void {
    const staleBefore = this.#ctx.clock.nowMs() - QUEUE_MAX_WAIT_MS;
    const keep: Queued[] = [];
    const stale: Queued[] = [];
    for (const q of this.#queue) {
      if (q.at < staleBefore) stale.push(q);
      else if (
        !this.#running ||
        this.#inFlight.size >= this.#cfg.concurrency ||
        (this.#inFlightByWebhook.get(q.c.webhook_id) ?? 0) >= this.#perWebhookLimit
      )
        keep.push(q);
      else this.#launch(q.c);
    }
    this.#queue = keep;
    this.#giveBack(stale);
  }

  #giveBack(rows: readonly Queued[]): void {
    if (rows.length > 0) this.#markDue();
    for (const q of rows) this.#unhold(this.#heldByWebhook, q.c.webhook_id);
    this.#recorder.release(rows.map((q) => q.c.id));
  }

  #unhold(counts: Map<number, number>, webhookId: number): void {
    const n = (counts.get(webhookId) ?? 1) - 1;
    if (n <= 0) counts.delete(webhookId);
    else counts.set(webhookId, n);
  }

  #launch(c: ClaimedDelivery): void {
    this.#inFlight.add(c.id);
    this.#inFlightByWebhook.set(c.webhook_id, (this.#inFlightByWebhook.get(c.webhook_id) ?? 0) + 1);
    const p: Promise<void> = this.#deliver(c)
      .catch((err: unknown) =>
        this.#log.error(
          { err, delivery: c.uuid, webhook_id: c.webhook_id },
          'delivery bookkeeping failed; the lease will expire and it will be retried',
        ),
      )
      .finally(() => this.#tasks.delete(p));
    this.#tasks.add(p);
  }

  async #deliver(c: ClaimedDelivery): Promise<void> {
    let freed = false;
    const free = (recordFollows: boolean) => {
      if (freed) return;
      freed = true;
      this.#release(c, recordFollows);
    };
    try {
      const outcome = await this.#attempt(c);
      // A 2xx answer read to its end: the receiver is done with it, the slot is free now. A failed
      // attempt (perhaps aborted, which the receiver may not have noticed yet) keeps its slot
      // until its outcome is recorded, so a receiver never sees more than its share open.
      if (outcome.delivered) free(true);
      this.#logOutcome(c, outcome, await this.#recorder.record(c, outcome));
    } finally {
      free(false);
    }
  }

  /**
   * Frees the slot of a finished send (a delivered one's outcome is recorded in the background;
   * the row stays leased until then), starts the next queued row, and schedules a refill.
   */
  #release(c: ClaimedDelivery, recordFollows: boolean): void {
    this.#inFlight.delete(c.id);
    this.#unhold(this.#inFlightByWebhook, c.webhook_id);
    this.#unhold(this.#heldByWebhook, c.webhook_id);
    if (!this.#running) return;
    this.#pump();
    // The last send of an idle worker: its outcome is written first (latency), then the batch's
    // end refills (#afterRecord).
    if (this.#inFlight.size === 0) {
      if (!recordFollows || this.#queue.length > 0) this.#refill();
    } else if (this.#room() > 0)
      this.#refillTimer ??= setTimeout(() => {
        this.#refillTimer = null;
        this.#refill();
      }, REFILL_COALESCE_MS);
  }

  /** A batch of outcomes was written: if claiming had paused for the backlog, resume. */
  #afterRecord(): void {
    if (this.#running && this.#room() > 0) this.#refill();
  }

  /** One HTTP attempt, outside any transaction. */
  async #attempt(c: ClaimedDelivery): Promise<AttemptOutcome> {
    let secret: string | null;
    let previousSecret: string | null;
    let extra: Record<string, string>;
    try {
      const current = [c.signature_enc, c.previous_signature_enc, c.headers_enc];
      const now = this.#ctx.clock.nowMs();
      const open = (enc: string, column: Parameters<typeof webhookPlace>[1]) =>
        this.#secrets.get(webhookPlace(c.webhook_id, column), enc, current, now);
      secret = c.signature_enc === null ? null : open(c.signature_enc, 'signature_enc');
      previousSecret = c.previous_signature_enc === null ? null : open(c.previous_signature_enc, 'previous_signature_enc');
      extra = c.headers_enc === null ? {} : (JSON.parse(open(c.headers_enc, 'headers_enc')) as Record<string, string>);
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
    if (rec !== null && rec.delivered) {
      this.#counts.delivered += 1;
      this.#deliveredLine(c.uuid, c.webhook_id, c.event_name, outcome.statusCode, outcome.durationMs, rec.attempts);
      return;
    }
    const base = {
      delivery: c.uuid,
      webhook_id: c.webhook_id,
      event: c.event_name,
      status_code: outcome.statusCode,
      duration_ms: outcome.durationMs,
    };
    if (rec === null) {
      this.#log.warn(base, 'delivery lease lost before its outcome was recorded');
    } else {
      this.#counts.failedAttempts += 1;
      this.#log.warn(
        { ...base, attempt: rec.result.attempts, error: outcome.error, next: rec.result.status },
        rec.result.status === 'failed' ? 'webhook delivery failed; no retries left' : 'webhook delivery attempt failed; will retry',
      );
      if (rec.result.disabled !== null) this.#log.warn({ webhook_id: c.webhook_id, reason: rec.result.disabled }, 'webhook deactivated');
    }
  }
}
