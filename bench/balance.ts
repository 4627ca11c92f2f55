/**
 * Benchmark: GET /api/wallet/{wallet}/balance against a bare Fastify route that returns a
 * constant JSON object, in the same run, on SQLite and on PostgreSQL.
 *
 *   npm run bench:balance [-- --duration 10 --connections 10 --max-age 5 --db sqlite,postgres --redis redis://127.0.0.1:6379]
 *
 * It starts anvil, deploys an ERC-20 (solc), and for each database starts the real service
 * (fresh SQLite folder; fresh PostgreSQL database on DATABASE_URL, default
 * postgres://postgres@127.0.0.1:5432/test, dropped afterwards), creates a user and a wallet
 * holding native currency and a token, then runs autocannon (a separate process, so the load
 * generator does not share the server's event loop) against the bare route and the balance
 * route with the same duration and connections. The balance route goes through everything a
 * real request does: bearer-token lookup, rate limit, wallet guard, tokens, the balance cache,
 * and a chain re-read whenever the cache is older than BALANCE_MAX_AGE_S (default 5 s, so
 * most requests are answered from the cache; with --max-age 0 every request waits for a chain
 * read, concurrent requests sharing one).
 *
 * `--redis URL` sets REDIS_URL, so the per-user rate limit counts in Redis instead of in
 * PostgreSQL (with PostgreSQL) or in memory (with SQLite).
 *
 * Prints a markdown table and writes it to bench/results/balance.md. Never run by `npm test`.
 */
import { execFile } from 'node:child_process';
import { nonNegativeInt, parseDatabases, positiveInt, startBenchService, runBench, writeReport } from './common.js';
import { cpus } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createRequire } from 'node:module';
import { parseArgs } from 'node:util';
import Fastify from 'fastify';
import pg from 'pg';
import type { Address, Hex } from 'viem';
import { findFreePort, startDevnet, type Devnet } from '../src/chain/devnet.js';
import { deployErc20, mintErc20 } from '../test/helpers/erc20.js';

const HERE = dirname(fileURLToPath(import.meta.url));
const RESULTS_FILE = join(HERE, 'results', 'balance.md');

const { values: flags } = parseArgs({
  options: {
    duration: { type: 'string', default: '10' },
    connections: { type: 'string', default: '10' },
    'max-age': { type: 'string', default: '5' },
    db: { type: 'string', default: 'sqlite,postgres' },
    warmup: { type: 'string', default: '2' },
    redis: { type: 'string' },
  },
});
const durationS = positiveInt('duration', flags.duration);
const connections = positiveInt('connections', flags.connections);
const warmupS = nonNegativeInt('warmup', flags.warmup);
const maxAgeS = nonNegativeInt('max-age', flags['max-age']);
const databases = parseDatabases(flags.db);


interface LoadResult {
  rps: number;
  p50Ms: number;
  p99Ms: number;
  requests: number;
  non2xx: number;
  errors: number;
  /** CPU time of this process (the server) per request, in µs: steadier than req/s on a busy machine. */
  cpuUsPerRequest: number;
}

const autocannonBin = join(dirname(createRequire(import.meta.url).resolve('autocannon/package.json')), 'autocannon.js');

/** Runs autocannon in its own process and returns its JSON summary. */
function autocannon(url: string, seconds: number, headers: Record<string, string>): Promise<Omit<LoadResult, 'cpuUsPerRequest'>> {
  const args = [autocannonBin, '-c', String(connections), '-d', String(seconds), '-j', '-n'];
  for (const [k, v] of Object.entries(headers)) args.push('-H', `${k}=${v}`);
  args.push(url);
  return new Promise((resolve, reject) => {
    execFile(process.execPath, args, { maxBuffer: 64 * 1024 * 1024 }, (err, stdout) => {
      if (err) return reject(err);
      const r = JSON.parse(stdout) as {
        requests: { average: number; total: number };
        latency: { p50: number; p99: number };
        non2xx: number;
        errors: number;
      };
      resolve({ rps: r.requests.average, p50Ms: r.latency.p50, p99Ms: r.latency.p99, requests: r.requests.total, non2xx: r.non2xx, errors: r.errors });
    });
  });
}

async function measure(url: string, headers: Record<string, string> = {}): Promise<LoadResult> {
  if (warmupS > 0) await autocannon(url, warmupS, headers);
  const cpuBefore = process.cpuUsage();
  const r = await autocannon(url, durationS, headers);
  const cpu = process.cpuUsage(cpuBefore);
  if (r.non2xx > 0 || r.errors > 0) throw new Error(`${url}: ${r.non2xx} non-2xx answers and ${r.errors} errors`);
  return { ...r, cpuUsPerRequest: (cpu.user + cpu.system) / r.requests };
}

