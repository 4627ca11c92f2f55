/**
 * Benchmark: webhook deliveries as a user meets them — while the events are being made by
 * requests over HTTP — against a bare undici POST loop to the same receiver in the same run,
 * with event-to-delivery latency, on SQLite and PostgreSQL.
 *
 *   npm run bench:webhooks [-- --updates 1000 --concurrency 20 --webhooks 1 --db sqlite,postgres --processes 1|2]
 *
 * The service runs with `npm start` in its own process (bench/process.ts: the defaults —
 * WEBHOOK_CONCURRENCY 64, WEBHOOK_POLL_MS 500, LOG_LEVEL info — only the rate limit raised out
 * of reach). A wallet gets `--webhooks` signed `wallet` webhooks (events `wallet.updated`, one
 * extra header) pointing at a receiver, a plain node:http server in a process of its own that
 * notes when each delivery arrives. Then `--updates` `POST /api/wallet/{wallet}/update`
 * requests, `--concurrency` at a time over keep-alive connections, each renaming the wallet to a
 * name of its own: each answer means a committed `wallet.updated` event, so
 *
 * - deliveries/s = updates × webhooks ÷ (last delivery's arrival − first request's start);
 * - event → delivery = a delivery's arrival at the receiver − its update's answer at the client.
 *
 * The baseline posts the same number of bodies of the size the receiver saw, 32 in parallel
 * (what the service sends one webhook at most with its defaults) over one undici pool, to the same receiver: the floor of the
 * HTTP part alone on this machine. A second figure in the same run bounds the first from above:
 * the same number of updates, the same way, to a second wallet that has no webhook (each still
 * an event in the outbox, marked dispatched with no delivery): deliveries that each follow an
 * update cannot come faster than those updates alone. It runs after the deliveries' run: the
 * process is then warmer (measured before it, on a process warmed by 100 updates only, the same
 * updates reached 889 a second on SQLite against 1,316-1,958 after), so the figure errs high,
 * as a ceiling should. A third bounds it from outside the service: the same updates sent to the
 * bare relay (bench/bare-server.ts `relay`: Fastify answering each update at once and then POSTing
 * a body of the service's size to the receiver over undici; no database, no signing), the HTTP
 * of the scenario alone on this machine, against the same bare loop. Every phase's CPU is
 * printed per process (the bench's client, the server, the receiver; from /proc), with how many
 * of the machine's cores were busy. On PostgreSQL `--processes 2` starts a second service process
 * on the same database (both running the workers) and sends half the updates to each.
 *
 * Writes bench/results/webhooks.md. Never run by `npm test`.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { cpus } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { Agent, Pool, request } from 'undici';
import { parseDatabases, percentile, positiveInt, runBench, writeReport, type Driver } from './common.js';
import { processCpuMs, settingsNote, profileSignal, startBareProcess, startServiceProcess, type ServiceProcess } from './process.js';
import { findFreePort, startDevnet } from '../src/chain/devnet.js';

const HERE = dirname(fileURLToPath(import.meta.url));
const RESULTS_FILE = join(HERE, 'results', 'webhooks.md');
const BARE_PARALLEL = 32;

const { values: flags } = parseArgs({
  options: {
    updates: { type: 'string', default: '1000' },
    concurrency: { type: 'string', default: '20' },
    webhooks: { type: 'string', default: '1' },
    db: { type: 'string', default: 'sqlite,postgres' },
    processes: { type: 'string', default: '1' },
  },
});
const updates = positiveInt('updates', flags.updates);
const concurrency = positiveInt('concurrency', flags.concurrency);
const webhookCount = positiveInt('webhooks', flags.webhooks);
const processes = positiveInt('processes', flags.processes);
const databases = parseDatabases(flags.db);

/** Answers 200 at once; GET /stats gives the arrivals (ms since the epoch, sub-ms) by wallet name and the body size. */
const RECEIVER_SOURCE = `
const http = require('node:http');
const { performance } = require('node:perf_hooks');
let arrivals = {}, count = 0, bytes = 0;
const s = http.createServer((q, r) => {
  if (q.method === 'GET') { r.writeHead(200, { 'content-type': 'application/json' }); r.end(JSON.stringify({ count, bytes, arrivals })); return; }
  if (q.method === 'DELETE') { arrivals = {}; count = 0; r.end('ok'); return; }
  const chunks = [];
  q.on('data', (c) => chunks.push(c));
  q.on('end', () => {
    const at = performance.timeOrigin + performance.now();
    const body = Buffer.concat(chunks);
    count++; bytes = body.length;
    try { const name = JSON.parse(body).data.name; if (name) (arrivals[name] ??= []).push(at); } catch {}
    r.writeHead(200, { 'content-type': 'text/plain' }); r.end('ok');
  });
});
s.keepAliveTimeout = 60000;
s.listen(0, '127.0.0.1', () => process.stdout.write(String(s.address().port) + '\\n'));
`;

