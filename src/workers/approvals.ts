/**
 * The approvals worker: fails every transfer held for approval longer than APPROVAL_TTL_S
 * (`approval_expired`, transaction.failed, its reservation released;
 * src/modules/transactions/transactions.approvals.ts). It runs a quarter of the TTL apart (at
 * least every 250 ms, at most every minute), so a held transfer outlives its time by at most
 * that. An approval that comes after the time but before this pass is refused and expires the
 * transfer itself. Safe with several processes: each expiry is a conditional update under the
 * wallet's lock.
 */
import type { AppContext } from '../context.js';
import type { TransactionService } from '../modules/transactions/transactions.service.js';
import type { Worker } from './worker.js';
import { startLoop } from './loop.js';

export function approvalsIntervalMs(ttlS: number): number {
  return Math.min(60_000, Math.max(250, Math.floor((ttlS * 1000) / 4)));
}

export function startApprovalsWorker(ctx: AppContext, transactions: TransactionService): Worker {
  const log = ctx.log.child({ component: 'approvals' });
  return startLoop({
    name: 'approvals',
    intervalMs: approvalsIntervalMs(ctx.config.approvalTtlS),
    log,
    tick: async () => {
      const expired = await transactions.approvals.expireDue();
      if (expired > 0) log.info({ expired }, 'transactions held for approval expired');
    },
  });
}
