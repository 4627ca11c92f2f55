/**
 * Benchmark: webhook deliveries per second, against a bare undici POST loop to the same
 * receiver in the same run, and event-to-delivery latency (p50, p99), on SQLite and PostgreSQL.
 *
 *   npm run bench:webhooks [-- --events 2000 --webhooks 2 --concurrency 16 --latency-events 200 --poll 500,50 --db sqlite,postgres]
 *
 * The receiver is a plain node:http server in its own process (answers 200 `ok` at once), so it
 * does not share the worker's event loop. For each database the real service pieces are built
 * (config, migrated store, secret box), a user, a wallet and `--webhooks` signed webhooks with
 * an extra header are created through WebhooksService, then:
 *
 * - throughput: `--events` events are written to the outbox in one transaction and the delivery
 *   worker is started; the clock runs until every delivery (events × webhooks) is `delivered`.
 *   That is the whole path: fan-out, claim, sign, POST, read the answer, record the attempt.
 *   The baseline posts the same number of same-sized bodies with undici, `--concurrency` in
 *   parallel over one keep-alive pool: the ceiling of this machine for the HTTP part alone.
 * - latency: with the worker idle, `--latency-events` events are recorded one at a time, 20 ms
 *   apart, as a module would; latency is `delivered_at - event created_at` (both from the
 *   service's clock), for each `--poll` value (WEBHOOK_POLL_MS). Events written by other
 *   modules do not wake the worker, so the poll interval dominates.
 *
 * PostgreSQL: a fresh database on DATABASE_URL (default postgres://postgres@127.0.0.1:5432/test),
 * dropped afterwards. Prints a markdown table and writes it to bench/results/webhooks.md.
 * Never run by `npm test`.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import { freshDatabase, parseDatabases, percentile, positiveInt, postgresBase } from './common.js';
import { cpus, loadavg } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { performance } from 'node:perf_hooks';
import { Agent, request } from 'undici';
import { loadConfig } from '../src/config.js';
import type { AppContext } from '../src/context.js';
import { createLogger } from '../src/logger.js';
import { recordEvent } from '../src/modules/events/outbox.js';
import { upsertNetwork } from '../src/modules/networks/networks.repository.js';
import { WebhooksService } from '../src/modules/webhooks/webhooks.service.js';
import { eventInfo } from '../src/modules/webhooks/webhooks.catalogue.js';
import { deliveryBody } from '../src/modules/webhooks/webhooks.signing.js';
import { createContext, openStore } from '../src/runtime.js';
import { startDeliveryWorker } from '../src/workers/deliveries.js';

const HERE = dirname(fileURLToPath(import.meta.url));
const RESULTS_FILE = join(HERE, 'results', 'webhooks.md');
const LATENCY_SPACING_MS = 20;

const { values: flags } = parseArgs({
  options: {
    events: { type: 'string', default: '2000' },
    webhooks: { type: 'string', default: '2' },
    concurrency: { type: 'string', default: '16' },
    'latency-events': { type: 'string', default: '200' },
    poll: { type: 'string', default: '500,50' },
    db: { type: 'string', default: 'sqlite,postgres' },
  },
});
const events = positiveInt('events', flags.events);
const webhookCount = positiveInt('webhooks', flags.webhooks);
const concurrency = positiveInt('concurrency', flags.concurrency);
const latencyEvents = positiveInt('latency-events', flags['latency-events']);
const polls = flags.poll.split(',').map((p) => positiveInt('poll', p.trim()));
const databases = parseDatabases(flags.db);


const RECEIVER_SOURCE = `
const http = require('node:http');
let n = 0;
const s = http.createServer((q, r) => { q.resume(); q.on('end', () => { n++; r.writeHead(200, { 'content-type': 'text/plain' }); r.end('ok'); }); });
s.keepAliveTimeout = 60000;
s.listen(0, '127.0.0.1', () => process.stdout.write(String(s.address().port) + '\\n'));
`;

async function startReceiverProcess(): Promise<{ url: string; child: ChildProcess }> {
  const child = spawn(process.execPath, ['-e', RECEIVER_SOURCE], { stdio: ['ignore', 'pipe', 'inherit'] });
  const port = await new Promise<string>((resolve, reject) => {
    child.stdout!.once('data', (c: Buffer) => resolve(c.toString().trim()));
    child.once('exit', (code) => reject(new Error(`receiver exited with ${code}`)));
  });
  return { url: `http://127.0.0.1:${port}/hook`, child };
}

/** `total` POSTs of `body`, `parallel` at a time, over one keep-alive pool. */
async function bareLoop(url: string, body: string, total: number, parallel: number): Promise<number> {
  const agent = new Agent({ connections: parallel, pipelining: 1 });
  let next = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: parallel }, async () => {
      while (next < total) {
        next += 1;
        const res = await request(url, { method: 'POST', body, headers: { 'content-type': 'application/json' }, dispatcher: agent });
        await res.body.text();
        if (res.statusCode !== 200) throw new Error(`receiver answered ${res.statusCode}`);
      }
    }),
  );
  const elapsed = (performance.now() - started) / 1000;
  await agent.close();
  return elapsed;
}

