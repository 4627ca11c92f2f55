/**
 * Benchmark: GET /api/wallet/{wallet}/balance as a user meets it, against a bare Fastify
 * process answering the same JSON, in the same run, on SQLite and on PostgreSQL.
 *
 *   npm run bench:balance [-- --duration 10 --connections 50 --db sqlite,postgres --processes 1|2 --rounds 1]
 *
 * It starts anvil, deploys an ERC-20 (solc), and for each database starts the service with
 * `npm start` in its own process (bench/process.ts: the defaults, BALANCE_MAX_AGE_S=5 among
 * them, LOG_LEVEL=info with its line per request; only the rate limit raised out of reach), logs
 * in as its bootstrap user, creates a wallet holding native currency and a token, and captures
 * the balance answer. The baseline is bench/bare-server.ts in its own process returning that
 * same JSON object from a Fastify route (serialised per request). autocannon, in a third process,
 * drives each for the same time and connections. On PostgreSQL `--processes 2` starts a second
 * service process on the same database and splits the connections between the two (two
 * autocannons, their requests summed).
 *
 * `--rounds N` measures the bare process and the service N times, alternately (bare, service,
 * bare, …): on a 2-core machine one run's ratio can land on either of two levels (11k or 16k
 * req/s for the same tree, minutes apart), so each round's ratio is printed and their median.
 *
 * Printed: req/s, latency, the server process's CPU per request and its peak resident memory.
 * Writes bench/results/balance.md. Never run by `npm test`.
 */
import { cpus } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import type { Address } from 'viem';
import { nonNegativeInt, parseDatabases, positiveInt, rpc, runBench, writeReport, type Driver } from './common.js';
import { settingsNote, startBareProcess, startServiceProcess, type ServiceProcess } from './process.js';
import { measure, serviceTarget, type LoadResult } from './load.js';
import { findFreePort, startDevnet, type Devnet } from '../src/chain/devnet.js';
import { deployErc20, mintErc20 } from '../test/helpers/erc20.js';

const HERE = dirname(fileURLToPath(import.meta.url));
const RESULTS_FILE = join(HERE, 'results', 'balance.md');

const { values: flags } = parseArgs({
  options: {
    duration: { type: 'string', default: '10' },
    connections: { type: 'string', default: '50' },
    db: { type: 'string', default: 'sqlite,postgres' },
    warmup: { type: 'string', default: '2' },
    processes: { type: 'string', default: '1' },
    rounds: { type: 'string', default: '1' },
  },
});
const durationS = positiveInt('duration', flags.duration);
const connections = positiveInt('connections', flags.connections);
const warmupS = nonNegativeInt('warmup', flags.warmup);
const processes = positiveInt('processes', flags.processes);
const rounds = positiveInt('rounds', flags.rounds);
const databases = parseDatabases(flags.db);
const load = { connections, durationS, warmupS };

