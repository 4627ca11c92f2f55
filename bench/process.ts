/**
 * The service as users run it, for the benches: `npm start` in its own process (the defaults,
 * TypeScript through tsx, one log line per request at LOG_LEVEL=info, its output appended to a
 * file as `npm start >> service.log 2>&1` would), reached over a
 * real socket, with its peak memory and CPU read from /proc. The bench's own settings are only
 * what a bench cannot do without: a fresh database, a free port, a bootstrap user, the bench's
 * anvil as the devnet (DEVNET_RPC_URL), and a per-user rate limit no bench reaches (a user with
 * a high limit still pays for its counting). Anything else a bench passes is reported by it.
 *
 * Also the bare baselines in a process of their own, so the service and its baseline meet the
 * same machine: a Fastify route answering a given JSON body (as an object, serialised per
 * request, or as the same bytes), or relaying an update request to a webhook receiver —
 * bench/bare-server.ts.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { closeSync, existsSync, openSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { setTimeout as sleep } from 'node:timers/promises';
import { findFreePort } from '../src/chain/devnet.js';
import { freshDatabase, postgresBase, type Driver, type TestDatabase } from './common.js';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');

/** What the bench had to set beyond a fresh database and a port, said in every report. */
export const BENCH_SETTINGS = 'RATE_LIMIT_PER_MINUTE=1000000';

/**
 * BENCH_ENV="K=V,K=V": settings beside the defaults, for a figure with a tuned setting reported
 * beside the default one (each bench's report prints them).
 */
export function benchEnv(): Record<string, string> {
  return Object.fromEntries(
    (process.env.BENCH_ENV ?? '')
      .split(',')
      .filter(Boolean)
      .map((kv) => [kv.slice(0, kv.indexOf('=')), kv.slice(kv.indexOf('=') + 1)]),
  );
}

/** What a report says of the settings: the bench's own and any BENCH_ENV. */
export function settingsNote(): string {
  const extra = Object.entries(benchEnv()).map(([k, v]) => `${k}=${v}`);
  return extra.length ? `${BENCH_SETTINGS}, and beside the defaults ${extra.join(', ')}` : BENCH_SETTINGS;
}

export interface ServiceProcess {
  base: string;
  /** The node process running src/server.ts (not npm's or tsx's wrapper). */
  pid: number;
  token: string;
  networkId: number;
  database: TestDatabase;
  /** Its APP_KEY (a second process on the same database needs the same). */
  appKey: string;
  /** Peak resident memory of the service process so far (VmHWM), MiB. */
  peakRssMiB(): number;
  /** Resident memory now (VmRSS), MiB. */
  rssMiB(): number;
  /** CPU time of the service process so far, ms. */
  cpuMs(): number;
  stop(): Promise<void>;
}

function procChildren(): Map<number, number[]> {
  const children = new Map<number, number[]>();
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      const list = children.get(ppid) ?? [];
      list.push(Number(name));
      children.set(ppid, list);
    } catch {
      // gone meanwhile
    }
  }
  return children;
}

function cmdline(pid: number): string {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').replaceAll('\0', ' ');
  } catch {
    return '';
  }
}

/** The deepest descendant of `root` whose command line contains `needle`. */
function findDescendant(root: number, needle: string): number | null {
  const children = procChildren();
  let found: number | null = null;
  const walk = (pid: number) => {
    for (const c of children.get(pid) ?? []) {
      if (cmdline(c).includes(needle)) found = c;
      walk(c);
    }
  };
  walk(root);
  return found;
}

function statusKiB(pid: number, field: 'VmHWM' | 'VmRSS'): number {
  const m = new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Number(m[1]) : 0;
}

export function processCpuMs(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(f[11]) + Number(f[12])) * 10;
}

function killGroup(child: ChildProcess, signal: NodeJS.Signals): void {
  try {
    process.kill(-child.pid!, signal);
  } catch {
    // already gone
  }
}

