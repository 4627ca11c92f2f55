/**
 * Benchmark: a 1000-row page of GET /api/wallet/{wallet}/transaction as a user meets it, against
 * a bare Fastify process sending the same bytes, in the same run; and the service's peak memory
 * with 1,000 and with 100,000 rows in the wallet.
 *
 *   npm run bench:list [-- --rows 1000,100000 --duration 10 --connections 10 --db sqlite,postgres --processes 1|2]
 *
 * For each database and row count: `npm start` in its own process (bench/process.ts: the
 * defaults; only the rate limit raised out of reach) on a fresh database, a wallet made through
 * the API, its rows seeded in one SQL statement from this process (bench/seed.ts), then the first
 * page with limit=1000 (the newest rows, ~680 KiB) is fetched once. The baseline is
 * bench/bare-server.ts in its own process answering that JSON: as the parsed object, which Fastify
 * serialises per request (the outside measurement's baseline, and the ratio reported in bold),
 * and as the same bytes sent as they are (the floor of the socket alone, reported beside). autocannon (a third process)
 * drives each for the same time and connections. The page-number independence of the list (page
 * 1 vs the last page of 1,000,000 rows) is `npm run bench:list-pages`.
 *
 * Writes bench/results/list.md. Never run by `npm test`.
 */
import { cpus } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { findFreePort, startDevnet } from '../src/chain/devnet.js';
import { nonNegativeInt, parseDatabases, positiveInt, runBench, writeReport, type Driver } from './common.js';
import { measure, serviceTarget, type LoadResult } from './load.js';
import { settingsNote, startBareProcess, startServiceProcess, type ServiceProcess } from './process.js';
import { seedServiceWallet } from './seed.js';

const HERE = dirname(fileURLToPath(import.meta.url));
const RESULTS_FILE = join(HERE, 'results', 'list.md');
const LIMIT = 1000;

const { values: flags } = parseArgs({
  options: {
    rows: { type: 'string', default: '1000,100000' },
    duration: { type: 'string', default: '10' },
    connections: { type: 'string', default: '10' },
    warmup: { type: 'string', default: '2' },
    db: { type: 'string', default: 'sqlite,postgres' },
    processes: { type: 'string', default: '1' },
  },
});
const rowCounts = flags.rows.split(',').map((r) => positiveInt('rows', r.trim()));
for (const r of rowCounts) if (r < LIMIT) throw new Error(`--rows: at least ${LIMIT} (one full page), got ${r}`);
const load = {
  connections: positiveInt('connections', flags.connections),
  durationS: positiveInt('duration', flags.duration),
  warmupS: nonNegativeInt('warmup', flags.warmup),
};
const processes = positiveInt('processes', flags.processes);
const databases = parseDatabases(flags.db);

interface Row {
  driver: string;
  rows: number;
  processes: number;
  bodyBytes: number;
  seedS: number;
  bare: LoadResult;
  bytes: LoadResult;
  list: LoadResult;
  idleRssMiB: number;
}

