/**
 * The supervisor: a health view of this process and its dependencies. A dependency that is
 * down makes the status `degraded` (still HTTP 200); each probe has a short time-out so the
 * route answers quickly when a node hangs.
 */
import { readFileSync } from 'node:fs';
import { sql } from 'kysely';
import type { AppContext } from '../../context.js';
import { listNetworks } from '../networks/networks.repository.js';

const VERSION: string = (() => {
  try {
    return (JSON.parse(readFileSync(new URL('../../../package.json', import.meta.url), 'utf8')) as { version: string }).version;
  } catch {
    return 'unknown';
  }
})();

const PROBE_TIMEOUT_MS = 2_000;

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
        reject(e);
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

  async report() {
    const { db, driver } = this.ctx.store;
    const now = this.ctx.clock.nowMs();

    const t0 = performance.now();
    let dbOk = true;
    try {
      await withTimeout(sql`select 1`.execute(db), PROBE_TIMEOUT_MS);
    } catch (e) {
      dbOk = false;
      this.ctx.log.warn({ err: e }, 'supervisor: database probe failed');
    }
    const latency_ms = Math.round((performance.now() - t0) * 100) / 100;

    const networks = dbOk ? await this.networks() : [];
    const webhooks = dbOk ? await this.webhookCounts(now) : { pending: 0, retrying: 0, failed: 0, delivered_last_hour: 0 };
    const state = (name: string): WorkerState => this.workers?.status(name) ?? 'disabled';
    const degraded = !dbOk || networks.some((n) => !n.rpc_ok);
    return {
      status: degraded ? ('degraded' as const) : ('ok' as const),
      version: VERSION,
      uptime_s: Math.floor((now - this.startedAtMs) / 1000),
      database: { ok: dbOk, driver, latency_ms },
      networks,
      webhooks,
      workers: { watcher: state('watcher'), deliveries: state('deliveries'), charges: state('charges') },
    };
  }

  private async networks() {
    const { db } = this.ctx.store;
    const [rows, cursors] = await Promise.all([
      listNetworks(db),
      db.selectFrom('chain_cursors').select(['network_id', 'block_number']).execute(),
    ]);
    const synced = new Map(cursors.map((c) => [c.network_id, c.block_number]));
    return Promise.all(
      rows.map(async (n) => {
        let head: number | null = null;
        try {
          head = Number(await withTimeout(this.ctx.chains.get(n).getBlockNumber({ cacheTime: 0 }), PROBE_TIMEOUT_MS));
        } catch {
          head = null;
        }
        const syncedBlock = synced.get(n.id) ?? null;
        return {
          id: n.id,
          name: n.name,
          chain_id: n.chain_id,
          rpc_ok: head !== null,
          head_block: head,
          synced_block: syncedBlock,
          lag_blocks: head !== null && syncedBlock !== null ? Math.max(0, head - syncedBlock) : null,
        };
      }),
    );
  }

  private async webhookCounts(now: number) {
    const { db } = this.ctx.store;
    const byStatus = await db
      .selectFrom('webhook_deliveries')
      .select(['status', db.fn.countAll<number>().as('n')])
      .where('status', 'in', ['pending', 'retrying', 'failed'])
      .groupBy('status')
      .execute();
    const delivered = await db
      .selectFrom('webhook_deliveries')
      .select(db.fn.countAll<number>().as('n'))
      .where('status', '=', 'delivered')
      .where('delivered_at', '>=', now - 3_600_000)
      .executeTakeFirst();
    const count = (s: string) => Number(byStatus.find((r) => r.status === s)?.n ?? 0);
    return { pending: count('pending'), retrying: count('retrying'), failed: count('failed'), delivered_last_hour: Number(delivered?.n ?? 0) };
  }
}