/** A bare Fastify app with one constant JSON route: the ceiling for this machine. */
async function startBare() {
  const app = Fastify({ logger: false });
  const body = { status: 'success', message: 'OK', data: { balance: '1.500000000000000000' } };
  app.get('/const', async () => body);
  await app.listen({ host: '127.0.0.1', port: 0 });
  const address = app.server.address();
  if (address === null || typeof address === 'string') throw new Error('no address');
  return { url: `http://127.0.0.1:${address.port}/const`, close: () => app.close() };
}

async function call(url: string, method: string, path: string, token: string | null, body?: unknown) {
  const res = await fetch(`${url}${path}`, {
    method,
    headers: { ...(token ? { authorization: `Bearer ${token}` } : {}), ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const json = (await res.json()) as { status: string; message: string; data: any };
  if (res.status !== 200) throw new Error(`${method} ${path}: ${res.status} ${JSON.stringify(json)}`);
  return json;
}

/** Starts the service on one database with a funded wallet; returns the balance URL and token. */
async function startService(driver: 'sqlite' | 'postgres', devnet: Devnet, token20: Address) {
  const service = await startBenchService({
    driver,
    rpcUrl: devnet.rpcUrl,
    env: { BALANCE_MAX_AGE_S: String(maxAgeS), ...(flags.redis ? { REDIS_URL: flags.redis } : {}) },
  });
  const { base, token } = service;
  const wallet = (await call(base, 'POST', '/api/wallet/create', token, { name: 'Bench', network_id: service.networkId })).data as { id: number; address: Address };
  await rpc(devnet.rpcUrl, 'anvil_setBalance', [wallet.address, `0x${(1_500_000_000_000_000_000n).toString(16)}` as Hex]);
  await call(base, 'POST', `/api/wallet/${wallet.id}/token/add`, token, { contract: token20 });
  await mintErc20(devnet.rpcUrl, token20, wallet.address, 2_500_000n);
  const check = await call(base, 'GET', `/api/wallet/${wallet.id}/balance`, token);
  if (check.data.balance !== '1.500000000000000000' || check.data.tokens[1]?.balance !== '2.500000000000000000') {
    throw new Error(`unexpected balance before the run: ${JSON.stringify(check.data)}`);
  }
  return { url: `${base}/api/wallet/${wallet.id}/balance`, token, databaseUrl: service.database.databaseUrl, close: service.close };
}

async function rpc(url: string, method: string, params: unknown[]): Promise<unknown> {
  const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }) });
  const json = (await res.json()) as { result?: unknown; error?: { message: string } };
  if (json.error) throw new Error(`${method}: ${json.error.message}`);
  return json.result;
}

interface Row {
  driver: string;
  bare: LoadResult;
  balance: LoadResult;
  /** PostgreSQL only: the bare route plus one primary-key SELECT per request. */
  floor?: LoadResult;
}

function table(rows: Row[]): string {
  const f = (n: number, d = 0) => n.toLocaleString('en-US', { minimumFractionDigits: d, maximumFractionDigits: d });
  // autocannon's latency histogram has 1 ms resolution: 0 means under 1 ms.
  const ms = (n: number) => (n === 0 ? '< 1' : f(n));
  const lines = [
    '| Database | Route | Requests/s (mean) | p50 (ms) | p99 (ms) | Server CPU µs/request | Requests | **/ bare (req/s)** | / bare (CPU per request) |',
    '|---|---|---:|---:|---:|---:|---:|---:|---:|',
  ];
  const line = (driver: string, name: string, r: LoadResult, bare: LoadResult | null) =>
    `| ${driver} | ${name} | ${f(r.rps)} | ${ms(r.p50Ms)} | ${ms(r.p99Ms)} | ${f(r.cpuUsPerRequest)} | ${f(r.requests)} | ` +
    (bare ? `**${f(r.rps / bare.rps, 3)}×** | ${f(bare.cpuUsPerRequest / r.cpuUsPerRequest, 3)}× |` : '1.000× | 1.000× |');
  for (const r of rows) {
    lines.push(line(r.driver, 'bare Fastify, constant JSON', r.bare, null));
    if (r.floor) lines.push(line(r.driver, 'bare Fastify + one PostgreSQL SELECT by primary key', r.floor, r.bare));
    lines.push(line(r.driver, 'GET /api/wallet/{wallet}/balance', r.balance, r.bare));
  }
  return lines.join('\n');
}

