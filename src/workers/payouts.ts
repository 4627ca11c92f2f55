/**
 * The payouts worker: sends the items of payouts that may go out, in order (a new payout's
 * first item within PAYOUTS_POLL_MS of its create; a pass stopped by a node fault or the
 * wallet's pending limit is taken up again on the next), and fails payouts left awaiting
 * approval past APPROVAL_TTL_S. Safe with several processes: each item is claimed under the
 * wallet's lock in the transaction that records its transfer
 * (src/modules/payouts/payouts.service.ts).
 */
import type { AppContext } from '../context.js';
import type { PayoutService } from '../modules/payouts/payouts.service.js';
import type { Worker } from './worker.js';
import { startLoop } from './loop.js';
import { onPayoutBatchSettled } from '../modules/transactions/transactions.chain-sync.js';

const PAYOUTS_POLL_MS = 200;

export function startPayoutsWorker(ctx: AppContext, payouts: PayoutService): Worker {
  const log = ctx.log.child({ component: 'payouts' });
  // A batch settled by this process's follower: its items follow it now, not at the next tick.
  const off = onPayoutBatchSettled(() => loop.wake());
  const loop = startLoop({
    name: 'payouts',
    intervalMs: PAYOUTS_POLL_MS,
    log,
    tick: async (stopping) => {
      const expired = await payouts.expireDue();
      if (expired > 0) log.info({ expired }, 'payouts awaiting approval expired');
      await payouts.trackBatches();
      await payouts.sendDue(stopping);
    },
    onStopRequested: off,
  });
  return loop;
}