async function waitExit(child: ChildProcess, ms: number): Promise<boolean> {
  if (child.exitCode !== null || child.signalCode !== null) return true;
  return Promise.race([new Promise<boolean>((r) => child.once('exit', () => r(true))), sleep(ms).then(() => false)]);
}

async function until<T>(what: string, ms: number, probe: () => Promise<T | null>): Promise<T> {
  const deadline = Date.now() + ms;
  let last: unknown = null;
  while (Date.now() < deadline) {
    try {
      const v = await probe();
      if (v !== null) return v;
    } catch (e) {
      last = e;
    }
    await sleep(100);
  }
  throw new Error(`${what}: not within ${ms} ms${last ? ` (${last instanceof Error ? String(last) : JSON.stringify(last)})` : ''}`);
}

/**
 * `npm start` on a fresh database (or on `database`, shared with another process), its devnet
 * the anvil at `rpcUrl`. The service's stdout and stderr go to `<dataDir>/service.log`.
 */
export async function startServiceProcess(opts: {
  driver: Driver;
  rpcUrl: string;
  env?: Record<string, string>;
  /** A database another process already uses (scale-out); its migrations have run. */
  database?: TestDatabase;
  appKey?: string;
  label?: string;
}): Promise<ServiceProcess> {
  const database = opts.database ?? (await freshDatabase(opts.driver === 'postgres' ? postgresBase() : null, 'bench'));
  const port = await findFreePort();
  const appKey = opts.appKey ?? randomBytes(32).toString('base64');
  const email = 'bench@example.com';
  const password = 'bench-password-1';
  const env: Record<string, string> = {
    PATH: process.env.PATH ?? '',
    HOME: process.env.HOME ?? '/tmp',
    APP_KEY: appKey,
    DATA_DIR: database.dataDir,
    PORT: String(port),
    DEVNET_RPC_URL: opts.rpcUrl,
    BOOTSTRAP_EMAIL: email,
    BOOTSTRAP_PASSWORD: password,
    RATE_LIMIT_PER_MINUTE: '1000000',
    ...(database.databaseUrl ? { DATABASE_URL: database.databaseUrl } : {}),
    // BENCH_NODE_OPTIONS="--import ./bench/cpu-profile.mjs": CPU profiles of the measured part.
    ...(process.env.BENCH_NODE_OPTIONS ? { NODE_OPTIONS: process.env.BENCH_NODE_OPTIONS } : {}),
    ...benchEnv(),
    ...opts.env,
  };
  const logFile = join(database.dataDir, `service${opts.label ? `-${opts.label}` : ''}.log`);
  // As `npm start >> service.log 2>&1`: the file itself, no process of the bench's relaying it.
  const log = openSync(logFile, 'a');
  const child = spawn('npm', ['start', '--silent'], { cwd: ROOT, env, detached: true, stdio: ['ignore', log, log] });
  const base = `http://127.0.0.1:${port}`;
  let exited = false;
  child.once('exit', () => (exited = true));
  const token = await until('the service to answer a login', 60_000, async () => {
    if (exited) throw new Error(`npm start exited; see ${logFile}:\n${readFileSync(logFile, 'utf8').slice(-2000)}`);
    const res = await fetch(`${base}/api/auth/login`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ email, password }),
    });
    if (res.status !== 200) return null;
    return ((await res.json()) as { data: { token: string } }).data.token;
  });
  const pid = findDescendant(child.pid!, 'src/server.ts');
  if (pid === null) throw new Error('no service process under npm start');
  const networks = (await (await fetch(`${base}/api/networks`, { headers: { authorization: `Bearer ${token}` } })).json()) as {
    data: Array<{ id: number; chain_id: number }>;
  };
  const devnet = networks.data.find((n) => n.chain_id === 31337);
  if (!devnet) throw new Error(`no devnet network: ${JSON.stringify(networks)}`);
  return {
    base,
    pid,
    token,
    networkId: devnet.id,
    database,
    appKey,
    peakRssMiB: () => statusKiB(pid, 'VmHWM') / 1024,
    rssMiB: () => statusKiB(pid, 'VmRSS') / 1024,
    cpuMs: () => processCpuMs(pid),
    stop: async () => {
      killGroup(child, 'SIGTERM');
      if (!(await waitExit(child, 15_000))) killGroup(child, 'SIGKILL');
      // npm may exit before the server (its grandchild) has: wait for the server too.
      for (let i = 0; i < 150 && existsSync(`/proc/${pid}`); i++) await sleep(100);
      closeSync(log);
      if (!opts.database) await database.drop();
    },
  };
}

