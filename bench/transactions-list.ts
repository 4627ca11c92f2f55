/**
 * Transaction list on 1,000,000 rows: does the cost of a page depend on the page number?
 *
 *   npm run bench:list-pages [-- --rows 1000000 --runs 100 --db sqlite,postgres]
 *
 * As a user meets it: the service with `npm start` in its own process (bench/process.ts: its
 * defaults, only the rate limit raised out of reach), a wallet made through its API, its
 * 1,000,000 transactions seeded in one SQL statement from this process (bench/seed.ts; every 4th
 * row a TUSD transfer, the rest ETH), then GET /api/wallet/{id}/transaction over one keep-alive
 * connection (undici), each answer read to its end, for the first, middle and last page, with and
 * without the token filter, one request at a time. For contrast, the query a naive LIMIT/OFFSET
 * list would run for the same pages (the database alone, from this process). Then the cost of a
 * 1000-row page against a 10-row page of the same run, the two requests alternating (page 1 and
 * the last page): the ratio bounded at 8x on SQLite and 16x on PostgreSQL.
 *
 * `BENCH_NODE_OPTIONS="--import ./bench/cpu-profile.mjs"` profiles the service during the
 * alternating part (bench/process.ts). Writes bench/results/transactions-list.md. Never run by
 * `npm test`.
 */
import { cpus } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { Pool } from 'undici';
import { findFreePort, startDevnet } from '../src/chain/devnet.js';
import { parseDatabases, percentile, positiveInt, runBench, writeReport, type Driver } from './common.js';
import { createBenchWallet, profileSignal, settingsNote, startServiceProcess } from './process.js';
import { openServiceStore, seedServiceWallet } from './seed.js';

const HERE = dirname(fileURLToPath(import.meta.url));
const RESULTS_FILE = join(HERE, 'results', 'transactions-list.md');
const WARMUP = 10;

const { values: flags } = parseArgs({
  options: {
    rows: { type: 'string', default: '1000000' },
    runs: { type: 'string', default: '100' },
    db: { type: 'string', default: 'sqlite,postgres' },
  },
});
const ROWS = positiveInt('rows', flags.rows);
if (ROWS % 4000 !== 0) throw new Error(`--rows: a multiple of 4,000 (whole pages of 1,000, also of TUSD rows), got ${ROWS}`);
const RUNS = positiveInt('runs', flags.runs);
const databases = parseDatabases(flags.db);

interface Case {
  label: string;
  page: number;
  limit: number;
  token?: string;
}

/** Median and p95 of RUNS calls after WARMUP, one at a time, ms. */
async function time(fn: () => Promise<void>): Promise<{ median: number; p95: number }> {
  for (let i = 0; i < WARMUP; i++) await fn();
  const samples: number[] = [];
  for (let i = 0; i < RUNS; i++) {
    const t0 = performance.now();
    await fn();
    samples.push(performance.now() - t0);
  }
  samples.sort((a, b) => a - b);
  return { median: percentile(samples, 50), p95: percentile(samples, 95) };
}

/** Medians of `a` and `b` run alternately, RUNS times each (after WARMUP of each), ms. */
async function timeAlternating(a: () => Promise<void>, b: () => Promise<void>): Promise<[number, number]> {
  const samples: [number[], number[]] = [[], []];
  for (let i = 0; i < WARMUP + RUNS; i++) {
    for (const [k, fn] of [a, b].entries()) {
      const t0 = performance.now();
      await fn();
      if (i >= WARMUP) samples[k]!.push(performance.now() - t0);
    }
  }
  return samples.map((x) =>
    percentile(
      x.sort((p, q) => p - q),
      50,
    ),
  ) as [number, number];
}

