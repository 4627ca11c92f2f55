/**
 * Benchmark: the service's memory, and its time a block, with 1,000 and with 100,000 rows of
 * each kind that grows — transactions, webhook deliveries (with their events) and open charges
 * (each with its deposit address, watched every block).
 *
 *   npm run bench:memory [-- --rows 1000,100000 --blocks 20 --db sqlite,postgres]
 *
 * For each database and row count: `npm start` in its own process (bench/process.ts: the
 * defaults), a wallet made through the API, then its rows seeded in a few SQL statements from this
 * process; then `--blocks` blocks are mined 500 ms apart, each timed from its mining to the
 * watcher's cursor reaching it (the charges' payment scan runs in that tick), and the first pages
 * of the wallet's transactions, events and deliveries are read. Reported: the service's resident
 * memory after the seed (idle) and its peak (VmHWM), and the block time (p50 / max).
 *
 * Writes bench/results/memory.md. Never run by `npm test`.
 */
import { cpus } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { setTimeout as sleep } from 'node:timers/promises';
import { sql, type Kysely } from 'kysely';
import { findFreePort, startDevnet, type Devnet } from '../src/chain/devnet.js';
import { loadConfig } from '../src/config.js';
import { createLogger } from '../src/logger.js';
import { openStore } from '../src/runtime.js';
import type { Store } from '../src/db/index.js';
import { parseDatabases, percentile, positiveInt, rpc, runBench, writeReport, type Driver } from './common.js';
import { settingsNote, startServiceProcess, type ServiceProcess } from './process.js';
import { seedTransactions } from './seed.js';

const HERE = dirname(fileURLToPath(import.meta.url));
const RESULTS_FILE = join(HERE, 'results', 'memory.md');

const { values: flags } = parseArgs({
  options: {
    rows: { type: 'string', default: '1000,100000' },
    blocks: { type: 'string', default: '20' },
    db: { type: 'string', default: 'sqlite,postgres' },
  },
});
const rowCounts = flags.rows.split(',').map((r) => positiveInt('rows', r.trim()));
const blocks = positiveInt('blocks', flags.blocks);
const databases = parseDatabases(flags.db);

/** A connection of this process to the service's database. */
async function storeOf(s: ServiceProcess): Promise<Store> {
  const config = loadConfig({
    NODE_ENV: 'production',
    APP_KEY: s.appKey,
    DATA_DIR: s.database.dataDir,
    DEVNET: 'off',
    ...(s.database.databaseUrl ? { DATABASE_URL: s.database.databaseUrl } : {}),
  });
  return openStore(config, createLogger('warn'));
}

/** `n` rows of 1..n: a recursive CTE on SQLite, generate_series on PostgreSQL. */
function series(driver: Driver, n: number) {
  return driver === 'postgres'
    ? sql`SELECT x FROM generate_series(1, ${sql.lit(n)}) AS g(x)`
    : sql`WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < ${sql.lit(n)}) SELECT x FROM c`;
}

/** N open charges (each its deposit address), N delivered deliveries with their events, N transactions. */
async function seed(db: Kysely<any>, driver: Driver, walletId: number, n: number): Promise<void> {
  const now = Date.now();
  const w = await db.selectFrom('wallets').select(['user_id']).where('id', '=', walletId).executeTakeFirstOrThrow();
  const eth = await db
    .selectFrom('wallet_tokens')
    .select('id')
    .where('wallet_id', '=', walletId)
    .where('is_native', '=', 1)
    .executeTakeFirstOrThrow();
  const hex = (x: string, width: number) =>
    driver === 'postgres' ? `'0x' || lpad(to_hex(${x}), ${width}, '0')` : `printf('0x%0${width}x', ${x})`;
  const [wid, uid, tid, at, far] = [sql.lit(walletId), sql.lit(w.user_id), sql.lit(eth.id), sql.lit(now), sql.lit(now + 86_400_000)];
  const base = Number((await sql<{ m: number | null }>`SELECT max(id) AS m FROM sub_wallets`.execute(db)).rows[0]?.m ?? 0);
  await sql`INSERT INTO sub_wallets (wallet_id, derivation_index, address, private_key_enc, created_at)
    SELECT ${wid}, 1000000 + x, ${sql.raw(hex('x + 4096', 40))}, 'never-decrypted', ${at} FROM (${series(driver, n)}) s`.execute(db);
  await sql`INSERT INTO charges (uuid, wallet_id, sub_wallet_id, token_id, amount, paid_amount, status, mode, expires, expires_at, created_at, updated_at, watch_until)
    SELECT ${sql.raw(hex('x', 32))}, ${wid}, ${sql.lit(base)} + x, ${tid}, '10000000000000000', '0', 'pending', 'exact', 86400, ${far}, ${at}, ${at}, ${far}
    FROM (${series(driver, n)}) s`.execute(db);
  const hook = await db
    .insertInto('webhooks')
    .values({
      wallet_id: walletId,
      url: 'http://127.0.0.1:9/hook',
      type: 'wallet',
      events: '["*"]',
      status: 'active',
      signature_enc: null,
      headers_enc: null,
      deleted_at: null,
      created_at: now,
      updated_at: now,
    })
    .returning('id')
    .executeTakeFirstOrThrow();
  const firstEvent = Number((await sql<{ m: number | null }>`SELECT max(id) AS m FROM events`.execute(db)).rows[0]?.m ?? 0);
  await sql`INSERT INTO events (user_id, wallet_id, type, name, payload, dispatched_at, created_at)
    SELECT ${uid}, ${wid}, 'wallet', 'wallet.updated', '{"id":1,"name":"x"}', ${at}, ${at} FROM (${series(driver, n)}) s`.execute(db);
  await sql`INSERT INTO webhook_deliveries (uuid, webhook_id, event_id, event_name, body, status, attempts, next_attempt_at, response_status, delivered_at, created_at, updated_at)
    SELECT ${sql.raw(hex('x', 32))}, ${sql.lit(hook.id)}, ${sql.lit(firstEvent)} + x, 'wallet.updated', '{"event":"wallet.updated","data":{"id":1,"name":"x"}}',
      'delivered', 1, ${at}, 200, ${at}, ${at}, ${at} FROM (${series(driver, n)}) s`.execute(db);
  await seedTransactions(db, driver, { walletId, tokenId: eth.id, tokenEvery4th: eth.id, rows: n, nowMs: now });
}