async function call(url: string, method: string, path: string, token: string | null, body?: unknown) {
  const res = await fetch(`${url}${path}`, {
    method,
    headers: {
      ...(token ? { authorization: `Bearer ${token}` } : {}),
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  if (res.status !== 200) throw new Error(`${method} ${path}: ${res.status} ${text}`);
  return { json: JSON.parse(text) as { data: any }, text };
}

/** A wallet with 1.5 ETH and 2.5 of a token; returns its balance path and the answer's text. */
async function fundedWallet(service: ServiceProcess, devnet: Devnet, token20: Address) {
  const { base, token } = service;
  const wallet = (await call(base, 'POST', '/api/wallet/create', token, { name: 'Bench', network_id: service.networkId })).json.data as {
    id: number;
    address: Address;
  };
  await rpc(devnet.rpcUrl, 'anvil_setBalance', [wallet.address, `0x${1_500_000_000_000_000_000n.toString(16)}`]);
  await call(base, 'POST', `/api/wallet/${wallet.id}/token/add`, token, { contract: token20 });
  await mintErc20(devnet.rpcUrl, token20, wallet.address, 2_500_000n);
  const path = `/api/wallet/${wallet.id}/balance`;
  const check = await call(base, 'GET', path, token);
  if (check.json.data.balance !== '1.500000000000000000' || check.json.data.tokens[1]?.balance !== '2.500000000000000000') {
    throw new Error(`unexpected balance before the run: ${check.text}`);
  }
  return { path, text: check.text };
}

interface Row {
  driver: string;
  processes: number;
  round: number;
  bare: LoadResult;
  balance: LoadResult;
}

async function runOne(driver: Driver, devnet: Devnet, token20: Address): Promise<Row[]> {
  const services: ServiceProcess[] = [await startServiceProcess({ driver, rpcUrl: devnet.rpcUrl })];
  try {
    const n = driver === 'postgres' ? processes : 1;
    for (let i = 1; i < n; i++)
      services.push(
        await startServiceProcess({
          driver,
          rpcUrl: devnet.rpcUrl,
          database: services[0]!.database,
          appKey: services[0]!.appKey,
          label: String(i + 1),
        }),
      );
    const { path, text } = await fundedWallet(services[0]!, devnet, token20);
    const bare = await startBareProcess(text, 'object', services[0]!.database.dataDir);
    try {
      const rows: Row[] = [];
      for (let round = 1; round <= rounds; round++) {
        process.stderr.write(`${driver}${rounds > 1 ? ` round ${round}` : ''}: bare ${durationS}s ... `);
        const bareResult = await measure([bare], load);
        process.stderr.write(`balance ${durationS}s (${n} process${n > 1 ? 'es' : ''}) ... `);
        const balance = await measure(
          services.map((s) => serviceTarget(s, path)),
          { ...load, headers: { authorization: `Bearer ${services[0]!.token}` } },
        );
        process.stderr.write('done\n');
        rows.push({ driver: driver === 'sqlite' ? 'SQLite' : 'PostgreSQL', processes: n, round, bare: bareResult, balance });
      }
      return rows;
    } finally {
      await bare.stop();
    }
  } finally {
    for (const s of services.reverse()) await s.stop();
  }
}

function table(rows: Row[]): string {
  const f = (n: number, d = 0) => n.toLocaleString('en-US', { minimumFractionDigits: d, maximumFractionDigits: d });
  const ms = (n: number) => (n === 0 ? '< 1' : f(n));
  const lines = [
    '| Database | Server | Requests/s | p50 / p99 (ms) | CPU µs/request | Peak RSS (MiB) | **/ bare (req/s)** | / bare (CPU per request) |',
    '|---|---|---:|---:|---:|---:|---:|---:|',
  ];
  const round = (r: Row) => (rounds > 1 ? ` (round ${r.round})` : '');
  for (const r of rows) {
    lines.push(
      `| ${r.driver} | bare Fastify, the same JSON${round(r)} | ${f(r.bare.rps)} | ${ms(r.bare.p50Ms)} / ${ms(r.bare.p99Ms)} | ${f(r.bare.cpuUsPerRequest)} | ${f(r.bare.peakRssMiB)} | 1.000× | 1.000× |`,
    );
    lines.push(
      `| ${r.driver} | GET balance, ${r.processes} service process${r.processes > 1 ? 'es' : ''}${round(r)} | ${f(r.balance.rps)} | ${ms(r.balance.p50Ms)} / ${ms(r.balance.p99Ms)} | ` +
        `${f(r.balance.cpuUsPerRequest)} | ${f(r.balance.peakRssMiB)} | **${f(r.balance.rps / r.bare.rps, 3)}×** | ${f(r.bare.cpuUsPerRequest / r.balance.cpuUsPerRequest, 3)}× |`,
    );
  }
  if (rounds > 1) {
    lines.push('');
    for (const driver of [...new Set(rows.map((r) => r.driver))]) {
      const ratios = rows.filter((r) => r.driver === driver).map((r) => r.balance.rps / r.bare.rps);
      lines.push(
        `${driver}: median / bare over ${rounds} rounds **${f(median(ratios), 3)}×** (rounds ${ratios.map((x) => f(x, 3)).join(', ')})`,
      );
    }
  }
  return lines.join('\n');
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 === 1 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
}

async function main(): Promise<void> {
  const started = Date.now();
  const devnet = await startDevnet({ port: await findFreePort() });
  const rows: Row[] = [];
  try {
    const token20 = await deployErc20(devnet.rpcUrl, { name: 'Bench USD', symbol: 'BUSD', decimals: 6 });
    for (const driver of databases) rows.push(...(await runOne(driver, devnet, token20)));
  } finally {
    await devnet.stop();
  }
  const extra: string[] = [];
  if (flags.duration !== '10') extra.push(`--duration ${durationS}`);
  if (flags.connections !== '50') extra.push(`--connections ${connections}`);
  if (flags.db !== 'sqlite,postgres') extra.push(`--db ${flags.db}`);
  if (flags.warmup !== '2') extra.push(`--warmup ${warmupS}`);
  if (flags.processes !== '1') extra.push(`--processes ${processes}`);
  if (flags.rounds !== '1') extra.push(`--rounds ${rounds}`);
  const cpu = cpus();
  const report = [
    '## GET /api/wallet/{wallet}/balance vs a bare Fastify process answering the same JSON',
    '',
    table(rows),
    '',
    `Command: \`npm run bench:balance${extra.length ? ` -- ${extra.join(' ')}` : ''}\` (\`npm start\` with its defaults and ${settingsNote()}; ` +
      `autocannon in its own process, ${connections} connections, ${durationS} s per server after a ${warmupS} s warm-up). ` +
      `${new Date().toISOString().slice(0, 10)}, Node ${process.version}, ${cpu.length} × ${cpu[0]?.model.trim() ?? 'unknown CPU'}; ` +
      "anvil, PostgreSQL and the load generator on the same machine. CPU per request is the server process's own (/proc).",
    '',
  ].join('\n');
  writeReport(RESULTS_FILE, report, started);
}

runBench(main);