async function runOne(driver: Driver, rpcUrl: string): Promise<string> {
  const service = await startServiceProcess({ driver, rpcUrl });
  const pool = new Pool(service.base, { connections: 1, pipelining: 1 });
  try {
    const walletId = await createBenchWallet(service);
    process.stderr.write(`${driver}: seeding ${ROWS} rows ... `);
    const seedS = await seedServiceWallet(service, walletId, ROWS);
    const get = (page: number, limit: number, token?: string, expectRows?: number) => async () => {
      const res = await pool.request({
        method: 'GET',
        path: `/api/wallet/${walletId}/transaction?page=${page}&limit=${limit}${token ? `&token=${token}` : ''}`,
        headers: { authorization: `Bearer ${service.token}` },
      });
      const text = await res.body.text();
      if (res.statusCode !== 200) throw new Error(`page ${page}, limit ${limit}: ${res.statusCode} ${text.slice(0, 200)}`);
      if (expectRows !== undefined && (JSON.parse(text) as { data: unknown[] }).data.length !== expectRows)
        throw new Error(`page ${page}, limit ${limit}: not ${expectRows} rows`);
    };
    const tusdRows = ROWS / 4;
    const cases: Case[] = [
      { label: 'first page', page: 1, limit: 10 },
      { label: 'middle page', page: ROWS / 20, limit: 10 },
      { label: 'last page', page: ROWS / 10, limit: 10 },
      { label: 'first page', page: 1, limit: 1000 },
      { label: 'last page', page: ROWS / 1000, limit: 1000 },
      { label: 'token=TUSD first page', page: 1, limit: 10, token: 'TUSD' },
      { label: 'token=TUSD last page', page: tusdRows / 10, limit: 10, token: 'TUSD' },
    ];
    process.stderr.write('pages ... ');
    const rows: string[] = [];
    for (const c of cases) {
      await get(c.page, c.limit, c.token, c.limit)();
      const r = await time(get(c.page, c.limit, c.token));
      rows.push(`| service, HTTP | ${c.label} | ${c.page} | ${c.limit} | ${r.median.toFixed(2)} | ${r.p95.toFixed(2)} |`);
    }
    // Contrast: the query a LIMIT/OFFSET list would run (the database alone, no HTTP).
    const store = await openServiceStore(service);
    try {
      for (const c of [cases[0]!, cases[2]!]) {
        const r = await time(async () => {
          await store.db
            .selectFrom('transactions')
            .select(['id', 'amount', 'tx_hash', 'status'])
            .where('wallet_id', '=', walletId)
            .orderBy('id', 'desc')
            .limit(c.limit)
            .offset((c.page - 1) * c.limit)
            .execute();
        });
        rows.push(
          `| naive OFFSET query (for contrast) | ${c.label} | ${c.page} | ${c.limit} | ${r.median.toFixed(2)} | ${r.p95.toFixed(2)} |`,
        );
      }
    } finally {
      await store.destroy();
    }
    // A 1000-row page against a 10-row page, the two alternating, so a change in the machine's
    // load during the run falls on both sides of the ratio alike.
    process.stderr.write('1000 vs 10 ... ');
    const ratioRow = async (label: string, small: () => Promise<void>, big: () => Promise<void>) => {
      const [s, b] = await timeAlternating(small, big);
      return `| ${label} | ${s.toFixed(2)} | ${b.toFixed(2)} | **${(b / s).toFixed(1)}x** | ${(((b - s) / 990) * 1000).toFixed(1)} |`;
    };
    await profileSignal([service]);
    const ratios = [
      '| page | limit 10, median ms | limit 1000, median ms | **limit 1000 / limit 10** | µs per extra row |',
      '|---|---:|---:|---:|---:|',
      await ratioRow('first page', get(1, 10), get(1, 1000)),
      await ratioRow('last page', get(ROWS / 10, 10), get(ROWS / 1000, 1000)),
    ];
    await profileSignal([service]);
    process.stderr.write(`done (peak RSS ${Math.round(service.peakRssMiB())} MiB)\n`);
    return [
      `## ${driver === 'postgres' ? 'PostgreSQL' : 'SQLite'}`,
      '',
      `${ROWS.toLocaleString('en-US')} rows in one wallet, seeded in ${seedS.toFixed(1)} s; ${RUNS} timed requests per case after ${WARMUP} warm-up, one at a time; ` +
        `the service's peak RSS ${Math.round(service.peakRssMiB())} MiB.`,
      '',
      '| what | case | page | limit | median ms | p95 ms |',
      '|---|---|---:|---:|---:|---:|',
      ...rows,
      '',
      ...ratios,
      '',
    ].join('\n');
  } finally {
    await pool.close();
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
    '# Transaction list: first page vs last page on 1,000,000 rows',
    '',
    'Page N is the index range `seq in (total - N*limit, total - (N-1)*limit]` on `(wallet_id, seq)` (or `(wallet_id, symbol_key, symbol_seq)` ' +
      'with `token`), and the total is the largest `seq`, so every page costs the same. Each request goes over a real socket to the service ' +
      'started with `npm start`; the second table of each section is a 1000-row page against a 10-row page of the same run, the two ' +
      'alternating (medians).',
    '',
    `Command: \`npm run bench:list-pages${argv ? ` -- ${argv}` : ''}\` (\`npm start\` with its defaults and ${settingsNote()}). ` +
      `${new Date().toISOString().slice(0, 10)}, Node ${process.version}, ${cpu.length} × ${cpu[0]?.model.trim() ?? 'CPU'}; anvil, PostgreSQL and the client on the same machine.`,
    '',
    ...sections,
  ].join('\n');
  writeReport(RESULTS_FILE, report, started);
}

runBench(main);
