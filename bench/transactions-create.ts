/**
 * Benchmark: POST /api/wallet/{wallet}/transaction/create against bare viem sign + send to the
 * same anvil, in the same process and run, on SQLite and on PostgreSQL.
 *
 *   npm run bench:create [-- --count 600 --concurrency 10 --wallets 10 --db sqlite,postgres
 *                           --workers on --sync FULL --idempotency --trace 20]
 *
 * Per database: a fresh anvil (automine, as the service sees it), then
 *
 * 1. the baseline, bare viem: `--concurrency` funded accounts (local keys), one loop each,
 *    `--count` transfers of 1 wei in all, each signed locally (explicit nonce, gas 21000, fees
 *    read once before) and sent with `eth_sendRawTransaction`;
 * 2. the service (a fresh SQLite folder, or a fresh PostgreSQL database on DATABASE_URL, default
 *    postgres://postgres@127.0.0.1:5432/test), listening on a real port, with the workers of
 *    `npm start` (WORKERS defaults to true: the watcher records every automined block meanwhile)
 *    unless `--workers off`: `--count` creates of 1 wei at concurrency `--concurrency` over HTTP
 *    (undici pool, keep-alive), spread round robin over `--wallets` funded wallets (loop k uses
 *    wallet k mod W), then the same over one wallet (creates of one wallet run one at a time by
 *    design: the wallet's row lock around nonce allocation).
 *
 * The ratio is creates/s over the baseline's transfers/s of the same database's run. With
 * `--idempotency` every create carries a fresh Idempotency-Key (two more commits: the claim and
 * the final answer). `--sync NORMAL` (SQLite) sets `PRAGMA synchronous = NORMAL` after start, for
 * comparison with the service's FULL; `--sync FULL,NORMAL` measures both. `--trace N` (after the
 * timed part, workers stopped) counts the JSON-RPC calls and SQL statements of N sequential
 * creates and prints them per create.
 *
 * MAX_PENDING_PER_WALLET is lifted (100000): the watcher confirms on its 1 s poll, and a single
 * wallet has far more than 64 unconfirmed transfers in a second at these rates.
 *
 * Prints a markdown table and writes it to bench/results/transactions-create.md. Never run by
 * `npm test`.
 */
import { randomBytes } from 'node:crypto';
import diagnostics from 'node:diagnostics_channel';
import { cpus } from 'node:os';
import { dirname, join } from 'node:path';
import { Writable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import SQLite from 'better-sqlite3';
import { sql } from 'kysely';
import pg from 'pg';
import { Pool } from 'undici';
import { createPublicClient, http, type Address, type Hex } from 'viem';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { findFreePort, startDevnet, type Devnet } from '../src/chain/devnet.js';
import { createLogger } from '../src/logger.js';
import { startWorkers } from '../src/workers/index.js';
import { cpuMeter, type CpuSplit, parseDatabases, percentile, positiveInt, nonNegativeInt, startBenchService, type Driver, runBench, writeReport } from './common.js';

const HERE = dirname(fileURLToPath(import.meta.url));
const RESULTS_FILE = join(HERE, 'results', 'transactions-create.md');
const RECIPIENT: Address = '0xa0Ee7A142d267C1f36714E4a8F75612F20a79720';
const FUNDS = 10n ** 24n;

const { values: flags } = parseArgs({
  options: {
    count: { type: 'string', default: '600' },
    concurrency: { type: 'string', default: '10' },
    wallets: { type: 'string', default: '10' },
    db: { type: 'string', default: 'sqlite,postgres' },
    workers: { type: 'string', default: 'on' },
    sync: { type: 'string', default: 'FULL' },
    warmup: { type: 'string', default: '20' },
    idempotency: { type: 'boolean', default: false },
    trace: { type: 'string', default: '0' },
  },
});
const count = positiveInt('count', flags.count);
const concurrency = positiveInt('concurrency', flags.concurrency);
const walletCount = positiveInt('wallets', flags.wallets);
const warmup = nonNegativeInt('warmup', flags.warmup);
const traceCount = nonNegativeInt('trace', flags.trace);
const databases = parseDatabases(flags.db);
if (flags.workers !== 'on' && flags.workers !== 'off') throw new Error('--workers on|off');
const withWorkers = flags.workers === 'on';
type Sync = 'FULL' | 'NORMAL';
const syncs = flags.sync.split(',').map((s) => s.trim().toUpperCase()) as Sync[];
for (const s of syncs) if (s !== 'FULL' && s !== 'NORMAL') throw new Error(`--sync: FULL or NORMAL, got ${s}`);

interface Run {
  perSecond: number;
  p50: number;
  p99: number;
  /** CPU µs per operation: this process (service, client, baseline), anvil, PostgreSQL. */
  cpu: CpuSplit;
}

/** The anvil of the database being measured (its CPU is metered per run). */
let anvilPort = 0;

function summarise(times: number[], elapsedMs: number, cpu: CpuSplit): Run {
  const sorted = [...times].sort((a, b) => a - b);
  const per = (ms: number) => (ms * 1000) / times.length;
  return {
    perSecond: (times.length / elapsedMs) * 1000,
    p50: percentile(sorted, 50),
    p99: percentile(sorted, 99),
    cpu: { self: per(cpu.self), anvil: per(cpu.anvil), postgres: per(cpu.postgres) },
  };
}

/** Runs `total` jobs over `loops` concurrent loops; job(i, loop) is timed one by one. */
async function drive(total: number, loops: number, job: (i: number, loop: number) => Promise<void>): Promise<Run> {
  const times: number[] = [];
  let next = 0;
  const meter = cpuMeter(anvilPort);
  const started = performance.now();
  await Promise.all(
    Array.from({ length: loops }, async (_, loop) => {
      while (next < total) {
        const i = next++;
        const t0 = performance.now();
        await job(i, loop);
        times.push(performance.now() - t0);
      }
    }),
  );
  const elapsed = performance.now() - started;
  return summarise(times, elapsed, meter.read());
}

async function rpc(url: string, method: string, params: unknown[]): Promise<unknown> {
  const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }) });
  const json = (await res.json()) as { result?: unknown; error?: { message: string } };
  if (json.error) throw new Error(`${method}: ${json.error.message}`);
  return json.result;
}