interface Receiver {
  url: string;
  child: ChildProcess;
}

async function startReceiver(): Promise<Receiver> {
  const child = spawn(process.execPath, ['-e', RECEIVER_SOURCE], { stdio: ['ignore', 'pipe', 'inherit'] });
  const port = await new Promise<string>((resolve, reject) => {
    child.stdout.once('data', (c: Buffer) => resolve(c.toString().trim()));
    child.once('exit', (code) => reject(new Error(`receiver exited with ${code}`)));
  });
  return { url: `http://127.0.0.1:${port}/hook`, child };
}

interface Stats {
  count: number;
  bytes: number;
  arrivals: Record<string, number[]>;
}

async function receiverStats(url: string): Promise<Stats> {
  return (await (await fetch(url)).json()) as Stats;
}

async function api(base: string, token: string, method: string, path: string, body?: unknown): Promise<any> {
  const res = await fetch(`${base}${path}`, {
    method,
    headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  if (res.status !== 200) throw new Error(`${method} ${path}: ${res.status} ${text}`);
  return (JSON.parse(text) as { data: unknown }).data;
}

/** `total` POSTs of `body`, `parallel` at a time, over one keep-alive pool; seconds. */
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
  const s = (performance.now() - started) / 1000;
  await agent.close();
  return s;
}

/** Where updates go: a service process, or the bare relay (any token). */
type Target = Pick<ServiceProcess, 'base' | 'token'>;

interface LoadRun {
  seconds: number;
  deliveries: number;
  updateRps: number;
  updateP50Ms: number;
  latencies: number[];
  bodyBytes: number;
}

/**
 * `n` updates named `${prefix}-i`, spread over the services, `concurrency` at a time; waits for
 * every delivery (`perUpdate` of them an update: 0 for a wallet without webhooks).
 */
async function updateLoad(
  services: Target[],
  walletId: number,
  receiverUrl: string,
  prefix: string,
  n: number,
  perUpdate = webhookCount,
): Promise<LoadRun> {
  await fetch(receiverUrl, { method: 'DELETE' });
  const pools = services.map((s) => new Pool(s.base, { connections: Math.ceil(concurrency / services.length), pipelining: 1 }));
  const answered = new Map<string, number>();
  const took: number[] = [];
  let next = 0;
  const t0 = performance.timeOrigin + performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async (_, lane) => {
      while (next < n) {
        const i = next++;
        const name = `${prefix}-${i}`;
        const s = lane % services.length;
        const sent = performance.now();
        const res = await pools[s]!.request({
          path: `/api/wallet/${walletId}/update`,
          method: 'POST',
          headers: { authorization: `Bearer ${services[s]!.token}`, 'content-type': 'application/json' },
          body: JSON.stringify({ name }),
        });
        const text = await res.body.text();
        if (res.statusCode !== 200) throw new Error(`update: ${res.statusCode} ${text}`);
        answered.set(name, performance.timeOrigin + performance.now());
        took.push(performance.now() - sent);
      }
    }),
  );
  const tUpdates = performance.timeOrigin + performance.now();
  await Promise.all(pools.map((p) => p.close()));
  const updateRps = n / ((tUpdates - t0) / 1000);
  if (perUpdate === 0)
    return {
      seconds: (tUpdates - t0) / 1000,
      deliveries: 0,
      updateRps,
      updateP50Ms: percentile(
        took.sort((a, b) => a - b),
        50,
      ),
      latencies: [],
      bodyBytes: 0,
    };
  const want = n * perUpdate;
  const deadline = Date.now() + 300_000;
  let stats = await receiverStats(receiverUrl);
  while (stats.count < want) {
    if (Date.now() > deadline) throw new Error(`${stats.count} of ${want} deliveries after 300 s`);
    await sleep(20);
    stats = await receiverStats(receiverUrl);
  }
  let last = 0;
  const latencies: number[] = [];
  for (const [name, at] of answered) {
    const arrivals = stats.arrivals[name];
    if (!arrivals || arrivals.length !== perUpdate) throw new Error(`${name}: ${arrivals?.length ?? 0} deliveries`);
    for (const a of arrivals) {
      latencies.push(a - at);
      last = Math.max(last, a);
    }
  }
  latencies.sort((a, b) => a - b);
  took.sort((a, b) => a - b);
  return { seconds: (last - t0) / 1000, deliveries: want, updateRps, updateP50Ms: percentile(took, 50), latencies, bodyBytes: stats.bytes };
}