async function cursorOf(db: Kysely<any>, networkId: number): Promise<number> {
  const r = await db.selectFrom('chain_cursors').select('block_number').where('network_id', '=', networkId).executeTakeFirst();
  return r ? Number(r.block_number) : -1;
}

interface Row {
  driver: string;
  rows: number;
  idleMiB: number;
  peakMiB: number;
  blockMs: number[];
}

async function runOne(driver: Driver, devnet: Devnet, n: number): Promise<Row> {
  const s = await startServiceProcess({ driver, rpcUrl: devnet.rpcUrl });
  const store = await storeOf(s);
  try {
    const auth = { authorization: `Bearer ${s.token}` };
    const wallet = (
      (await (
        await fetch(`${s.base}/api/wallet/create`, {
          method: 'POST',
          headers: { ...auth, 'content-type': 'application/json' },
          body: JSON.stringify({ name: 'Bench', network_id: s.networkId }),
        })
      ).json()) as { data: { id: number } }
    ).data;
    process.stderr.write(`${driver}, ${n} rows of each: seeding ... `);
    await seed(store.db, driver, wallet.id, n);
    await rpc(devnet.rpcUrl, 'evm_mine', []);
    const head0 = Number(BigInt((await rpc(devnet.rpcUrl, 'eth_blockNumber', [])) as string));
    for (let i = 0; i < 600 && (await cursorOf(store.db, s.networkId)) < head0; i++) await sleep(100);
    const idleMiB = s.rssMiB();
    process.stderr.write(`${blocks} blocks ... `);
    const blockMs: number[] = [];
    for (let b = 0; b < blocks; b++) {
      await rpc(devnet.rpcUrl, 'evm_mine', []);
      const head = Number(BigInt((await rpc(devnet.rpcUrl, 'eth_blockNumber', [])) as string));
      const t0 = performance.now();
      while ((await cursorOf(store.db, s.networkId)) < head) await sleep(5);
      blockMs.push(performance.now() - t0);
      await sleep(Math.max(0, 500 - (performance.now() - t0)));
    }
    const hook = await store.db.selectFrom('webhooks').select('id').where('wallet_id', '=', wallet.id).executeTakeFirstOrThrow();
    for (const path of [
      `/api/wallet/${wallet.id}/transaction?limit=1000`,
      '/api/events?limit=100',
      `/api/wallet/${wallet.id}/webhook/${hook.id}/deliveries?limit=100`,
      `/api/wallet/${wallet.id}/charge?limit=100`,
    ]) {
      for (let i = 0; i < 20; i++) {
        const res = await fetch(`${s.base}${path}`, { headers: auth });
        await res.text();
        if (res.status !== 200) throw new Error(`${path}: ${res.status}`);
      }
    }
    process.stderr.write('done\n');
    blockMs.sort((a, b) => a - b);
    return { driver: driver === 'sqlite' ? 'SQLite' : 'PostgreSQL', rows: n, idleMiB, peakMiB: s.peakRssMiB(), blockMs };
  } finally {
    await store.destroy();
    await s.stop();
  }
}

async function main(): Promise<void> {
  const started = Date.now();
  const devnet = await startDevnet({ port: await findFreePort() });
  const rows: Row[] = [];
  try {
    for (const d of databases) for (const n of rowCounts) rows.push(await runOne(d, devnet, n));
  } finally {
    await devnet.stop();
  }
  const f = (x: number, d = 0) => x.toLocaleString('en-US', { minimumFractionDigits: d, maximumFractionDigits: d });
  const lines = [
    '| Database | Rows of each (transactions, deliveries + events, open charges) | RSS after the seed (MiB) | Peak RSS (MiB) | Block → cursor, p50 / max (ms) |',
    '|---|---:|---:|---:|---:|',
    ...rows.map(
      (r) =>
        `| ${r.driver} | ${f(r.rows)} | ${f(r.idleMiB)} | ${f(r.peakMiB)} | ${f(percentile(r.blockMs, 50), 1)} / ${f(r.blockMs.at(-1)!, 1)} |`,
    ),
  ];
  const cpu = cpus();
  const argv = process.argv.slice(2).join(' ');
  const report = [
    '## Memory and block time with 1,000 and 100,000 rows of each kind',
    '',
    ...lines,
    '',
    `Command: \`npm run bench:memory${argv ? ` -- ${argv}` : ''}\` (\`npm start\` with its defaults and ${settingsNote()}; ${blocks} blocks mined 500 ms apart, then the first pages of transactions, events, deliveries and charges, 20 times each). ` +
      `${new Date().toISOString().slice(0, 10)}, Node ${process.version}, ${cpu.length} × ${cpu[0]?.model.trim() ?? 'CPU'}.`,
    '',
  ].join('\n');
  writeReport(RESULTS_FILE, report, started);
}

runBench(main);
