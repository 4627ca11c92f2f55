/**
 * Records the outcomes of a worker's attempts (complete.ts, fail.ts) in batches, one
 * transaction each, one batch at a time: whatever finished while the previous batch was
 * committing goes into the next, once that is a full batch (or its oldest has waited
 * RECORD_DELAY_MS, or the worker is not busy). A busy worker thus pays one commit per batch rather than one
 * per delivery (a commit waits for its WAL flush, so one per delivery caps them at the disk's
 * flush rate). The same transaction gives back the leases of claimed rows the worker did not send.
 *
 * The slot of a delivered send is freed as soon as its 2xx answer is read, before this records
 * it: the row stays leased to the worker until its outcome is written (only then is it
 * `delivered`), so a crash in between sends it again (at least once) and nothing else can take
 * it. A failed attempt keeps its slot until recorded and is written without waiting for a batch.
 */
import type { AppContext } from '../../context.js';
import type { AttemptOutcome } from '../../modules/webhooks/webhooks.sender.js';
import type { ClaimedDelivery } from './claim.js';
import { completeDeliveries } from './complete.js';
import { releaseDeliveries } from './deliveries.repository.js';
import { failAttempt, type FailResult } from './fail.js';

/** Outcomes recorded per transaction at most. */
const RECORD_BATCH = 200;
/**
 * While the worker is busy, a batch is written once it holds `minBatch` outcomes or its oldest
 * has waited this long: the slots are already free, so waiting costs no throughput and makes
 * the commits fewer. An idle worker writes at once (latency).
 */
const RECORD_DELAY_MS = 20;

/** null: the lease was lost before the outcome was recorded (another worker owns the row). */
export type Recorded = { delivered: true; attempts: number } | { delivered: false; result: FailResult } | null;

interface PendingRecord {
  c: ClaimedDelivery;
  outcome: AttemptOutcome;
  resolve(r: Recorded): void;
  reject(err: unknown): void;
}

export class OutcomeRecorder {
  readonly #ctx: AppContext;
  readonly #workerId: string;
  readonly #onBatch: () => void;
  readonly #onReleaseError: (err: unknown) => void;
  readonly #minBatch: number;
  readonly #busy: () => boolean;
  readonly #pending: PendingRecord[] = [];
  #toRelease: number[] = [];
  #unrecorded = 0;
  #running: Promise<void> | null = null;
  #timer: NodeJS.Timeout | null = null;
  #flushing = false;
  #flushSoon = false;

  /**
   * `onBatch` runs after each batch (the worker may claim again: its backlog shrank); `busy`
   * says whether more outcomes are coming soon (sends in flight or queued).
   */
  constructor(
    ctx: AppContext,
    workerId: string,
    hooks: { onBatch(this: void): void; onReleaseError(this: void, err: unknown): void; busy(this: void): boolean },
    minBatch: number,
  ) {
    this.#ctx = ctx;
    this.#workerId = workerId;
    this.#onBatch = hooks.onBatch;
    this.#onReleaseError = hooks.onReleaseError;
    this.#busy = hooks.busy;
    this.#minBatch = minBatch;
  }

  /** Outcomes handed over and not yet committed. */
  get backlog(): number {
    return this.#unrecorded;
  }

  record(c: ClaimedDelivery, outcome: AttemptOutcome): Promise<Recorded> {
    return new Promise((resolve, reject) => {
      this.#pending.push({ c, outcome, resolve, reject });
      this.#unrecorded += 1;
      // A failed attempt holds its slot until recorded: it is written without waiting for a batch.
      if (!outcome.delivered) this.#flushSoon = true;
      this.#schedule();
    });
  }

  /** Gives back the leases of rows claimed and not sent, with the next batch. */
  release(ids: readonly number[]): void {
    if (ids.length === 0) return;
    this.#toRelease.push(...ids);
    this.#schedule();
  }

  /** Writes what is waiting now and resolves once everything handed over is written. */
  async idle(): Promise<void> {
    this.#flushing = true;
    this.#schedule();
    while (this.#running) await this.#running;
  }

  /** Whether a batch should be written now rather than wait for more outcomes (or the timer). */
  #ready(): boolean {
    return this.#flushing || this.#flushSoon || this.#toRelease.length > 0 || this.#pending.length >= this.#minBatch || !this.#busy();
  }

  #schedule(): void {
    if (this.#running) return;
    if (!this.#ready()) {
      this.#timer ??= setTimeout(() => {
        this.#timer = null;
        if (!this.#running) this.#run();
      }, RECORD_DELAY_MS);
      return;
    }
    this.#run();
  }

  #run(): void {
    if (this.#timer) clearTimeout(this.#timer);
    this.#timer = null;
    // setImmediate: outcomes that arrive in the same turn of the event loop join the batch.
    this.#running = new Promise<void>((r) => setImmediate(r))
      .then(() => this.#drain())
      .finally(() => {
        this.#running = null;
        if (this.#pending.length > 0 || this.#toRelease.length > 0) this.#schedule();
      });
  }

  async #drain(): Promise<void> {
    while (this.#pending.length > 0 || this.#toRelease.length > 0) {
      this.#flushSoon = false;
      const batch = this.#pending.splice(0, RECORD_BATCH);
      const release = this.#toRelease;
      this.#toRelease = [];
      try {
        const out = await this.#write(batch, release);
        for (const b of batch) b.resolve(out.get(b.c.id) ?? null);
      } catch (err) {
        for (const b of batch) b.reject(err);
        if (release.length > 0) this.#onReleaseError(err);
      }
      this.#unrecorded -= batch.length;
      this.#onBatch();
      // What arrived meanwhile waits for a full batch or the timer like any other (#schedule,
      // after this run), rather than going out at once in a batch of a few: on SQLite, where a
      // write takes about a turn of the event loop, that made one commit per dozen deliveries.
      if (!this.#ready()) break;
    }
  }

  /** complete, fail and release for one batch, in one transaction. */
  #write(batch: readonly PendingRecord[], release: readonly number[]): Promise<Map<number, Recorded>> {
    const { store, clock, config } = this.#ctx;
    return store.db.transaction().execute(async (trx) => {
      const now = clock.nowMs();
      const results = new Map<number, Recorded>();
      await releaseDeliveries(trx, release, this.#workerId);
      const ok = batch.filter((b) => b.outcome.delivered);
      const done = await completeDeliveries(
        trx,
        this.#workerId,
        ok.map((b) => ({ id: b.c.id, webhookId: b.c.webhook_id, outcome: b.outcome })),
        now,
      );
      for (const b of ok) {
        const attempts = done.get(b.c.id);
        results.set(b.c.id, attempts === undefined ? null : { delivered: true, attempts });
      }
      // By webhook id: two workers recording at once touch the webhooks' rows in the same order.
      const failed = batch.filter((x) => !x.outcome.delivered).sort((a, b) => a.c.webhook_id - b.c.webhook_id);
      for (const b of failed) {
        const send = { id: b.c.id, webhookId: b.c.webhook_id, workerId: this.#workerId, outcome: b.outcome, nowMs: now };
        const result = await failAttempt(trx, store.dialect, send, config.webhook);
        results.set(b.c.id, result === null ? null : { delivered: false, result });
      }
      return results;
    });
  }
}
