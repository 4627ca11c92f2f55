/**
 * The chain watcher worker: every WATCHER_POLL_MS, one tick per registered network (networks
 * added later are picked up), all networks in parallel. Each network is watched by exactly one
 * process at a time, the holder of its lease (chain/watcher.repository.ts); the others try to
 * take the lease every tick, so after a crash another process takes over once the lease
 * expires (WATCHER_LEASE_MS, default 10 s), and at once after a clean stop, which releases it.
 * `stop()` resolves after the ticks in progress have finished their current database
 * transaction; a node call being awaited is abandoned (nothing is lost: the cursor only moves
 * with a committed block).
 */
import { hostname } from 'node:os';
import { randomBytes } from 'node:crypto';
import type { AppContext } from '../context.js';
import type { BalanceService } from '../modules/wallets/balances.service.js';
import type { TransactionService } from '../modules/transactions/transactions.service.js';
import { findWalletView } from '../modules/wallets/wallets.repository.js';
import { listNetworks } from '../modules/networks/networks.repository.js';
import { NetworkWatcher, Stopping } from '../chain/watcher.js';
import type { Worker } from './index.js';
import { startLoop } from './loop.js';

export function startWatcherWorker(ctx: AppContext, deps: { balances: BalanceService; transactions?: TransactionService }): Worker {
  const holder = `${hostname()}:${process.pid}:${randomBytes(4).toString('hex')}`;
  const log = ctx.log.child({ component: 'watcher' });
  const watchers = new Map<number, NetworkWatcher>();
  // Rejected on stop: node calls in flight are abandoned (a node that hangs cannot hold a
  // shutdown open); database transactions in progress still finish.
  let abort!: () => void;
  const stopped = new Promise<never>((_, reject) => {
    abort = () => reject(new Stopping());
  });
  stopped.catch(() => undefined);

  const fillNonceGap = deps.transactions
    ? async (walletId: number) => {
        const wallet = await findWalletView(ctx.store.db, walletId);
        if (wallet) await deps.transactions!.fillNonceGap(wallet);
      }
    : undefined;

  log.info({ holder }, 'chain watcher started');
  return startLoop({
    name: 'watcher',
    intervalMs: ctx.config.watcher.pollIntervalMs,
    log,
    tick: async (stopping) => {
      const networks = await listNetworks(ctx.store.db);
      await Promise.all(
        networks.map((n) => {
          let w = watchers.get(n.id);
          if (!w) {
            w = new NetworkWatcher({ ctx, balances: deps.balances, holder, stopped, fillNonceGap }, n.id);
            watchers.set(n.id, w);
          }
          return w.tick(n, stopping);
        }),
      );
    },
    onStopRequested: () => abort(),
    onStop: async () => {
      await Promise.all([...watchers.values()].map((w) => w.release()));
    },
  });
}
