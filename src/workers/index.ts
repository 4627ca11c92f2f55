/**
 * The background workers of one process. Each has start/stop; stop resolves after the
 * worker's current item is finished.
 */
import type { AppContext } from '../context.js';
import type { Worker } from './worker.js';
import type { Services } from '../modules/index.js';
import { startApprovalsWorker } from './approvals.js';
import { startChargeWorker } from './charges.js';
import { startHousekeeping } from './housekeeping.js';
import { startDeliveryWorker } from './deliveries.js';
import { startWatcherWorker } from './watcher.js';
import { startPayoutsWorker } from './payouts.js';

export interface Workers {
  list: Worker[];
  stop(): Promise<void>;
}

export function startWorkers(ctx: AppContext, services: Services): Workers {
  const list: Worker[] = [];
  list.push(startDeliveryWorker(ctx, { webhooks: services.webhooks }));
  list.push(startWatcherWorker(ctx, { balances: services.balances, transactions: services.transactions }));
  list.push(startChargeWorker(ctx, services.charges));
  list.push(startApprovalsWorker(ctx, services.transactions));
  list.push(startPayoutsWorker(ctx, services.payouts));
  list.push(startHousekeeping(ctx));
  ctx.log.info({ workers: list.map((w) => w.name) }, 'workers started');
  services.supervisor.attachWorkers({ status: (name) => list.find((w) => w.name === name)?.status() ?? 'disabled' });
  return {
    list,
    stop: async () => {
      await Promise.all(list.map((w) => w.stop()));
    },
  };
}
