/**
 * The transactions CSV export of 1,000,000 rows: rows a second and the service's memory.
 *
 *   npm run bench:export [-- --rows 1000000 --db sqlite,postgres]
 *
 * As a user meets it: the service with `npm start` in its own process (bench/process.ts: its
 * defaults, only the rate limit raised out of reach), a wallet made through its API, its rows
 * seeded in one SQL statement from this process (bench/seed.ts), then
 * GET /api/wallet/{id}/export/transactions.csv over a real socket, the body written to a file as
 * it arrives. Memory: the service's resident set when idle (after one small export), and its
 * peak during the download (the kernel's high-water mark, reset just before, with samples every
 * 20 ms besides). Baseline, in the same run: the same rows read by the bare driver in a process
 * of its own and written to a file (bench/export-bare.ts). `BENCH_NODE_OPTIONS="--import
 * ./bench/cpu-profile.mjs"` profiles the service during the download (bench/process.ts). Targets: at least 50,000 rows a
 * second; peak within 50 MiB of idle. Writes bench/results/export.md. Never run by `npm test`.
 */
import { spawn } from 'node:child_process';
import { createWriteStream, rmSync, statSync, writeFileSync } from 'node:fs';
import { cpus } from 'node:os';
import { dirname, join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { Transform } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { request } from 'undici';
import { findFreePort, startDevnet } from '../src/chain/devnet.js';
import { parseDatabases, positiveInt, runBench, writeReport, type Driver } from './common.js';
import { createBenchWallet, profileSignal, settingsNote, startServiceProcess, type ServiceProcess } from './process.js';
import { seedServiceWallet } from './seed.js';

const HERE = dirname(fileURLToPath(import.meta.url));
const RESULTS_FILE = join(HERE, 'results', 'export.md');
const TARGET_ROWS_PER_S = 50_000;
const TARGET_RSS_GROWTH_MIB = 50;

const { values: flags } = parseArgs({
  options: {
    rows: { type: 'string', default: '1000000' },
    db: { type: 'string', default: 'sqlite' },
  },
});
const ROWS = positiveInt('rows', flags.rows);
const databases = parseDatabases(flags.db);

interface Download {
  rows: number;
  bytes: number;
  seconds: number;
}

/** GETs `path` and writes the body to `file` as it arrives; counts its records (CRLFs) past the header. */
async function download(service: ServiceProcess, path: string, file: string): Promise<Download> {
  const t0 = performance.now();
  const res = await request(`${service.base}${path}`, { headers: { authorization: `Bearer ${service.token}` } });
  if (res.statusCode !== 200) throw new Error(`${path}: ${res.statusCode} ${(await res.body.text()).slice(0, 300)}`);
  let lines = 0;
  let bytes = 0;
  let lastByte = 0;
  const counter = new Transform({
    transform(chunk: Buffer, _enc, done) {
      bytes += chunk.length;
      for (let i = 0; i < chunk.length; i++) {
        if (chunk[i] === 0x0a && (i > 0 ? chunk[i - 1] : lastByte) === 0x0d) lines++;
      }
      lastByte = chunk[chunk.length - 1] ?? lastByte;
      done(null, chunk);
    },
  });
  await pipeline(res.body, counter, createWriteStream(file));
  return { rows: lines - 1, bytes, seconds: (performance.now() - t0) / 1000 };
}

/** The service's peak resident set during `fn`: the kernel's high-water mark reset first, and samples. */
async function peakDuring<T>(service: ServiceProcess, fn: () => Promise<T>): Promise<{ result: T; peakMiB: number }> {
  writeFileSync(`/proc/${service.pid}/clear_refs`, '5');
  let sampled = service.rssMiB();
  const timer = setInterval(() => (sampled = Math.max(sampled, service.rssMiB())), 20);
  try {
    const result = await fn();
    return { result, peakMiB: Math.max(sampled, service.peakRssMiB()) };
  } finally {
    clearInterval(timer);
  }
}

interface Bare {
  rows: number;
  seconds: number;
  idleRssMiB: number;
  peakRssMiB: number;
}

function runBare(driver: Driver, service: ServiceProcess, walletId: number, file: string): Promise<Bare> {
  const where = driver === 'postgres' ? service.database.databaseUrl! : service.database.dataDir;
  const child = spawn(process.execPath, ['--import', 'tsx', join(HERE, 'export-bare.ts'), driver, where, String(walletId), file], {
    cwd: join(HERE, '..'),
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let out = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  return new Promise((resolve, reject) =>
    child.once('exit', (code) => (code === 0 ? resolve(JSON.parse(out) as Bare) : reject(new Error(`export-bare exited ${code}`)))),
  );
}

const fmt = (n: number) => Math.round(n).toLocaleString('en-US');

async function runOne(driver: Driver, rpcUrl: string): Promise<string> {
  const service = await startServiceProcess({ driver, rpcUrl });
  const file = join(service.database.dataDir, 'export.csv');
  const bareFile = join(service.database.dataDir, 'bare.csv');
  try {
    const walletId = await createBenchWallet(service);
    process.stderr.write(`${driver}: seeding ${ROWS} rows ... `);
    const seedS = await seedServiceWallet(service, walletId, ROWS);
    const path = `/api/wallet/${walletId}/export/transactions.csv`;
    // Warm: a small export (the route's code loaded and compiled), then idle.
    await download(service, `${path}?to=2000-01-01%2000:00:00`, file);
    await new Promise((r) => setTimeout(r, 1000));
    const idleMiB = service.rssMiB();
    process.stderr.write('export ... ');
    await profileSignal([service]);
    const { result: got, peakMiB } = await peakDuring(service, () => download(service, path, file));
    await profileSignal([service]);
    if (got.rows !== ROWS) throw new Error(`the export had ${got.rows} rows, not ${ROWS}`);
    const csvBytes = statSync(file).size;
    process.stderr.write('bare ... ');
    const bare = await runBare(driver, service, walletId, bareFile);
    if (bare.rows !== ROWS) throw new Error(`the bare read had ${bare.rows} rows, not ${ROWS}`);
    process.stderr.write('done\n');
    const rate = got.rows / got.seconds;
    const bareRate = bare.rows / bare.seconds;
    const growth = peakMiB - idleMiB;
    const bareGrowth = bare.peakRssMiB - bare.idleRssMiB;
    const name = driver === 'postgres' ? 'PostgreSQL' : 'SQLite';
    return [
      `## ${name}`,
      '',
      `${fmt(ROWS)} rows seeded in ${seedS.toFixed(1)} s; the file ${(csvBytes / 2 ** 20).toFixed(0)} MiB in ${got.seconds.toFixed(1)} s, ` +
        `the bare read's ${(statSync(bareFile).size / 2 ** 20).toFixed(0)} MiB in ${bare.seconds.toFixed(1)} s.`,
      '',
      '| figure | service | bare driver | service / bare | target |',
      '|---|---:|---:|---:|---|',
      `| rows a second | **${fmt(rate)}** | ${fmt(bareRate)} | ${(rate / bareRate).toFixed(2)}× | ≥ ${fmt(TARGET_ROWS_PER_S)}: ${rate >= TARGET_ROWS_PER_S ? 'met' : 'not met'} |`,
      `| RSS idle → peak, MiB | ${idleMiB.toFixed(0)} → ${peakMiB.toFixed(0)} (**+${growth.toFixed(0)}**) | ${bare.idleRssMiB.toFixed(0)} → ${bare.peakRssMiB.toFixed(0)} (+${bareGrowth.toFixed(0)}) | | ≤ +${TARGET_RSS_GROWTH_MIB}: ${growth <= TARGET_RSS_GROWTH_MIB ? 'met' : 'not met'} |`,
      '',
    ].join('\n');
  } finally {
    rmSync(file, { force: true });
    rmSync(bareFile, { force: true });
    await service.stop();
  }
}

async function main(): Promise<void> {
  const started = Date.now();
  const devnet = await startDevnet({ port: await findFreePort() });
  const sections: string[] = [];
  try {
    for (const driver of databases) sections.push(await runOne(driver, devnet.rpcUrl));
  } finally {
    await devnet.stop();
  }
  const argv = process.argv.slice(2).join(' ');
  const cpu = cpus();
  const report = [
    `# CSV export of ${fmt(ROWS)} transactions`,
    '',
    'GET /api/wallet/{id}/export/transactions.csv over a real socket, the body written to a file as it arrives, against the bare ' +
      'driver reading the same rows into a file in a process of its own (bench/export-bare.ts). RSS: the service process, idle ' +
      'after a small export, and its peak during the download.',
    '',
    `Command: \`npm run bench:export${argv ? ` -- ${argv}` : ''}\` (\`npm start\` with its defaults and ${settingsNote()}). ` +
      `${new Date().toISOString().slice(0, 10)}, Node ${process.version}, ${cpu.length} × ${cpu[0]?.model.trim() ?? 'CPU'}; anvil, the database and the client on the same machine.`,
    '',
    ...sections,
  ].join('\n');
  writeReport(RESULTS_FILE, report, started);
}

runBench(main);
