/** Pieces every benchmark shares: flag parsing, percentiles, a fresh database, the service. */
import { randomBytes } from 'node:crypto';
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import type { Logger } from 'pino';
import { buildApp } from '../src/app.js';
import { loadConfig } from '../src/config.js';
import type { Store } from '../src/db/index.js';
import { createLogger } from '../src/logger.js';
import { upsertNetwork } from '../src/modules/networks/networks.repository.js';
import { createContext, openStore } from '../src/runtime.js';
import { createTestDatabase as freshDatabase } from '../test/helpers/db.js';

export { freshDatabase };
export type { TestDatabase } from '../test/helpers/db.js';

export const DEFAULT_PG_URL = 'postgres://postgres@127.0.0.1:5432/test';

export function positiveInt(name: string, raw: string): number {
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 1) throw new Error(`--${name} must be a positive integer, got "${raw}"`);
  return n;
}

export function nonNegativeInt(name: string, raw: string): number {
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 0) throw new Error(`--${name} must be an integer >= 0, got "${raw}"`);
  return n;
}

export type Driver = 'sqlite' | 'postgres';

/** `--db sqlite,postgres` → the list, checked. */
export function parseDatabases(raw: string): Driver[] {
  const list = raw.split(',').map((d) => d.trim());
  for (const d of list) if (d !== 'sqlite' && d !== 'postgres') throw new Error(`--db: unknown database "${d}" (sqlite, postgres)`);
  return list as Driver[];
}

/** The PostgreSQL server a benchmark makes its databases on. */
export function postgresBase(): string {
  return process.env.DATABASE_URL ?? DEFAULT_PG_URL;
}

/** Nearest-rank percentile of an ascending list. */
export function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!;
}

/**
 * The real service on a fresh database (SQLite folder, or a new PostgreSQL database on
 * `postgresBase()`), listening on a free port, with the devnet at `rpcUrl` registered as a
 * network and a user logged in. `env` adds to the production-like defaults (no devnet of its
 * own, no workers unless asked, a rate limit no benchmark reaches); `afterOpen` runs on the
 * store before the app is built. `close` stops the app and drops the database.
 */
export async function startBenchService(opts: {
  driver: Driver;
  rpcUrl: string;
  env?: Record<string, string>;
  log?: Logger;
  afterOpen?: (store: Store) => Promise<void>;
}) {
  const database = await freshDatabase(opts.driver === 'postgres' ? postgresBase() : null, 'bench');
  const config = loadConfig({
    NODE_ENV: 'production',
    APP_KEY: randomBytes(32).toString('base64'),
    DATA_DIR: database.dataDir,
    LOG_LEVEL: 'warn',
    DEVNET: 'off',
    WORKERS: 'false',
    RATE_LIMIT_PER_MINUTE: '1000000',
    ...(database.databaseUrl ? { DATABASE_URL: database.databaseUrl } : {}),
    ...opts.env,
  });
  const log = opts.log ?? createLogger(config.logLevel);
  const store = await openStore(config, log);
  await opts.afterOpen?.(store);
  const ctx = createContext(config, store, log);
  const { app, services } = await buildApp(ctx);
  await app.listen({ host: '127.0.0.1', port: 0 });
  const address = app.server.address();
  if (address === null || typeof address === 'string') throw new Error('no address');
  const base = `http://127.0.0.1:${address.port}`;
  const network = await upsertNetwork(
    store.db,
    { name: 'Local devnet', rpc_url: opts.rpcUrl, chain_id: 31337, currency_symbol: 'ETH', block_explorer: '', is_mainnet: false, confirmations: 1 },
    Date.now(),
  );
  const email = `bench-${randomBytes(4).toString('hex')}@example.com`;
  const password = randomBytes(12).toString('hex');
  await services.auth.createUser({ email, password, name: 'Bench' });
  const login = await fetch(`${base}/api/auth/login`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ email, password }) });
  if (login.status !== 200) throw new Error(`login: ${login.status} ${await login.text()}`);
  const token = ((await login.json()) as { data: { token: string } }).data.token;
  return {
    base,
    token,
    networkId: network.id,
    database,
    config,
    store,
    ctx,
    app,
    services,
    close: async () => {
      await app.close();
      await store.destroy();
      await database.drop();
    },
  };
}

/** Writes a bench's markdown report to its results file and prints it. */
export function writeReport(file: string, report: string, startedMs: number): void {
  mkdirSync(dirname(file), { recursive: true });
  writeFileSync(file, report);
  process.stdout.write(`${report}\n(written to ${file}; ${Math.round((Date.now() - startedMs) / 1000)} s)\n`);
}

/** Runs a bench's main and exits: 0 when done, 1 with the error printed. */
export function runBench(main: () => Promise<void>): void {
  main().then(
    () => process.exit(0),
    (err: unknown) => {
      process.stderr.write(`bench failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
      process.exit(1);
    },
  );
}

/** CPU time in ms of the live processes whose command line `match` accepts (Linux /proc; 10 ms ticks). */
function processesCpuMs(match: (cmdline: string) => boolean): number {
  let ticks = 0;
  for (const pid of readdirSync('/proc')) {
    if (!/^\d+$/.test(pid)) continue;
    try {
      if (!match(readFileSync(`/proc/${pid}/cmdline`, 'utf8').replaceAll('\0', ' '))) continue;
      // Fields after the command's closing parenthesis: utime and stime are the 12th and 13th.
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
      const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      ticks += Number(f[11]) + Number(f[12]);
    } catch {
      // gone meanwhile
    }
  }
  return ticks * 10;
}

export interface CpuSplit {
  /** This process (the service, and the client or baseline running in it), ms. */
  self: number;
  /** The anvil at `port`, ms. */
  anvil: number;
  /** Every PostgreSQL server process, ms. */
  postgres: number;
}

/**
 * Starts a CPU meter: `read()` gives the CPU time spent since, split between this process, the
 * anvil on `anvilPort` and PostgreSQL's processes. Shows where a path's time goes on a 2-core
 * machine where the three share the cores.
 */
export function cpuMeter(anvilPort: number): { read(): CpuSplit } {
  const anvil = (c: string) => c.includes('anvil') && c.includes(`--port ${anvilPort}`);
  const postgres = (c: string) => c.startsWith('postgres') || c.includes('/bin/postgres ');
  const self0 = process.cpuUsage();
  const anvil0 = processesCpuMs(anvil);
  const pg0 = processesCpuMs(postgres);
  return {
    read: () => {
      const self = process.cpuUsage(self0);
      return { self: (self.user + self.system) / 1000, anvil: processesCpuMs(anvil) - anvil0, postgres: processesCpuMs(postgres) - pg0 };
    },
  };
}

/** One JSON-RPC call to the benches' anvil (anvil_setBalance and the like). */
export async function rpc(url: string, method: string, params: unknown[]): Promise<unknown> {
  const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }) });
  const json = (await res.json()) as { result?: unknown; error?: { message: string } };
  if (json.error) throw new Error(`${method}: ${json.error.message}`);
  return json.result;
}