const fund = (devnet: Devnet, address: string) => rpc(devnet.rpcUrl, 'anvil_setBalance', [address, `0x${FUNDS.toString(16)}`]);

/** The baseline: bare viem, local keys, explicit nonces and fees, eth_sendRawTransaction. */
async function baseline(devnet: Devnet): Promise<Run> {
  const client = createPublicClient({ transport: http(devnet.rpcUrl) });
  const accounts = Array.from({ length: concurrency }, () => privateKeyToAccount(generatePrivateKey()));
  for (const a of accounts) await fund(devnet, a.address);
  const nonces = await Promise.all(accounts.map((a) => client.getTransactionCount({ address: a.address, blockTag: 'pending' })));
  const fees = await client.estimateFeesPerGas();
  const send = async (_i: number, loop: number) => {
    const account = accounts[loop]!;
    const raw = await account.signTransaction({
      chainId: 31337,
      type: 'eip1559',
      nonce: nonces[loop]!++,
      gas: 21_000n,
      maxFeePerGas: fees.maxFeePerGas,
      maxPriorityFeePerGas: fees.maxPriorityFeePerGas,
      to: RECIPIENT,
      value: 1n,
    });
    await client.sendRawTransaction({ serializedTransaction: raw });
  };
  await drive(Math.min(warmup, count), concurrency, send);
  return drive(count, concurrency, send);
}

/** The service on one database, listening, with `walletCount` funded wallets. */
async function startService(driver: Driver, devnet: Devnet, sync: Sync) {
  const service = await startBenchService({
    driver,
    rpcUrl: devnet.rpcUrl,
    env: { LOG_LEVEL: 'info', WORKERS: String(withWorkers), MAX_PENDING_PER_WALLET: '100000' },
    // Production log level; lines are serialised as in production, then dropped.
    log: createLogger('info', new Writable({ write: (_c, _e, cb) => cb() }) as never),
    afterOpen: async (store) => {
      if (driver !== 'sqlite') return;
      await sql.raw(`PRAGMA synchronous = ${sync}`).execute(store.db);
      const mode = await sql.raw<{ synchronous: number }>('PRAGMA synchronous').execute(store.db);
      if (mode.rows[0]?.synchronous !== (sync === 'FULL' ? 2 : 1)) throw new Error(`synchronous is not ${sync}`);
    },
  });
  const { base, ctx, services, token } = service;
  const network = { id: service.networkId };
  const pool = new Pool(base, { connections: concurrency, pipelining: 1 });
  const call = async (path: string, token: string | null, body: unknown, extra: Record<string, string> = {}) => {
    const res = await pool.request({
      method: 'POST',
      path,
      headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}), ...extra },
      body: JSON.stringify(body),
    });
    const text = await res.body.text();
    if (res.statusCode !== 200) throw new Error(`POST ${path}: ${res.statusCode} ${text}`);
    return JSON.parse(text) as { data: any };
  };
  const wallets: number[] = [];
  for (let i = 0; i < walletCount; i++) {
    const w = (await call('/api/wallet/create', token, { name: `bench ${i}`, network_id: network.id })).data as { id: number; address: Address };
    await fund(devnet, w.address);
    wallets.push(w.id);
  }
  const workers = withWorkers ? startWorkers(ctx, services) : null;
  const create = (walletId: number) =>
    call(
      `/api/wallet/${walletId}/transaction/create`,
      token,
      { amount: '0.000000000000000001', token: 'ETH', address: RECIPIENT },
      flags.idempotency ? { 'idempotency-key': randomBytes(12).toString('hex') } : {},
    );
  return {
    driver,
    wallets,
    create,
    stopWorkers: async () => workers?.stop(),
    close: async () => {
      await pool.close();
      await workers?.stop();
      await service.close();
    },
  };
}

