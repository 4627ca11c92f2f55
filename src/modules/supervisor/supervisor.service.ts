/**
 * The supervisor: a health view of this process and its dependencies. A dependency that is
 * down makes the status `degraded` (still HTTP 200); each probe has a short time-out so the
 * route answers quickly when a node hangs.
 */
import type { AppContext } from '../../context.js';
import type { EndpointHealth } from '../../chain/endpoints.js';
import type { NetworkRow } from '../../db/types.js';
import { listNetworks } from '../networks/networks.repository.js';
import * as repo from './supervisor.repository.js';
import { networkHealthView } from './supervisor.views.js';
import { VERSION } from '../../lib/version.js';

const PROBE_TIMEOUT_MS = 2_000;
const HOUR_MS = 3_600_000;
const NO_DELIVERIES: repo.DeliveryCounts = { pending: 0, retrying: 0, failed: 0, delivered_last_hour: 0 };

export type WorkerState = 'running' | 'stopped' | 'disabled';

export interface WorkerStatusSource {
  status(name: string): WorkerState;
}

function withTimeout<T>(p: Promise<T>, ms: number): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms`)), ms);
    p.then(
      (v) => {
        clearTimeout(timer);
        resolve(v);
      },
      (e) => {
        clearTimeout(timer);
        reject(e as Error);
      },
    );
  });
}

export class SupervisorService {
  private readonly startedAtMs: number;
  private workers: WorkerStatusSource | null = null;

  constructor(private readonly ctx: AppContext) {
    this.startedAtMs = ctx.clock.nowMs();
  }

  /** Called by startWorkers so the supervisor can report them. */
  attachWorkers(source: WorkerStatusSource | null): void {
    this.workers = source;
  }

  /**
   * Health of the service, with the queue and transaction counts of `userId`'s own objects only
   * (deployment-wide figures are on /metrics, for the operator).
   */
  async report(userId: number) {
    const now = this.ctx.clock.nowMs();
    const database = await this.probeDatabase();
    const networks = database.ok ? await this.networks() : [];
    const webhooks = database.ok ? await repo.countDeliveries(this.ctx.store.db, userId, now - HOUR_MS) : NO_DELIVERIES;
    const transactions = database.ok ? await repo.countPendingOutgoing(this.ctx.store.db, userId) : { pending: 0, stuck: 0 };
    const state = (name: string): WorkerState => this.workers?.status(name) ?? 'disabled';
    const degraded = !database.ok || networks.some((n) => !n.rpc_ok);
    return {
      status: degraded ? ('degraded' as const) : ('ok' as const),
      version: VERSION,
      uptime_s: Math.floor((now - this.startedAtMs) / 1000),
      database,
      networks,
      webhooks,
      transactions,
      workers: { watcher: state('watcher'), deliveries: state('deliveries'), charges: state('charges') },
    };
  }

  private async probeDatabase() {
    const { db, driver } = this.ctx.store;
    const t0 = performance.now();
    let ok = true;
    try {
      await withTimeout(repo.ping(db), PROBE_TIMEOUT_MS);
    } catch (e) {
      ok = false;
      this.ctx.log.warn({ err: e }, 'supervisor: database probe failed');
    }
    return { ok, driver, latency_ms: Math.round((performance.now() - t0) * 100) / 100 };
  }

  private async networks() {
    const { db } = this.ctx.store;
    const [rows, synced, tracesPending] = await Promise.all([listNetworks(db), repo.listSyncedBlocks(db), repo.countPendingTraces(db)]);
    return Promise.all(
      rows.map(async (n) => networkHealthView(n, await this.endpoints(n), synced.get(n.id) ?? null, tracesPending.get(n.id) ?? 0)),
    );
  }

  /**
   * The network's endpoints through this process's health tracker (src/chain/endpoints.ts), after
   * a head read of each now (2 s at most; an endpoint that hangs keeps what was last known of it).
   */
  private endpoints(n: NetworkRow): Promise<EndpointHealth[]> {
    return this.ctx.chains.freshHealth(n, PROBE_TIMEOUT_MS);
  }
}
