/**
 * Retention of the event log, run by housekeeping: events, webhook deliveries and their
 * attempts older than `EVENT_RETENTION_DAYS` are deleted in batches of `RETENTION_BATCH` rows
 * per statement and at most `RETENTION_MAX_BATCHES` batches a table per run, so one run holds
 * no lock for long however much is due; a backlog is worked off over the next runs (every
 * 10 minutes: up to 120,000 rows of each an hour). Deliveries go first, so their events can
 * follow in the same run. What may still be sent is never deleted (events.retention.repository.ts).
 */
import type { AppContext } from '../context.js';
import { pruneDeliveries, pruneEvents } from '../modules/events/events.retention.repository.js';

export const RETENTION_BATCH = 1000;
export const RETENTION_MAX_BATCHES = 20;
const DAY_MS = 24 * 60 * 60 * 1000;

export interface Pruned {
  deliveries: number;
  events: number;
}

async function inBatches(step: () => Promise<number>, batch: number, maxBatches: number): Promise<number> {
  let total = 0;
  for (let i = 0; i < maxBatches; i++) {
    const n = await step();
    total += n;
    if (n < batch) break;
  }
  return total;
}

export async function pruneEventLog(ctx: AppContext, opts: { batch?: number; maxBatches?: number } = {}): Promise<Pruned> {
  const batch = opts.batch ?? RETENTION_BATCH;
  const maxBatches = opts.maxBatches ?? RETENTION_MAX_BATCHES;
  const before = ctx.clock.nowMs() - ctx.config.eventRetentionDays * DAY_MS;
  const { db, dialect } = ctx.store;
  const deliveries = await inBatches(() => pruneDeliveries(db, dialect, before, batch), batch, maxBatches);
  const events = await inBatches(() => pruneEvents(db, before, batch), batch, maxBatches);
  return { deliveries, events };
}
