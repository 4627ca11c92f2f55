/**
 * Housekeeping, every 10 minutes: deletes access tokens that expired over a day ago and
 * Idempotency-Keys past their 24 hours, so neither table grows without bound. Each is one
 * indexed DELETE; several processes running it at once only repeat a no-op. Then the event
 * log's retention (retention.ts). Once a day (the first process to take the day's lease), every
 * wallet is reconciled (src/modules/reconciliation/reconciliation.run.ts): a warning per difference,
 * and money found on a settled charge's deposit address after its watch ended (`after_watch`) is
 * recorded as a late payment and made due a sweep, which the charge worker sends.
 */
import type { Logger } from 'pino';
import type { AppContext } from '../context.js';
import { deleteExpiredTokens } from '../modules/auth/auth.repository.js';
import { deleteExpiredIdempotencyKeys } from '../modules/idempotency/idempotency.repository.js';
import { claimDailyRun, dailyReconciliation } from '../modules/reconciliation/reconciliation.run.js';
import type { Worker } from './worker.js';
import { startLoop } from './loop.js';
import { pruneEventLog } from './retention.js';

export const HOUSEKEEPING_INTERVAL_MS = 10 * 60 * 1000;
const DAY_MS = 24 * 60 * 60 * 1000;
/** The lease that makes the reconciliation run once a day across processes. */
export const RECONCILIATION_LEASE = 'reconciliation:daily';

export async function housekeep(ctx: AppContext): Promise<{ tokens: number; idempotencyKeys: number }> {
  const now = ctx.clock.nowMs();
  const tokens = await deleteExpiredTokens(ctx.store.db, now - DAY_MS);
  const idempotencyKeys = await deleteExpiredIdempotencyKeys(ctx.store.db, now);
  return { tokens, idempotencyKeys };
}

/** Reconciles every wallet when the day's run is due (claimDailyRun: once a day across processes); true when it ran. */
export async function reconcileDaily(ctx: AppContext, log: Logger): Promise<boolean> {
  if (!(await claimDailyRun(ctx, RECONCILIATION_LEASE, DAY_MS))) return false;
  await dailyReconciliation(ctx, log);
  return true;
}

export function startHousekeeping(ctx: AppContext): Worker {
  const log = ctx.log.child({ component: 'housekeeping' });
  return startLoop({
    name: 'housekeeping',
    intervalMs: HOUSEKEEPING_INTERVAL_MS,
    log,
    tick: async () => {
      const removed = await housekeep(ctx);
      if (removed.tokens + removed.idempotencyKeys > 0) log.info(removed, 'expired rows removed');
      const pruned = await pruneEventLog(ctx);
      if (pruned.deliveries + pruned.events > 0) log.info(pruned, 'event log pruned');
      await reconcileDaily(ctx, log);
    },
  });
}
