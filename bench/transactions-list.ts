/**
 * Transaction list on 1,000,000 rows: does the cost of a page depend on the page number?
 *
 *   npm run bench:list-pages                                                   # SQLite (temp dir)
 *   DATABASE_URL=postgres://postgres@127.0.0.1:5432/test npm run bench:list-pages   # PostgreSQL
 *
 * Builds the real service (migrations, routes, auth) on a fresh database, seeds one wallet with
 * 1,000,000 transactions in one SQL statement (a recursive CTE on SQLite, generate_series on
 * PostgreSQL; every 4th row a TUSD transfer, the rest ETH), then times GET
 * /api/wallet/{id}/transaction through the whole HTTP stack (fastify inject: routing, auth,
 * validation, serialisation) for the first, middle and last page, with and without the token
 * filter. For contrast it also times the query a naive LIMIT/OFFSET list would run for the
 * same pages. Prints a markdown table, then the cost of a 1000-row page against a 10-row page
 * of the same run, measured with the two requests alternating (page 1 and the last page: the
 * ratio the issue bounds at 8x on SQLite and 16x on PostgreSQL), and writes both to
 * bench/results/transactions-list.md (one section per database, the other kept).
 *
 * Profiling the 1000-row page: `BENCH_PROFILE_S=10` repeats page 1 with limit=1000 for that many
 * seconds after the timed cases, so the last seconds of a CPU profile are that request alone:
 *
 *   BENCH_PROFILE_S=10 node --import tsx --cpu-prof --cpu-prof-dir=/tmp/prof bench/transactions-list.ts
 *   npx tsx bench/profile-summary.ts /tmp/prof/<file>.cpuprofile --last-s 9
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { Pool } from 'undici';
import { freshDatabase, percentile } from './common.js';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { seedTransactions } from './seed.js';
import { buildApp } from '../src/app.js';
import { loadConfig } from '../src/config.js';
import { createLogger } from '../src/logger.js';
import { createContext, openStore } from '../src/runtime.js';

/** Rows seeded (BENCH_ROWS overrides, for a quick check of the script itself). */
const ROWS = Number(process.env.BENCH_ROWS ?? 1_000_000);
/** Timed requests per case (BENCH_RUNS overrides). */
const RUNS = Number(process.env.BENCH_RUNS ?? 100);
const WARMUP = 10;
/** Seconds of page 1, limit 1000, repeated after the timed cases (for a CPU profile); 0: none. */
const PROFILE_S = Number(process.env.BENCH_PROFILE_S ?? 0);

interface Case {
  label: string;
  page: number;
  limit: number;
  token?: string;
}


/**
 * Lets the event loop turn between requests, as a server's does. On SQLite a request never
 * waits for I/O, so a loop of `await app.inject()` alone never reaches the check phase, and
 * light-my-request's null socket frees each response's bytes in a `setImmediate` callback: the
 * heap grew by one response per request (0.65 MB at limit 1000) and the garbage collector's
 * work with it, until the loop stopped.
 */
const turn = () => new Promise<void>((resolve) => setImmediate(resolve));

async function time(fn: () => Promise<void>): Promise<{ median: number; p95: number }> {
  for (let i = 0; i < WARMUP; i++) {
    await fn();
    await turn();
  }
  const samples: number[] = [];
  for (let i = 0; i < RUNS; i++) {
    const t0 = process.hrtime.bigint();
    await fn();
    samples.push(Number(process.hrtime.bigint() - t0) / 1e6);
    await turn();
  }
  samples.sort((a, b) => a - b);
  return { median: percentile(samples, 50), p95: percentile(samples, 95) };
}

/** Medians of `a` and `b` run alternately, RUNS times each (after WARMUP of each). */
async function timeAlternating(a: () => Promise<void>, b: () => Promise<void>): Promise<[number, number]> {
  const samples: [number[], number[]] = [[], []];
  for (let i = 0; i < WARMUP + RUNS; i++) {
    for (const [k, fn] of [a, b].entries()) {
      const t0 = process.hrtime.bigint();
      await fn();
      if (i >= WARMUP) samples[k]!.push(Number(process.hrtime.bigint() - t0) / 1e6);
      await turn();
    }
  }
  return samples.map((x) => percentile(x.sort((p, q) => p - q), 50)) as [number, number];
}

