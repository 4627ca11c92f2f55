/**
 * Requests that would each make the same round trip share one while the round trips already out
 * are answered (the way PostgreSQL's group commit shares a flush, and DataLoader a fetch, but
 * bounded by round trips in flight rather than by a turn of the event loop).
 *
 * `submit(item)` runs a batch at once while fewer than `maxInFlight` batches are out, so a lone
 * request waits for nobody; otherwise the item waits, and when a batch comes back everything that
 * waited meanwhile (at most `maxBatch` items) goes out together. `run` answers a batch with one
 * result per item, in the items' order; if it throws, every item of that batch gets the error.
 */
export interface BatchStats {
  batches: number;
  items: number;
  largest: number;
}

export class Batcher<I, O> {
  #inFlight = 0;
  readonly #waiting: Array<{ item: I; resolve: (o: O) => void; reject: (err: unknown) => void }> = [];
  /** Batches run and the items they carried (tests and benchmarks read them). */
  readonly stats: BatchStats = { batches: 0, items: 0, largest: 0 };

  constructor(
    private readonly run: (items: I[]) => Promise<O[]>,
    private readonly maxInFlight: number,
    private readonly maxBatch: number,
  ) {
    if (!(maxInFlight >= 1 && maxBatch >= 1)) throw new Error('Batcher: maxInFlight and maxBatch must be at least 1');
  }

  submit(item: I): Promise<O> {
    return new Promise<O>((resolve, reject) => {
      this.#waiting.push({ item, resolve, reject });
      this.#drain();
    });
  }

  #drain(): void {
    while (this.#inFlight < this.maxInFlight && this.#waiting.length > 0) {
      const batch = this.#waiting.splice(0, this.maxBatch);
      this.#inFlight += 1;
      this.stats.batches += 1;
      this.stats.items += batch.length;
      this.stats.largest = Math.max(this.stats.largest, batch.length);
      const settle = (fn: () => void) => {
        this.#inFlight -= 1;
        fn();
        this.#drain();
      };
      let out: Promise<O[]>;
      try {
        out = this.run(batch.map((w) => w.item));
      } catch (err) {
        out = Promise.reject(err);
      }
      out.then(
        (results) =>
          settle(() => {
            if (results.length !== batch.length) {
              const err = new Error(`Batcher: ${results.length} results for ${batch.length} items`);
              for (const w of batch) w.reject(err);
              return;
            }
            batch.forEach((w, i) => w.resolve(results[i]!));
          }),
        (err: unknown) => settle(() => batch.forEach((w) => w.reject(err))),
      );
    }
  }
}