/** CPU of the processes a phase ran on (ms) and its wall time: the bench's client, the server (the service or the relay), the receiver. */
interface Cpu {
  client: number;
  server: number;
  receiver: number;
  wallMs: number;
}

async function withCpu<T>(serverPids: number[], receiverPid: number, run: () => Promise<T>): Promise<[T, Cpu]> {
  const servers = () => serverPids.reduce((sum, pid) => sum + processCpuMs(pid), 0);
  const [c0, s0, r0, t0] = [process.cpuUsage(), servers(), processCpuMs(receiverPid), performance.now()];
  const value = await run();
  const c = process.cpuUsage(c0);
  return [
    value,
    {
      client: (c.user + c.system) / 1000,
      server: servers() - s0,
      receiver: processCpuMs(receiverPid) - r0,
      wallMs: performance.now() - t0,
    },
  ];
}

interface Row {
  driver: string;
  processes: number;
  run: LoadRun;
  alone: LoadRun;
  relay: LoadRun;
  bareS: number;
  peakRssMiB: number;
  cpu: { run: Cpu; alone: Cpu; bare: Cpu; relay: Cpu };
}

async function runOne(driver: Driver, rpcUrl: string, receiver: Receiver): Promise<Row> {
  const receiverUrl = receiver.url;
  const receiverPid = receiver.child.pid!;
  const first = await startServiceProcess({ driver, rpcUrl });
  const services: ServiceProcess[] = [first];
  try {
    const n = driver === 'postgres' ? processes : 1;
    for (let i = 1; i < n; i++)
      services.push(await startServiceProcess({ driver, rpcUrl, database: first.database, appKey: first.appKey, label: String(i + 1) }));
    const pids = services.map((s) => s.pid);
    const wallet = (await api(first.base, first.token, 'POST', '/api/wallet/create', { name: 'Bench', network_id: first.networkId })) as {
      id: number;
    };
    // The same updates on a wallet without webhooks: what the update load alone reaches, the
    // ceiling of deliveries that each follow an update.
    const quiet = (await api(first.base, first.token, 'POST', '/api/wallet/create', { name: 'Quiet', network_id: first.networkId })) as {
      id: number;
    };
    for (let i = 0; i < webhookCount; i++) {
      await api(first.base, first.token, 'POST', `/api/wallet/${wallet.id}/webhook/create`, {
        url: receiverUrl,
        type: 'wallet',
        events: ['wallet.updated'],
        signature: `whsec_bench_${i}`,
        with_headers: { 'X-Bench': String(i) },
      });
    }
    process.stderr.write(`${driver}: warm-up ... `);
    await updateLoad(services, wallet.id, receiverUrl, 'warm', 100);
    process.stderr.write(`${updates} updates at ${concurrency} ... `);
    await profileSignal(services);
    const [run, runCpu] = await withCpu(pids, receiverPid, () => updateLoad(services, wallet.id, receiverUrl, 'u', updates));
    await profileSignal(services);
    process.stderr.write('the same updates without webhooks ... ');
    const [alone, aloneCpu] = await withCpu(pids, receiverPid, () => updateLoad(services, quiet.id, receiverUrl, 'q', updates, 0));
    const peakRssMiB = Math.max(...services.map((s) => s.peakRssMiB()));
    process.stderr.write('bare loop ... ');
    const body = JSON.stringify({ event: 'wallet.updated', data: { pad: 'x'.repeat(Math.max(0, run.bodyBytes - 40)) } });
    const [bareS, bareCpu] = await withCpu([], receiverPid, () => bareLoop(receiverUrl, body, run.deliveries, BARE_PARALLEL));
    process.stderr.write('bare relay ... ');
    const [relay, relayCpu] = await relayRun(first.database.dataDir, receiver, run.bodyBytes);
    process.stderr.write('done\n');
    return {
      driver: driver === 'sqlite' ? 'SQLite' : 'PostgreSQL',
      processes: n,
      run,
      alone,
      relay,
      bareS,
      peakRssMiB,
      cpu: { run: runCpu, alone: aloneCpu, bare: bareCpu, relay: relayCpu },
    };
  } finally {
    for (const s of services.reverse()) await s.stop();
  }
}

/**
 * The same updates to the bare relay (bench/bare-server.ts `relay`): each answered and then sent
 * to the receiver as a body of the service's size, one a request (whatever `--webhooks`), no
 * database. What the scenario's HTTP alone reaches on this machine.
 */