/** A wallet on the service's devnet, made through its API; its id. */
export async function createBenchWallet(service: ServiceProcess, name = 'Bench'): Promise<number> {
  const res = await fetch(`${service.base}/api/wallet/create`, {
    method: 'POST',
    headers: { authorization: `Bearer ${service.token}`, 'content-type': 'application/json' },
    body: JSON.stringify({ name, network_id: service.networkId }),
  });
  if (res.status !== 200) throw new Error(`wallet create: ${res.status} ${await res.text()}`);
  return ((await res.json()) as { data: { id: number } }).data.id;
}

export interface BareProcess {
  url: string;
  pid: number;
  peakRssMiB(): number;
  cpuMs(): number;
  stop(): Promise<void>;
}

/**
 * bench/bare-server.ts in its own process: GET /bare answers `body` — `object`: the parsed JSON
 * returned from the handler (Fastify serialises it per request), `bytes`: the same bytes sent as
 * they are (the floor of sending that answer); `relay`: `body` is the relay's settings and
 * `url` its base (bench/webhooks.ts).
 */
export async function startBareProcess(body: string, mode: 'object' | 'bytes' | 'relay', dir: string): Promise<BareProcess> {
  const file = join(dir, `bare-${randomBytes(4).toString('hex')}.json`);
  writeFileSync(file, body);
  const port = await findFreePort();
  const child = spawn(process.execPath, ['--import', 'tsx', join(ROOT, 'bench', 'bare-server.ts'), file, mode, String(port)], {
    cwd: ROOT,
    detached: true,
    stdio: ['ignore', 'inherit', 'inherit'],
  });
  const url = `http://127.0.0.1:${port}/bare`;
  await until('the bare server', 30_000, async () => ((await fetch(url)).status === 200 ? true : null));
  const pid = child.pid!;
  return {
    url,
    pid,
    peakRssMiB: () => statusKiB(pid, 'VmHWM') / 1024,
    cpuMs: () => processCpuMs(pid),
    stop: async () => {
      killGroup(child, 'SIGTERM');
      if (!(await waitExit(child, 5000))) killGroup(child, 'SIGKILL');
    },
  };
}

const profiling = new Set<number>();

/**
 * With BENCH_NODE_OPTIONS="--import ./bench/cpu-profile.mjs": starts each process's CPU profile,
 * or (the next call) ends it and waits until the process has written it (a process stopped at
 * once after the signal would not have).
 */
export async function profileSignal(targets: Array<{ pid: number }>): Promise<void> {
  if (!process.env.BENCH_NODE_OPTIONS?.includes('cpu-profile')) return;
  const dir = process.env.BENCH_PROFILE_DIR ?? '/tmp/prof';
  const written = (pid: number) => (existsSync(dir) ? readdirSync(dir).filter((f) => f.startsWith(`${pid}-`)).length : 0);
  const stopping = targets.filter((t) => profiling.has(t.pid)).map((t) => ({ pid: t.pid, before: written(t.pid) }));
  for (const t of targets) {
    process.kill(t.pid, 'SIGUSR2');
    if (!profiling.delete(t.pid)) profiling.add(t.pid);
  }
  for (const s of stopping)
    await until(`the CPU profile of process ${s.pid}`, 60_000, async () => (written(s.pid) > s.before ? true : null));
}