async function runOne(driver: Driver, rpcUrl: string, rows: number): Promise<Row> {
  const first = await startServiceProcess({ driver, rpcUrl });
  const services: ServiceProcess[] = [first];
  try {
    const res = await fetch(`${first.base}/api/wallet/create`, {
      method: 'POST',
      headers: { authorization: `Bearer ${first.token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'Bench', network_id: first.networkId }),
    });
    const walletId = ((await res.json()) as { data: { id: number } }).data.id;
    const seedS = await seedServiceWallet(first, walletId, rows);
    const n = driver === 'postgres' ? processes : 1;
    for (let i = 1; i < n; i++)
      services.push(await startServiceProcess({ driver, rpcUrl, database: first.database, appKey: first.appKey, label: String(i + 1) }));
    const path = `/api/wallet/${walletId}/transaction?page=1&limit=${LIMIT}`;
    const headers = { authorization: `Bearer ${first.token}` };
    const page = await fetch(`${first.base}${path}`, { headers });
    const body = await page.text();
    const parsed = JSON.parse(body) as { data: unknown[] };
    if (page.status !== 200 || parsed.data.length !== LIMIT) throw new Error(`page 1: ${page.status}, ${parsed.data?.length} rows`);
    const idleRssMiB = first.rssMiB();
    const bare = await startBareProcess(body, 'object', first.database.dataDir);
    const bareBytes = await startBareProcess(body, 'bytes', first.database.dataDir);
    try {
      process.stderr.write(`${driver}, ${rows} rows: bare ${load.durationS}s ... `);
      const bareResult = await measure([bare], load);
      const bytesResult = await measure([bareBytes], load);
      process.stderr.write(`list ${load.durationS}s ... `);
      const list = await measure(
        services.map((s) => serviceTarget(s, path)),
        { ...load, headers },
      );
      process.stderr.write('done\n');
      return {
        driver: driver === 'sqlite' ? 'SQLite' : 'PostgreSQL',
        rows,
        processes: n,
        bodyBytes: Buffer.byteLength(body),
        seedS,
        bare: bareResult,
        bytes: bytesResult,
        list,
        idleRssMiB,
      };
    } finally {
      await bare.stop();
      await bareBytes.stop();
    }
  } finally {
    for (const s of services.reverse()) await s.stop();
  }
}

const f = (n: number, d = 0) => n.toLocaleString('en-US', { minimumFractionDigits: d, maximumFractionDigits: d });

async function main(): Promise<void> {
  const started = Date.now();
  const devnet = await startDevnet({ port: await findFreePort() });
  const rows: Row[] = [];
  try {
    for (const driver of databases) for (const r of rowCounts) rows.push(await runOne(driver, devnet.rpcUrl, r));
  } finally {
    await devnet.stop();
  }
  const lines = [
    '| Database | Rows in the wallet | Service processes | Page (KiB) | Bare req/s: the JSON / its bytes | List req/s | List p50 / p99 (ms) | CPU µs/request (bare) | **/ bare (req/s)** | / bare bytes | Service RSS idle → peak (MiB) |',
    '|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|',
  ];
  for (const r of rows) {
    lines.push(
      `| ${r.driver} | ${f(r.rows)} | ${r.processes} | ${f(r.bodyBytes / 1024)} | ${f(r.bare.rps)} / ${f(r.bytes.rps)} | ${f(r.list.rps)} | ${f(r.list.p50Ms)} / ${f(r.list.p99Ms)} | ` +
        `${f(r.list.cpuUsPerRequest)} (${f(r.bare.cpuUsPerRequest)}) | **${f(r.list.rps / r.bare.rps, 3)}×** | ${f(r.list.rps / r.bytes.rps, 3)}× | ${f(r.idleRssMiB)} → ${f(r.list.peakRssMiB)} |`,
    );
  }
  const argv = process.argv.slice(2).join(' ');
  const cpu = cpus();
  const report = [
    `## A ${LIMIT}-row page of the transaction list vs a bare Fastify process sending the same bytes`,
    '',
    ...lines,
    '',
    `Command: \`npm run bench:list${argv ? ` -- ${argv}` : ''}\` (\`npm start\` with its defaults and ${settingsNote()}; autocannon in its own process, ` +
      `${load.connections} connections, ${load.durationS} s per server after a ${load.warmupS} s warm-up). ${new Date().toISOString().slice(0, 10)}, Node ${process.version}, ` +
      `${cpu.length} × ${cpu[0]?.model.trim() ?? 'CPU'}; anvil, PostgreSQL and the load generator on the same machine. "Idle" is the service's RSS after ` +
      'the seed and one page, before the load; "peak" its VmHWM after it.',
    '',
  ].join('\n');
  writeReport(RESULTS_FILE, report, started);
}

runBench(main);
