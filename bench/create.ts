/**
 * Benchmark: POST /api/wallet/{wallet}/transaction/create from one hot wallet as a user meets
 * it, against bare viem sign + send to the same anvil, in the same run, on SQLite and PostgreSQL.
 *
 *   npm run bench:create [-- --count 600 --concurrency 10 --wallets 1,10 --db sqlite,postgres --processes 1|2]
 *
 * Per database: a fresh anvil (automine), then
 *
 * 1. the baseline, bare viem in this process: `--concurrency` funded accounts (local keys), one
 *    loop each, `--count` transfers of 1 wei in all, each signed locally (explicit nonce, gas
 *    21000, fees read once) and sent with `eth_sendRawTransaction`;
 * 2. the service with `npm start` in its own process (bench/process.ts: the defaults — workers on,
 *    MAX_PENDING_PER_WALLET 64, the watcher's pending poll, LOG_LEVEL info; only the rate limit
 *    raised out of reach): `--count` creates of 1 wei at concurrency `--concurrency` over HTTP
 *    (undici, keep-alive), from one wallet (the hot wallet: its creates serialise on its lock and
 *    nonce), then spread over 10 wallets for contrast. A create refused because the wallet has
 *    64 transfers unconfirmed (the default bound) is counted and retried after 50 ms, as a
 *    client would; creates/s counts accepted ones over the whole time.
 *
 * On PostgreSQL `--processes 2` starts a second service process on the same database and
 * sends half the creates to each. Writes bench/results/create.md. Never run by `npm test`.
 */
import { cpus } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { setTimeout as sleep } from 'node:timers/promises';
import { Pool } from 'undici';
import { createPublicClient, http, type Address } from 'viem';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { findFreePort, startDevnet, type Devnet } from '../src/chain/devnet.js';
import { nonNegativeInt, parseDatabases, percentile, positiveInt, rpc, runBench, writeReport, type Driver } from './common.js';
import { profileSignal, settingsNote, startServiceProcess, type ServiceProcess } from './process.js';

const HERE = dirname(fileURLToPath(import.meta.url));
const RESULTS_FILE = join(HERE, 'results', 'create.md');
const RECIPIENT: Address = '0xa0Ee7A142d267C1f36714E4a8F75612F20a79720';
const FUNDS = 10n ** 24n;

const { values: flags } = parseArgs({
  options: {
    count: { type: 'string', default: '600' },
    concurrency: { type: 'string', default: '10' },
    wallets: { type: 'string', default: '1,10' },
    db: { type: 'string', default: 'sqlite,postgres' },
    warmup: { type: 'string', default: '20' },
    processes: { type: 'string', default: '1' },
  },
});
const count = positiveInt('count', flags.count);
const concurrency = positiveInt('concurrency', flags.concurrency);
const walletCounts = flags.wallets.split(',').map((w) => positiveInt('wallets', w.trim()));
const warmup = nonNegativeInt('warmup', flags.warmup);
const processes = positiveInt('processes', flags.processes);
const databases = parseDatabases(flags.db);

/** How long one create may be refused at the pending cap before the run is given up. */
const REFUSED_FOR_MS = 60_000;

interface Run {
  perSecond: number;
  p50: number;
  p99: number;
  refusals: number;
  cpuUsPerOp: number;
}

/** `total` jobs over `loops` concurrent loops; job(loop) returns false when refused (then retried). */
async function drive(total: number, loops: number, job: (loop: number) => Promise<boolean>, cpuMs: () => number = () => 0): Promise<Run> {
  const times: number[] = [];
  let next = 0;
  let refusals = 0;
  const cpu0 = cpuMs();
  const started = performance.now();
  await Promise.all(
    Array.from({ length: loops }, async (_, loop) => {
      while (next < total) {
        next++;
        const t0 = performance.now();
        while (!(await job(loop))) {
          refusals++;
          // Nothing confirmed for a minute: the chain stopped mining (anvil's pool has been seen to
          // leave an account's next nonce queued, baseline accounts included), not a slow service.
          if (performance.now() - t0 > REFUSED_FOR_MS)
            throw new Error(`a create refused for ${REFUSED_FOR_MS / 1000} s (64 pending): is the node still mining? (txpool_status)`);
          await sleep(50);
        }
        times.push(performance.now() - t0);
      }
    }),
  );
  const elapsed = performance.now() - started;
  times.sort((a, b) => a - b);
  return {
    perSecond: (times.length / elapsed) * 1000,
    p50: percentile(times, 50),
    p99: percentile(times, 99),
    refusals,
    cpuUsPerOp: ((cpuMs() - cpu0) * 1000) / times.length,
  };
}

const fund = (devnet: Devnet, address: string) => rpc(devnet.rpcUrl, 'anvil_setBalance', [address, `0x${FUNDS.toString(16)}`]);

async function baseline(devnet: Devnet): Promise<Run> {
  const client = createPublicClient({ transport: http(devnet.rpcUrl) });
  const accounts = Array.from({ length: concurrency }, () => privateKeyToAccount(generatePrivateKey()));
  for (const a of accounts) await fund(devnet, a.address);
  const nonces = await Promise.all(accounts.map((a) => client.getTransactionCount({ address: a.address, blockTag: 'pending' })));
  const fees = await client.estimateFeesPerGas();
  const send = async (loop: number) => {
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
    return true;
  };
  await drive(Math.min(warmup, count), concurrency, send);
  return drive(count, concurrency, send, () => process.cpuUsage().user / 1000 + process.cpuUsage().system / 1000);
}

