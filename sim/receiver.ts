/**
 * The webhook receiver (test/helpers/receiver.ts) with a seeded failure share: while faults are
 * on, an attempt fails (HTTP 500) with probability `share`, at most `maxFailures` times per
 * delivery id (the service's retry schedule in the simulation has more retries than that, so
 * every delivery can still succeed). Only attempts answered 2xx count as delivered.
 */
import { startReceiver, type Receiver } from '../test/helpers/receiver.js';
import type { Prng } from './prng.js';

export interface Delivery {
  id: string;
  event: string;
  data: unknown;
}

export class SimReceiver {
  private on = false;
  readonly delivered: Delivery[] = [];
  failed = 0;
  private readonly failures = new Map<string, number>();

  private constructor(
    private readonly r: Receiver,
    private readonly prng: Prng,
    private readonly share: number,
    private readonly maxFailures: number,
  ) {}

  static async start(prng: Prng, share: number, maxFailures = 3): Promise<SimReceiver> {
    let self: SimReceiver | null = null;
    const r = await startReceiver((req) => self!.answer(req.headers['x-webhook-delivery'] as string | undefined, req.body));
    self = new SimReceiver(r, prng, share, maxFailures);
    return self;
  }

  get url(): string {
    return this.r.url;
  }

  setFaults(on: boolean): void {
    this.on = on;
  }

  private answer(id: string | undefined, body: string): { status: number; body: string } {
    const key = id ?? '';
    const n = this.failures.get(key) ?? 0;
    if (this.on && n < this.maxFailures && this.prng.chance(this.share)) {
      this.failures.set(key, n + 1);
      this.failed += 1;
      return { status: 500, body: 'simulated failure' };
    }
    try {
      const parsed = JSON.parse(body) as { event: string; data: unknown };
      this.delivered.push({ id: key, event: parsed.event, data: parsed.data });
    } catch {
      /* not an event body */
    }
    return { status: 200, body: 'ok' };
  }

  close(): Promise<void> {
    return this.r.close();
  }
}