type Service = Awaited<ReturnType<typeof startService>>;

async function measureService(s: Service, wallets: number[]): Promise<Run> {
  const job = async (_i: number, loop: number) => {
    await s.create(wallets[loop % wallets.length]!);
  };
  await drive(Math.min(warmup, count), concurrency, job);
  return drive(count, concurrency, job);
}

/** Counts what `traceCount` sequential creates send to the node and to the database. */
async function trace(s: Service, devnet: Devnet): Promise<string> {
  const rpcCalls = new Map<string, number>();
  const statements = new Map<string, number>();
  const bump = (m: Map<string, number>, k: string) => m.set(k, (m.get(k) ?? 0) + 1);
  const kindOf = (text: string) => {
    const t = text.trim().toLowerCase();
    const first = t.split(/\s+/)[0] ?? '';
    if (first === 'select' && t.includes('for update')) return 'select … for update';
    if (first === 'select' && t.includes('pg_advisory_xact_lock')) return 'select pg_advisory_xact_lock';
    if (first === 'select' && t.includes('pg_notify')) return 'select pg_notify';
    return first;
  };
  // The chain clients send through undici's request (src/chain/rpc-fetch.ts): count at its channel.
  const origin = new URL(devnet.rpcUrl).origin;
  let httpRequests = 0;
  const onRequest = (message: unknown) => {
    const { request } = message as { request: { origin: string; body: unknown } };
    if (request.origin !== origin || request.body === null) return;
    httpRequests += 1;
    const body = JSON.parse(String(request.body)) as { method: string } | Array<{ method: string }>;
    for (const b of Array.isArray(body) ? body : [body]) bump(rpcCalls, b.method);
  };
  diagnostics.subscribe('undici:request:create', onRequest);
  const stmtProto = Object.getPrototypeOf(new SQLite(':memory:').prepare('select 1')) as { all: Function; run: Function; get: Function; source: string };
  const saved = { all: stmtProto.all, run: stmtProto.run, get: stmtProto.get };
  for (const m of ['all', 'run', 'get'] as const) {
    const orig = saved[m];
    stmtProto[m] = function (this: { source: string }, ...args: unknown[]) {
      bump(statements, kindOf(this.source));
      return orig.apply(this, args);
    };
  }
  // Every statement node-postgres sends is a Query submitted to the connection (named or not).
  const queryProto = (pg as unknown as { Query: { prototype: { submit: Function; text?: string } } }).Query.prototype;
  const submit = queryProto.submit;
  queryProto.submit = function (this: { text?: string }, ...args: unknown[]) {
    bump(statements, kindOf(this.text ?? ''));
    return submit.apply(this, args);
  };
  try {
    for (let i = 0; i < traceCount; i++) await s.create(s.wallets[0]!);
  } finally {
    diagnostics.unsubscribe('undici:request:create', onRequest);
    stmtProto.all = saved.all;
    stmtProto.run = saved.run;
    stmtProto.get = saved.get;
    queryProto.submit = submit;
  }
  const per = (m: Map<string, number>) =>
    [...m.entries()]
      .sort((a, b) => b[1] - a[1])
      .map(([k, n]) => `${k} ${(n / traceCount).toFixed(1)}`)
      .join(', ');
  const total = (m: Map<string, number>) => ([...m.values()].reduce((a, b) => a + b, 0) / traceCount).toFixed(1);
  return (
    `${s.driver}, per create (${traceCount} sequential creates${flags.idempotency ? ' with Idempotency-Key' : ''}, workers stopped): ` +
    `JSON-RPC calls ${total(rpcCalls)} in ${(httpRequests / traceCount).toFixed(1)} HTTP requests (${per(rpcCalls)}); SQL statements ${total(statements)} (${per(statements)})`
  );
}

