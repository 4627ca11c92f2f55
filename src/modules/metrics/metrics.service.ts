/**
 * Prometheus metrics (prom-client), one registry per app:
 *
 * - http_requests_total / http_request_duration_seconds, by method, route (the route's pattern,
 *   `unmatched` for unknown paths, so a scan cannot explode the label set) and status: counted
 *   by this process.
 * - webhook_attempts_total by outcome, transactions_pending, transactions_stuck (pending longer
 *   than TX_STUCK_AFTER_S), watcher_synced_block, reconciliation_unreconciled_addresses (addresses
 *   whose last reconciliation showed a difference): read from the database at scrape time, so they
 *   are the whole service's figures, the same from every process (take max() across instances).
 * - watcher_head_block and network_rpc_up per network: asked of each node at scrape time,
 *   with a short time-out.
 * - process_* and nodejs_*: prom-client's default metrics of this process.
 */
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type { AppContext } from '../../context.js';
import { listNetworks } from '../networks/networks.repository.js';
import * as repo from './metrics.repository.js';
import { countUnreconciledAddresses } from '../reconciliation/reconciliation.repository.js';

const RPC_TIMEOUT_MS = 2_000;
const DURATION_BUCKETS_S = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

export class MetricsService {
  readonly registry = new Registry();
  private readonly requests: Counter<'method' | 'route' | 'status'>;
  private readonly durations: Histogram<'method' | 'route' | 'status'>;

  constructor(private readonly ctx: AppContext) {
    collectDefaultMetrics({ register: this.registry });
    this.requests = new Counter({
      name: 'http_requests_total',
      help: 'HTTP requests answered by this process, by method, route and status.',
      labelNames: ['method', 'route', 'status'],
      registers: [this.registry],
    });
    this.durations = new Histogram({
      name: 'http_request_duration_seconds',
      help: 'Time to answer an HTTP request, by method, route and status.',
      labelNames: ['method', 'route', 'status'],
      buckets: DURATION_BUCKETS_S,
      registers: [this.registry],
    });
    this.databaseMetrics();
    this.chainMetrics();
  }

  /** Called once per answered request. */
  observeRequest(method: string, route: string, status: number, seconds: number): void {
    const labels = { method, route, status: String(status) };
    this.requests.inc(labels);
    this.durations.observe(labels, seconds);
  }

  async text(): Promise<string> {
    return this.registry.metrics();
  }

  get contentType(): string {
    return this.registry.contentType;
  }

  private databaseMetrics(): void {
    const { ctx } = this;
    new Counter({
      name: 'webhook_attempts_total',
      help: 'Webhook delivery attempts made by the service, by outcome (success, http_error, network_error).',
      labelNames: ['outcome'],
      registers: [this.registry],
      async collect() {
        const counts = await repo.countWebhookAttempts(ctx.store.db);
        this.reset();
        for (const [outcome, n] of Object.entries(counts)) this.inc({ outcome }, n);
      },
    });
    const pending = sharedPerScrape(() => repo.countPendingTransactions(ctx.store.db, ctx.clock.nowMs() - ctx.config.txStuckAfterS * 1000));
    new Gauge({
      name: 'transactions_pending',
      help: 'Transactions pending (sent or seen, not yet final).',
      registers: [this.registry],
      async collect() {
        this.set((await pending()).pending);
      },
    });
    new Gauge({
      name: 'reconciliation_unreconciled_addresses',
      help: 'Addresses (main and deposit) whose last reconciliation showed a difference not yet accepted.',
      registers: [this.registry],
      async collect() {
        this.set(await countUnreconciledAddresses(ctx.store.db));
      },
    });
    new Gauge({
      name: 'transactions_stuck',
      help: 'Transactions pending for longer than TX_STUCK_AFTER_S seconds.',
      registers: [this.registry],
      async collect() {
        this.set((await pending()).stuck);
      },
    });
  }

  private chainMetrics(): void {
    const { ctx } = this;
    const labelNames = ['network_id', 'network'] as const;
    const read = sharedPerScrape(() => readNetworks(ctx));
    const gauge = (name: string, help: string, value: (n: NetworkReading) => number | null) =>
      new Gauge({
        name,
        help,
        labelNames,
        registers: [this.registry],
        async collect() {
          this.reset();
          for (const n of await read()) {
            const v = value(n);
            if (v !== null) this.set({ network_id: String(n.id), network: n.name }, v);
          }
        },
      });
    gauge('watcher_head_block', "Latest block number the network's node reports.", (n) => n.head);
    gauge('watcher_synced_block', 'Last block the chain watcher has processed.', (n) => n.synced);
    gauge('network_rpc_up', "1 when the network's node answered at this scrape, else 0.", (n) => (n.head === null ? 0 : 1));
  }
}

interface NetworkReading {
  id: number;
  name: string;
  head: number | null;
  synced: number | null;
}

async function readNetworks(ctx: AppContext): Promise<NetworkReading[]> {
  const [networks, cursors] = await Promise.all([listNetworks(ctx.store.db), repo.listSyncedBlocks(ctx.store.db)]);
  const synced = new Map(cursors.map((c) => [c.network_id, c.block_number]));
  return Promise.all(networks.map(async (n) => ({ id: n.id, name: n.name, head: await blockNumber(ctx, n), synced: synced.get(n.id) ?? null })));
}

/** prom-client collects every metric at once: metrics fed by one query share it within a scrape. */
function sharedPerScrape<T>(fn: () => Promise<T>): () => Promise<T> {
  let current: Promise<T> | null = null;
  return () => {
    if (current === null) {
      current = fn().finally(() => {
        setImmediate(() => {
          current = null;
        });
      });
    }
    return current;
  };
}

async function blockNumber(ctx: AppContext, n: Parameters<AppContext['chains']['get']>[0]): Promise<number | null> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<null>((resolve) => {
    timer = setTimeout(() => resolve(null), RPC_TIMEOUT_MS);
  });
  try {
    const read = ctx.chains
      .get(n)
      .getBlockNumber({ cacheTime: 0 })
      .then(Number)
      .catch(() => null);
    return await Promise.race([read, timeout]);
  } finally {
    clearTimeout(timer);
  }
}