async function main(): Promise<void> {
  const database = await freshDatabase(process.env.DATABASE_URL ?? null, 'bench');
  const dataDir = database.dataDir;
  const databaseUrl = database.databaseUrl;
  const config = loadConfig({
    NODE_ENV: 'test',
    DATA_DIR: dataDir,
    APP_KEY: randomBytes(32).toString('base64'),
    LOG_LEVEL: 'silent',
    DEVNET: 'off',
    RATE_LIMIT_PER_MINUTE: '1000000',
    ...(databaseUrl ? { DATABASE_URL: databaseUrl } : {}),
  });
  const log = createLogger('silent');
  const store = await openStore(config, log);
  const ctx = createContext(config, store, log);
  const { app, services } = await buildApp(ctx);
  const driver = store.driver;
  try {
    // One user, one network, one wallet with an ETH and a TUSD token.
    const now = Date.now();
    const db = store.db;
    const user = await services.auth.createUser({ email: 'bench@example.com', password: 'bench-password', name: 'Bench' });
    const network = await db
      .insertInto('networks')
      .values({ name: 'Bench', rpc_url: 'http://127.0.0.1:1', chain_id: 31337, currency_symbol: 'ETH', block_explorer: '', is_mainnet: 0, confirmations: 1, created_at: now, updated_at: now })
      .returning('id')
      .executeTakeFirstOrThrow();
    const wallet = await db
      .insertInto('wallets')
      .values({
        user_id: user.id,
        network_id: network.id,
        name: 'Bench',
        description: '',
        address: '0x000000000000000000000000000000000000bEEF',
        private_key_enc: ctx.secrets.encrypt('0x00', { table: 'wallets', column: 'private_key_enc', id: 0 }), // never decrypted
        mnemonic_enc: ctx.secrets.encrypt('bench', { table: 'wallets', column: 'mnemonic_enc', id: 0 }),
        next_sub_index: 1,
        created_at: now,
        updated_at: now,
      })
      .returning('id')
      .executeTakeFirstOrThrow();
    const token = (symbol: string, contract: string, decimals: number, native: number) =>
      db
        .insertInto('wallet_tokens')
        .values({ wallet_id: wallet.id, name: symbol, symbol, decimals, contract, is_native: native, is_active: 1, is_testnet: 1, created_at: now, updated_at: now })
        .returning('id')
        .executeTakeFirstOrThrow();
    const eth = await token('ETH', '0x0000000000000000000000000000000000000000', 18, 1);
    const tusd = await token('TUSD', '0x5FbDB2315678afecb367f032d93F642f64180aa3', 6, 0);

    const seedStart = Date.now();
    await seedTransactions(db, driver, { walletId: wallet.id, tokenId: eth.id, tokenEvery4th: tusd.id, rows: ROWS, nowMs: now });
    const seedS = (Date.now() - seedStart) / 1000;

    const login = await app.inject({ method: 'POST', url: '/api/auth/login', payload: { email: 'bench@example.com', password: 'bench-password' } });
    const bearer = `Bearer ${(login.json() as { data: { token: string } }).data.token}`;
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

    const rows: string[] = [];
    for (const c of cases) {
      const url = `/api/wallet/${wallet.id}/transaction?page=${c.page}&limit=${c.limit}${c.token ? `&token=${c.token}` : ''}`;
      const check = await app.inject({ method: 'GET', url, headers: { authorization: bearer } });
      const body = check.json() as { data: unknown[] };
      if (check.statusCode !== 200 || body.data.length !== c.limit) throw new Error(`unexpected answer for ${url}: ${check.statusCode} ${body.data?.length}`);
      const r = await time(async () => {
        const res = await app.inject({ method: 'GET', url, headers: { authorization: bearer } });
        if (res.statusCode !== 200) throw new Error(`status ${res.statusCode}`);
      });
      rows.push(`| service route | ${c.label} | ${c.page} | ${c.limit} | ${r.median.toFixed(2)} | ${r.p95.toFixed(2)} |`);
    }
    // The issue's measure: a 1000-row page against a 10-row page. Measured again with the two
    // requests alternating, so a change in the machine's load during the run (it is shared)
    // falls on both sides of the ratio alike.
    const get = (page: number, limit: number) => async () => {
      const res = await app.inject({ method: 'GET', url: `/api/wallet/${wallet.id}/transaction?page=${page}&limit=${limit}`, headers: { authorization: bearer } });
      if (res.statusCode !== 200) throw new Error(`status ${res.statusCode}`);
    };
    const ratioRow = async (label: string, small: () => Promise<void>, big: () => Promise<void>) => {
      const [s, b] = await timeAlternating(small, big);
      return `| ${label} | ${s.toFixed(2)} | ${b.toFixed(2)} | **${(b / s).toFixed(1)}x** | ${(((b - s) / 990) * 1000).toFixed(1)} |`;
    };
    // The same over a real connection (the service listening, undici keep-alive, the body read
    // to its end): inject's harness turns every answer into one Buffer and one string, which a
    // client on a socket never makes the server do.
    await app.listen({ host: '127.0.0.1', port: 0 });
    const address = app.server.address() as AddressInfo;
    const pool = new Pool(`http://127.0.0.1:${address.port}`, { connections: 1 });
    const getHttp = (page: number, limit: number) => async () => {
      const res = await pool.request({ method: 'GET', path: `/api/wallet/${wallet.id}/transaction?page=${page}&limit=${limit}`, headers: { authorization: bearer } });
      for await (const _chunk of res.body) {
        // read to the end
      }
      if (res.statusCode !== 200) throw new Error(`status ${res.statusCode}`);
    };
    const ratios = [
      '| page | limit 10, median ms | limit 1000, median ms | **limit 1000 / limit 10** | µs per extra row |',
      '|---|---:|---:|---:|---:|',
      await ratioRow('first page (inject)', get(1, 10), get(1, 1000)),
      await ratioRow('last page (inject)', get(ROWS / 10, 10), get(ROWS / 1000, 1000)),
      await ratioRow('first page (HTTP)', getHttp(1, 10), getHttp(1, 1000)),
      await ratioRow('last page (HTTP)', getHttp(ROWS / 10, 10), getHttp(ROWS / 1000, 1000)),
    ];
    await pool.close();
    // Contrast: the query a LIMIT/OFFSET list would run (database only, no HTTP).
    for (const c of [cases[0]!, cases[2]!]) {
      const r = await time(async () => {
        await db
          .selectFrom('transactions')
          .select(['id', 'amount', 'tx_hash', 'status'])
          .where('wallet_id', '=', wallet.id)
          .orderBy('id', 'desc')
          .limit(c.limit)
          .offset((c.page - 1) * c.limit)
          .execute();
      });
      rows.push(`| naive OFFSET query (for contrast) | ${c.label} | ${c.page} | ${c.limit} | ${r.median.toFixed(2)} | ${r.p95.toFixed(2)} |`);
    }

    const command = driver === 'postgres' ? 'DATABASE_URL=postgres://postgres@127.0.0.1:5432/test npm run bench:list-pages' : 'npm run bench:list-pages';
    const section = [
      `## ${driver === 'postgres' ? 'PostgreSQL' : 'SQLite'}`,
      '',
      `Command: \`${command}\` (${new Date().toISOString().slice(0, 10)}, Node ${process.version}, ${ROWS.toLocaleString('en')} rows in one wallet seeded in ${seedS.toFixed(1)} s; ${RUNS} timed requests per case after ${WARMUP} warm-up).`,
      '',
      '| what | case | page | limit | median ms | p95 ms |',
      '|---|---|---:|---:|---:|---:|',
      ...rows,
      '',
      ...ratios,
      '',
    ].join('\n');
    process.stdout.write(`\n${section}\n`);
    if (PROFILE_S > 0) {
      const url = `/api/wallet/${wallet.id}/transaction?page=1&limit=1000`;
      process.stdout.write(`profiling: ${url} for ${PROFILE_S} s\n`);
      const until = Date.now() + PROFILE_S * 1000;
      let n = 0;
      while (Date.now() < until) {
        await app.inject({ method: 'GET', url, headers: { authorization: bearer } });
        await turn();
        n++;
      }
      process.stdout.write(`${n} requests (${((PROFILE_S * 1000) / n).toFixed(2)} ms each); results file not written on a profiling run\n`);
      return;
    }

    const dir = new URL('./results/', import.meta.url);
    mkdirSync(dir, { recursive: true });
    const file = new URL('transactions-list.md', dir);
    let previous = '';
    try {
      previous = readFileSync(file, 'utf8');
    } catch {
      // first run
    }
    const header =
      '# Transaction list: first page vs last page on 1,000,000 rows\n\n' +
      'Page N is the index range `seq in (total - N*limit, total - (N-1)*limit]` on `(wallet_id, seq)` ' +
      '(or `(wallet_id, symbol_key, symbol_seq)` with `token`), and the total is the largest `seq`, so every page costs ' +
      'the same. Generated by `bench/transactions-list.ts`; timings are through the whole service route (fastify inject). ' +
      'The second table of each section is the cost of a 1000-row page against a 10-row page of the same run, the two requests alternating (medians), ' +
      'the ratio the issue bounds (at most 8x on SQLite, 16x on PostgreSQL).\n\n';
    const other = previous
      .split(/^(?=## )/m)
      .filter((s) => s.startsWith('## ') && !s.startsWith(`## ${driver === 'postgres' ? 'PostgreSQL' : 'SQLite'}`));
    const ordered = driver === 'postgres' ? [...other, section] : [section, ...other];
    writeFileSync(file, header + ordered.map((s) => s.trimEnd() + '\n').join('\n'));
    process.stdout.write(`written to bench/results/transactions-list.md\n`);
  } finally {
    await app.close();
    await store.destroy();
    await database.drop();
  }
}

main().catch((e) => {
  process.stderr.write(`${(e as Error).stack ?? String(e)}\n`);
  process.exit(1);
});