interface Row {
  label: string;
  base: Run;
  many: Run;
  one: Run;
}

async function runDatabase(driver: Driver, sync: Sync): Promise<{ row: Row; traced: string | null }> {
  anvilPort = await findFreePort();
  const devnet = await startDevnet({ port: anvilPort });
  try {
    process.stderr.write(`${driver}${driver === 'sqlite' ? ` ${sync}` : ''}: baseline ... `);
    const base = await baseline(devnet);
    const s = await startService(driver, devnet, sync);
    try {
      process.stderr.write(`${walletCount} wallets ... `);
      const many = await measureService(s, s.wallets);
      process.stderr.write('one wallet ... ');
      const one = await measureService(s, s.wallets.slice(0, 1));
      process.stderr.write('done\n');
      await s.stopWorkers();
      const traced = traceCount > 0 ? await trace(s, devnet) : null;
      const label = driver === 'sqlite' ? `SQLite (synchronous=${sync})` : 'PostgreSQL';
      return { row: { label, base, many, one }, traced };
    } finally {
      await s.close();
    }
  } finally {
    await devnet.stop();
  }
}

function table(rows: Row[]): string {
  const f = (n: number, d = 1) => n.toFixed(d);
  const lines = [
    '| Database | What | per second | p50 ms | p99 ms | CPU µs/op: this process / anvil / PostgreSQL | ratio to bare viem |',
    '|---|---|---:|---:|---:|---:|---:|',
  ];
  const cpu = (r: Run) => `${f(r.cpu.self, 0)} / ${f(r.cpu.anvil, 0)} / ${f(r.cpu.postgres, 0)}`;
  for (const r of rows) {
    lines.push(
      `| ${r.label} | bare viem sign + eth_sendRawTransaction, ${concurrency} accounts | ${f(r.base.perSecond)} | ${f(r.base.p50, 2)} | ${f(r.base.p99, 2)} | ${cpu(r.base)} | 1 |`,
    );
    lines.push(
      `| ${r.label} | create, ${walletCount} wallets | ${f(r.many.perSecond)} | ${f(r.many.p50, 2)} | ${f(r.many.p99, 2)} | ${cpu(r.many)} | **${f(r.many.perSecond / r.base.perSecond, 3)}** |`,
    );
    lines.push(`| ${r.label} | create, 1 wallet | ${f(r.one.perSecond)} | ${f(r.one.p50, 2)} | ${f(r.one.p99, 2)} | ${cpu(r.one)} | ${f(r.one.perSecond / r.base.perSecond, 3)} |`);
  }
  return lines.join('\n');
}

async function main(): Promise<void> {
  const started = Date.now();
  const rows: Row[] = [];
  const traces: string[] = [];
  for (const driver of databases) {
    for (const sync of driver === 'sqlite' ? syncs : (['FULL'] as Sync[])) {
      const { row, traced } = await runDatabase(driver, sync);
      rows.push(row);
      if (traced) traces.push(traced);
    }
  }
  const args = process.argv.slice(2);
  const command = `npm run bench:create${args.length ? ` -- ${args.join(' ')}` : ''}`;
  const cpu = cpus();
  const report = [
    '## Transaction create vs bare viem sign + send to the same anvil',
    '',
    table(rows),
    '',
    `Command: \`${command}\`. ${count} operations per line at concurrency ${concurrency} (after ${warmup} warm-up ones), ` +
      `workers ${withWorkers ? 'on (as `npm start`)' : 'off'}, ${flags.idempotency ? 'a fresh Idempotency-Key on every create' : 'no Idempotency-Key'}; ` +
      `anvil automines. ${new Date().toISOString().slice(0, 10)}, Node ${process.version}, ${cpu.length} × ${cpu[0]?.model.trim() ?? 'unknown CPU'}, ` +
      'shared with other work; anvil, PostgreSQL, the HTTP client and the service on the same machine (the client and the baseline in the service\'s process).',
    ...(traces.length ? ['', ...traces.map((t) => `- ${t}`)] : []),
    '',
  ].join('\n');
  writeReport(RESULTS_FILE, report, started);
}

runBench(main);
