/**
 * Prometheus metrics (prom-client), one registry per app:
 *
 * - http_requests_total / http_request_duration_seconds, by method, route (the route's pattern,
 *   `unmatched` for unknown paths, so a scan cannot explode the label set) and status: counted
 *   by this process (request-metrics.ts, without prom-client's per-call label hashing).
 * - webhook_attempts_total by outcome, transactions_pending, transactions_stuck (pending longer
 *   than TX_STUCK_AFTER_S), watcher_synced_block, reconciliation_unreconciled_addresses (addresses
 *   whose last reconciliation showed a difference): read from the database at scrape time, so they
 *   are the whole service's figures, the same from every process (take max() across instances).
 * - watcher_head_block and network_rpc_up per network: read from what this process's endpoint
 *   health tracker already knows (src/chain/endpoints.ts: a head read of every endpoint at least
 *   every WATCHER_POLL_MS), not one RPC call per network per scrape: the best head of
 *   the endpoints that are ok, and 1 when at least one is. A network this process has not used
 *   yet waits for its first head read (2 s at most) at its first scrape.
 * - rpc_calls_total and rpc_errors_total per network and endpoint host (the host only: a URL's
 *   path or query may hold an API key): the calls this process made, counted by the tracker.
 * - process_* and nodejs_*: prom-client's default metrics of this process.
 */
import { Counter, Gauge, Registry, collectDefaultMetrics } from 'prom-client';
import { RequestMetrics } from './request-metrics.js';
import type { EndpointStats } from '../../chain/endpoints.js';
import type { AppContext } from '../../context.js';
import { listNetworks } from '../networks/networks.repository.js';
import * as repo from './metrics.repository.js';
import { countUnreconciledAddresses } from '../reconciliation/reconciliation.repository.js';

/** How long a scrape waits for the first head read of a network this process has not used yet. */
const FIRST_HEALTH_WAIT_MS = 2_000;
const DURATION_BUCKETS_S = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

export class MetricsService {
  readonly registry = new Registry();
  private readonly requests: RequestMetrics;

  constructor(private readonly ctx: AppContext) {
    collectDefaultMetrics({ register: this.registry });
    this.requests = new RequestMetrics(this.registry, DURATION_BUCKETS_S);
    this.databaseMetrics();
    this.chainMetrics();
  }

  /** Called once per answered request (request-metrics.ts). */
  observeRequest(method: string, route: string, status: number, seconds: number): void {
    this.requests.observe(method, route, status, seconds);
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
    gauge('network_rpc_up', "1 when at least one of the network's endpoints is ok (its last call or head read succeeded), else 0.", (n) =>
      n.up ? 1 : 0,
    );
    this.endpointCounter('rpc_calls_total', 'JSON-RPC calls this process made, by network and endpoint host.', (s) => s.calls);
    this.endpointCounter('rpc_errors_total', 'JSON-RPC calls of this process that failed, by network and endpoint host.', (s) => s.errors);
  }

  private endpointCounter(name: string, help: string, value: (s: EndpointStats) => number): void {
    const { ctx } = this;
    new Counter({
      name,
      help,
      labelNames: ['network_id', 'host'],
      registers: [this.registry],
      collect() {
        this.reset();
        for (const s of ctx.chains.stats()) this.inc({ network_id: String(s.network_id), host: s.host }, value(s));
      },
    });
  }
}

interface NetworkReading {
  id: number;
  name: string;
  head: number | null;
  up: boolean;
  synced: number | null;
}

async function readNetworks(ctx: AppContext): Promise<NetworkReading[]> {
  const [networks, cursors] = await Promise.all([listNetworks(ctx.store.db), repo.listSyncedBlocks(ctx.store.db)]);
  const synced = new Map(cursors.map((c) => [c.network_id, c.block_number]));
  return Promise.all(
    networks.map(async (n) => {
      const endpoints = await ctx.chains.checkedHealth(n, FIRST_HEALTH_WAIT_MS);
      const heads = endpoints.filter((e) => e.ok && e.head_block !== null).map((e) => e.head_block!);
      return {
        id: n.id,
        name: n.name,
        head: heads.length > 0 ? Math.max(...heads) : null,
        up: endpoints.some((e) => e.ok),
        synced: synced.get(n.id) ?? null,
      };
    }),
  );
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