/**
 * The bare route plus one indexed SELECT through a pg pool of the service's size: the least any
 * route that must ask PostgreSQL once per request (a logout seen at once by every process) costs.
 */
async function startFloor(databaseUrl: string) {
  const pool = new pg.Pool({ connectionString: databaseUrl, max: 10 });
  const app = Fastify({ logger: false });
  app.get('/one', async () => {
    const r = await pool.query('SELECT id, email FROM users WHERE id = $1', [1]);
    return { status: 'success', message: 'OK', data: { balance: '1.500000000000000000', n: r.rowCount } };
  });
  await app.listen({ host: '127.0.0.1', port: 0 });
  const address = app.server.address();
  if (address === null || typeof address === 'string') throw new Error('no address');
  return {
    url: `http://127.0.0.1:${address.port}/one`,
    close: async () => {
      await app.close();
      await pool.end();
    },
  };
}

async function main(): Promise<void> {
  const started = Date.now();
  const devnet = await startDevnet({ port: await findFreePort() });
  const bare = await startBare();
  const rows: Row[] = [];
  try {
    const token20 = await deployErc20(devnet.rpcUrl, { name: 'Bench USD', symbol: 'BUSD', decimals: 6 });
    for (const driver of databases as Array<'sqlite' | 'postgres'>) {
      const service = await startService(driver, devnet, token20);
      try {
        process.stderr.write(`${driver}: bare route ${durationS}s ... `);
        const bareResult = await measure(bare.url);
        let floorResult: LoadResult | undefined;
        if (service.databaseUrl) {
          process.stderr.write(`one-query route ${durationS}s ... `);
          const floor = await startFloor(service.databaseUrl);
          floorResult = await measure(floor.url).finally(() => floor.close());
        }
        process.stderr.write(`balance route ${durationS}s ... `);
        const balanceResult = await measure(service.url, { authorization: `Bearer ${service.token}` });
        process.stderr.write('done\n');
        rows.push({ driver: driver === 'sqlite' ? 'SQLite' : 'PostgreSQL', bare: bareResult, balance: balanceResult, floor: floorResult });
      } finally {
        await service.close();
      }
    }
  } finally {
    await bare.close();
    await devnet.stop();
  }

  const extra: string[] = [];
  if (flags.duration !== '10') extra.push(`--duration ${durationS}`);
  if (flags.connections !== '10') extra.push(`--connections ${connections}`);
  if (flags['max-age'] !== '5') extra.push(`--max-age ${maxAgeS}`);
  if (flags.db !== 'sqlite,postgres') extra.push(`--db ${flags.db}`);
  if (flags.warmup !== '2') extra.push(`--warmup ${warmupS}`);
  if (flags.redis) extra.push(`--redis ${flags.redis}`);
  const command = `npm run bench:balance${extra.length ? ` -- ${extra.join(' ')}` : ''}`;
  const cpu = cpus();
  const report = [
    '## GET /api/wallet/{wallet}/balance vs a bare Fastify route',
    '',
    table(rows),
    '',
    `Command: \`${command}\` (autocannon, ${connections} connections, ${durationS} s per route after a ${warmupS} s warm-up, ` +
      `the two routes measured one after the other in the same run). ` +
      `${new Date().toISOString().slice(0, 10)}, Node ${process.version}, ${cpu.length} × ${cpu[0]?.model.trim() ?? 'unknown CPU'}; ` +
      `anvil, PostgreSQL and the load generator on the same machine. Latencies have autocannon's 1 ms resolution.`,
    '',
    `BALANCE_MAX_AGE_S=${maxAgeS}: ` +
      (maxAgeS > 0
        ? `the balance is re-read from the chain at most once every ${maxAgeS} s per wallet (a shared read), so almost every request ` +
          'is answered from the WalletBalance cache. Such a request reads the bearer token and user, the wallet guard and the active ' +
          'tokens with their cached balances, counts the rate limit and serialises the answer. On SQLite the three reads come from ' +
          "the read cache; on PostgreSQL the wallet guard and balances do, and the token's lookup (with the request's count when the " +
          'counters are in PostgreSQL) is one statement, shared by the requests that arrive while two are out. The bare route is ' +
          'the ceiling of this machine for Fastify itself.'
        : 'every request waits for a chain read of the native and the token balance (two JSON-RPC calls to anvil, shared by the ' +
          'requests that arrive while it runs) and its cache write.'),
    '',
  ].join('\n');
  writeReport(RESULTS_FILE, report, started);
}

runBench(main);