interface Env {
  ctx: AppContext;
  userId: number;
  walletId: number;
  close(): Promise<void>;
}

async function openEnv(db: 'sqlite' | 'postgres', pollMs: number): Promise<Env> {
  const database = await freshDatabase(db === 'postgres' ? postgresBase() : null, 'bench');
  const dbUrl = database.databaseUrl;
  const config = loadConfig({
    NODE_ENV: 'test',
    DATA_DIR: database.dataDir,
    APP_KEY: randomBytes(32).toString('base64'),
    LOG_LEVEL: 'warn',
    DEVNET: 'off',
    WEBHOOK_ALLOW_PRIVATE: 'true',
    WEBHOOK_CONCURRENCY: String(concurrency),
    WEBHOOK_POLL_MS: String(pollMs),
    ...(dbUrl ? { DATABASE_URL: dbUrl } : {}),
  });
  const log = createLogger(config.logLevel);
  const store = await openStore(config, log);
  const ctx = createContext(config, store, log);
  const now = Date.now();
  const user = await store.db
    .insertInto('users')
    .values({ name: 'bench', email: `bench-${randomBytes(4).toString('hex')}@example.com`, password_hash: 'x', created_at: now, updated_at: now })
    .returning('id')
    .executeTakeFirstOrThrow();
  const network = await upsertNetwork(
    store.db,
    { name: 'Bench', rpc_url: 'http://127.0.0.1:1', chain_id: 31337, currency_symbol: 'ETH', block_explorer: '', is_mainnet: false, confirmations: 1 },
    now,
  );
  const wallet = await store.db
    .insertInto('wallets')
    .values({
      user_id: user.id,
      network_id: network.id,
      name: 'bench',
      description: '',
      address: '0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266',
      private_key_enc: ctx.secrets.encrypt('0x00', { table: 'wallets', column: 'private_key_enc', id: 0 }), // never decrypted
      mnemonic_enc: ctx.secrets.encrypt('x', { table: 'wallets', column: 'mnemonic_enc', id: 0 }),
      next_sub_index: 1,
      created_at: now,
      updated_at: now,
    })
    .returning('id')
    .executeTakeFirstOrThrow();
  return {
    ctx,
    userId: user.id,
    walletId: wallet.id,
    async close() {
      await store.destroy();
      await database.drop();
    },
  };
}

function payload(walletId: number, i: number) {
  return { ...eventInfo('transaction.confirmed')!.payload, wallet_id: walletId, transaction_id: i };
}

async function countDelivered(ctx: AppContext): Promise<number> {
  const row = await ctx.store.db
    .selectFrom('webhook_deliveries')
    .select((eb) => eb.fn.countAll<number | string>().as('n'))
    .where('status', '=', 'delivered')
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

async function until(cond: () => Promise<boolean>, timeoutMs: number, what: string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await cond())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

async function createWebhooks(env: Env, url: string, n: number): Promise<void> {
  const service = new WebhooksService(env.ctx);
  for (let i = 0; i < n; i++) {
    await service.create(env.walletId, {
      url,
      type: 'transaction',
      events: ['*'],
      signature: `whsec_bench_${i}`,
      with_headers: { 'X-Bench': String(i) },
    });
  }
}

async function throughput(db: 'sqlite' | 'postgres', url: string): Promise<{ seconds: number; deliveries: number }> {
  const env = await openEnv(db, 500);
  try {
    await createWebhooks(env, url, webhookCount);
    const now = Date.now();
    await env.ctx.store.db.transaction().execute(async (trx) => {
      for (let i = 1; i <= events; i++) {
        await recordEvent(trx, { userId: env.userId, walletId: env.walletId, name: 'transaction.confirmed', payload: payload(env.walletId, i), nowMs: now });
      }
    });
    const total = events * webhookCount;
    const started = performance.now();
    const worker = startDeliveryWorker(env.ctx);
    await until(async () => (await countDelivered(env.ctx)) === total, 300_000, `${total} deliveries`);
    const seconds = (performance.now() - started) / 1000;
    await worker.stop();
    return { seconds, deliveries: total };
  } finally {
    await env.close();
  }
}


async function latency(db: 'sqlite' | 'postgres', url: string, pollMs: number): Promise<{ p50: number; p99: number; max: number }> {
  const env = await openEnv(db, pollMs);
  try {
    await createWebhooks(env, url, 1);
    const worker = startDeliveryWorker(env.ctx);
    for (let i = 1; i <= latencyEvents; i++) {
      await recordEvent(env.ctx.store.db, { userId: env.userId, walletId: env.walletId, name: 'transaction.confirmed', payload: payload(env.walletId, i), nowMs: env.ctx.clock.nowMs() });
      await new Promise((r) => setTimeout(r, LATENCY_SPACING_MS));
    }
    await until(async () => (await countDelivered(env.ctx)) === latencyEvents, 60_000, 'latency deliveries');
    await worker.stop();
    const rows = await env.ctx.store.db
      .selectFrom('webhook_deliveries')
      .innerJoin('events', 'events.id', 'webhook_deliveries.event_id')
      .select(['webhook_deliveries.delivered_at', 'events.created_at'])
      .execute();
    const ms = rows.map((r) => r.delivered_at! - r.created_at).sort((a, b) => a - b);
    return { p50: percentile(ms, 50), p99: percentile(ms, 99), max: ms[ms.length - 1]! };
  } finally {
    await env.close();
  }
}

const fmt = (n: number, digits = 0) => n.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits });
const label = (db: string) => (db === 'sqlite' ? 'SQLite' : 'PostgreSQL');