/** Creates spread over `wallets` (loop k uses wallet k mod W), services round robin by loop. */
async function serviceRun(services: ServiceProcess[], wallets: number[]): Promise<Run> {
  const pools = services.map((s) => new Pool(s.base, { connections: concurrency, pipelining: 1 }));
  const job = async (loop: number) => {
    const s = loop % services.length;
    const res = await pools[s]!.request({
      method: 'POST',
      path: `/api/wallet/${wallets[loop % wallets.length]!}/transaction/create`,
      headers: { 'content-type': 'application/json', authorization: `Bearer ${services[s]!.token}` },
      body: JSON.stringify({ amount: '0.000000000000000001', token: 'ETH', address: RECIPIENT }),
    });
    const text = await res.body.text();
    if (res.statusCode === 200) return true;
    if (res.statusCode === 429 || /pending|unconfirmed/i.test(text)) return false;
    throw new Error(`create: ${res.statusCode} ${text}`);
  };
  try {
    await drive(Math.min(warmup, count), concurrency, job);
    await profileSignal(services);
    const run = await drive(count, concurrency, job, () => services.reduce((s, p) => s + p.cpuMs(), 0));
    await profileSignal(services);
    return run;
  } finally {
    await Promise.all(pools.map((p) => p.close()));
  }
}

interface Row {
  driver: string;
  processes: number;
  base: Run;
  runs: Array<{ wallets: number; run: Run }>;
  peakRssMiB: number;
}

async function runDatabase(driver: Driver): Promise<Row> {
  const devnet = await startDevnet({ port: await findFreePort() });
  try {
    process.stderr.write(`${driver}: baseline ... `);
    const base = await baseline(devnet);
    const first = await startServiceProcess({ driver, rpcUrl: devnet.rpcUrl });
    const services: ServiceProcess[] = [first];
    try {
      const n = driver === 'postgres' ? processes : 1;
      for (let i = 1; i < n; i++)
        services.push(
          await startServiceProcess({
            driver,
            rpcUrl: devnet.rpcUrl,
            database: first.database,
            appKey: first.appKey,
            label: String(i + 1),
          }),
        );
      const wallets: number[] = [];
      for (let i = 0; i < Math.max(...walletCounts); i++) {
        const res = await fetch(`${first.base}/api/wallet/create`, {
          method: 'POST',
          headers: { authorization: `Bearer ${first.token}`, 'content-type': 'application/json' },
          body: JSON.stringify({ name: `bench ${i}`, network_id: first.networkId }),
        });
        const w = ((await res.json()) as { data: { id: number; address: Address } }).data;
        await fund(devnet, w.address);
        wallets.push(w.id);
      }
      const runs: Row['runs'] = [];
      for (const w of walletCounts) {
        process.stderr.write(`${w} wallet(s) ... `);
        runs.push({ wallets: w, run: await serviceRun(services, wallets.slice(0, w)) });
      }
      process.stderr.write('done\n');
      return {
        driver: driver === 'sqlite' ? 'SQLite' : 'PostgreSQL',
        processes: n,
        base,
        runs,
        peakRssMiB: Math.max(...services.map((s) => s.peakRssMiB())),
      };
    } finally {
      for (const s of services.reverse()) await s.stop();
    }
  } finally {
    await devnet.stop();
  }
}

async function main(): Promise<void> {
  const started = Date.now();
  const rows: Row[] = [];
  for (const d of databases) rows.push(await runDatabase(d));
  const f = (n: number, d = 1) => n.toLocaleString('en-US', { minimumFractionDigits: d, maximumFractionDigits: d });
  const lines = [
    '| Database | What | per second | p50 / p99 ms | refused (64 pending), retried | CPU µs/op (service; bare: this process) | **/ bare viem** |',
    '|---|---|---:|---:|---:|---:|---:|',
  ];
  for (const r of rows) {
    lines.push(
      `| ${r.driver} | bare viem sign + eth_sendRawTransaction, ${concurrency} accounts | ${f(r.base.perSecond)} | ${f(r.base.p50, 2)} / ${f(r.base.p99, 2)} | — | ${f(r.base.cpuUsPerOp, 0)} | 1 |`,
    );
    for (const { wallets, run } of r.runs) {
      lines.push(
        `| ${r.driver} | create, ${wallets === 1 ? 'one wallet' : `${wallets} wallets`}, ${r.processes} process${r.processes > 1 ? 'es' : ''} | ${f(run.perSecond)} | ${f(run.p50, 2)} / ${f(run.p99, 2)} | ${run.refusals} | ${f(run.cpuUsPerOp, 0)} | ` +
          `${wallets === 1 ? '**' : ''}${f(run.perSecond / r.base.perSecond, 3)}×${wallets === 1 ? '**' : ''} |`,
      );
    }
    lines.push(`| ${r.driver} | service peak RSS | ${f(r.peakRssMiB, 0)} MiB | | | | |`);
  }
  const argv = process.argv.slice(2).join(' ');
  const cpu = cpus();
  const report = [
    '## Transfer creation from one hot wallet vs bare viem sign + send',
    '',
    ...lines,
    '',
    `Command: \`npm run bench:create${argv ? ` -- ${argv}` : ''}\` (\`npm start\` with its defaults and ${settingsNote()}; ${count} creates at concurrency ${concurrency}). ` +
      `${new Date().toISOString().slice(0, 10)}, Node ${process.version}, ${cpu.length} × ${cpu[0]?.model.trim() ?? 'CPU'}; anvil (automine), PostgreSQL and the load generator on the same machine.`,
    '',
  ].join('\n');
  writeReport(RESULTS_FILE, report, started);
}

runBench(main);