async function relayRun(dir: string, receiver: Receiver, bodyBytes: number): Promise<[LoadRun, Cpu]> {
  const relay = await startBareProcess(JSON.stringify({ receiver: receiver.url, bodyBytes }), 'relay', dir);
  try {
    const target = { base: new URL(relay.url).origin, token: 'none' };
    await updateLoad([target], 1, receiver.url, 'rw', 100, 1);
    return await withCpu([relay.pid], receiver.child.pid!, () => updateLoad([target], 1, receiver.url, 'r', updates, 1));
  } finally {
    await relay.stop();
  }
}

const f = (n: number, d = 0) => n.toLocaleString('en-US', { minimumFractionDigits: d, maximumFractionDigits: d });

async function main(): Promise<void> {
  const started = Date.now();
  const devnet = await startDevnet({ port: await findFreePort() });
  const receiver = await startReceiver();
  const rows: Row[] = [];
  try {
    for (const driver of databases) rows.push(await runOne(driver, devnet.rpcUrl, receiver));
  } finally {
    receiver.child.kill();
    await devnet.stop();
  }
  const lines = [
    '| Database | Service processes | Updates/s (p50 ms) | Deliveries | Time (s) | Deliveries/s | Bare undici/s | **/ bare** | Event → delivery p50 / p99 (ms) | Updates alone/s (p50 ms): a wallet without webhooks | Deliveries / updates alone | Bare relay: deliveries/s (**/ bare**) | Peak RSS (MiB) |',
    '|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|',
  ];
  const cpuLines = [
    '| Database | Phase | Bodies | Wall (s) | CPU ms: client / server / receiver | Cores busy | CPU a body (µs), all three |',
    '|---|---|---:|---:|---:|---:|---:|',
  ];
  for (const r of rows) {
    const rate = r.run.deliveries / r.run.seconds;
    const bare = r.run.deliveries / r.bareS;
    const relayRate = r.relay.deliveries / r.relay.seconds;
    lines.push(
      `| ${r.driver} | ${r.processes} | ${f(r.run.updateRps)} (${f(r.run.updateP50Ms, 1)}) | ${f(r.run.deliveries)} | ${f(r.run.seconds, 2)} | ${f(rate)} | ${f(bare)} | **${f(rate / bare, 3)}×** | ` +
        `${f(percentile(r.run.latencies, 50), 1)} / ${f(percentile(r.run.latencies, 99), 1)} | ${f(r.alone.updateRps)} (${f(r.alone.updateP50Ms, 1)}) | ${f(rate / r.alone.updateRps, 3)}× | ` +
        `${f(relayRate)} (**${f(relayRate / bare, 3)}×**) | ${f(r.peakRssMiB)} |`,
    );
    const phases: Array<[string, number, Cpu]> = [
      ['deliveries under the updates', r.run.deliveries, r.cpu.run],
      ['the updates alone (no webhook)', updates, r.cpu.alone],
      ['bare undici to the receiver', r.run.deliveries, r.cpu.bare],
      ['bare relay: update answered, body sent on', r.relay.deliveries, r.cpu.relay],
    ];
    for (const [phase, bodies, c] of phases) {
      const total = c.client + c.server + c.receiver;
      cpuLines.push(
        `| ${r.driver} | ${phase} | ${f(bodies)} | ${f(c.wallMs / 1000, 2)} | ${f(c.client)} / ${f(c.server)} / ${f(c.receiver)} | ${f(total / c.wallMs, 2)} | ${f((total * 1000) / bodies)} |`,
      );
    }
  }
  const argv = process.argv.slice(2).join(' ');
  const cpu = cpus();
  const report = [
    '## Webhook deliveries while their events are made over HTTP',
    '',
    ...lines,
    '',
    "Where the CPU went in each phase (from /proc and the bench's own `process.cpuUsage`; the client is the bench process sending the updates or the bare POSTs; anvil and PostgreSQL not counted):",
    '',
    ...cpuLines,
    '',
    `Command: \`npm run bench:webhooks${argv ? ` -- ${argv}` : ''}\` (\`npm start\` with its defaults and ${settingsNote()}; ${f(updates)} wallet updates, ` +
      `${concurrency} at a time, × ${webhookCount} signed webhook(s) with one extra header; the receiver a bare node:http process; the baseline ` +
      `${BARE_PARALLEL} undici POSTs in parallel of the same size). ${new Date().toISOString().slice(0, 10)}, Node ${process.version}, ` +
      `${cpu.length} × ${cpu[0]?.model.trim() ?? 'CPU'}; anvil, PostgreSQL, the receiver and the load generator on the same machine.`,
    '',
  ].join('\n');
  writeReport(RESULTS_FILE, report, started);
}

runBench(main);