async function main(): Promise<void> {
  const receiver = await startReceiverProcess();
  try {
    const body = deliveryBody('transaction.confirmed', JSON.stringify(payload(1, 1)));
    const total = events * webhookCount;
    // Warm the receiver and the pool once, then measure.
    await bareLoop(receiver.url, body, Math.min(500, total), concurrency);
    const bareS = await bareLoop(receiver.url, body, total, concurrency);
    const bareRate = total / bareS;

    const tp: string[] = [];
    const lat: string[] = [];
    tp.push(`| — | bare undici POST loop, ${concurrency} in parallel | ${fmt(total)} | ${fmt(bareS, 2)} | ${fmt(bareRate)} | 1.00× |`);
    for (const db of databases as Array<'sqlite' | 'postgres'>) {
      const r = await throughput(db, receiver.url);
      const rate = r.deliveries / r.seconds;
      tp.push(`| ${label(db)} | delivery worker: outbox → delivered, ${concurrency} in flight | ${fmt(r.deliveries)} | ${fmt(r.seconds, 2)} | ${fmt(rate)} | ${fmt(rate / bareRate, 2)}× |`);
      for (const poll of polls) {
        const l = await latency(db, receiver.url, poll);
        lat.push(`| ${label(db)} | ${poll} | ${fmt(latencyEvents)} | ${l.p50} | ${l.p99} | ${l.max} |`);
      }
    }

    const cpu = cpus();
    const argv = process.argv.slice(2).join(' ');
    const md = [
      '## Webhook deliveries',
      '',
      '| Database | What | Deliveries | Time (s) | Deliveries/s | vs bare POST |',
      '|---|---|---:|---:|---:|---:|',
      ...tp,
      '',
      '### Event-to-delivery latency (`delivered_at` − event `created_at`)',
      '',
      '| Database | WEBHOOK_POLL_MS | Events | p50 (ms) | p99 (ms) | max (ms) |',
      '|---|---:|---:|---:|---:|---:|',
      ...lat,
      '',
      `Command: \`npm run bench:webhooks${argv ? ` -- ${argv}` : ''}\` (${fmt(events)} events × ${webhookCount} signed webhooks with one extra header; ` +
        `receiver: a bare node:http server in its own process answering 200 at once; latency events recorded one at a time, ${LATENCY_SPACING_MS} ms apart). ` +
        `${new Date().toISOString().slice(0, 10)}, Node ${process.version}, ${cpu.length} × ${cpu[0]?.model.trim() ?? 'CPU'}; PostgreSQL, receiver and service on the same machine ` +
        `(load average ${loadavg()[0]!.toFixed(1)} at the end of the run).`,
      '',
      'The worker\'s figure covers the whole path of each delivery: fan-out from the outbox, claim with a lease, HMAC signing (both schemes), the POST, reading the answer, and recording the attempt and the new status (the worker claims ahead into a queue, one transaction for many rows, and records outcomes in batches, one transaction each). ' +
        'At most half of the in-flight slots go to one webhook, hence several webhooks. Latency does not depend on WEBHOOK_POLL_MS: recording an event wakes the worker (in the same process at once; on PostgreSQL through a NOTIFY delivered at commit to every process), so the poll interval only bounds how late a missed signal is noticed.',
      '',
    ].join('\n');
    process.stdout.write(`${md}\n`);
    mkdirSync(dirname(RESULTS_FILE), { recursive: true });
    writeFileSync(RESULTS_FILE, md);
  } finally {
    receiver.child.kill();
  }
}

await main();
