/**
 * Benchmark: the chain watcher of a running service (`npm start`, its defaults) catching up N
 * blocks of backlog, against a bare viem loop that fetches the same blocks (getBlock with
 * transactions) and the receipt of every transaction in them, in the same run, on the same anvil.
 *
 *   npm run bench:watcher [-- --blocks 2000 --db sqlite|postgres]
 *
 * The backlog is what a user meets after their node stalled (or answered a head that stood
 * still) while blocks kept coming: a JSON-RPC proxy in front of anvil (the tests' RpcProxy; the
 * service's only endpoint, DEVNET_RPC_URL) answers `eth_blockNumber` with a head frozen at the watcher's cursor
 * while N blocks are mined, each holding one native transfer to the service's wallet (anvil's
 * first dev account; the few blocks lost to two transfers sharing an interval-mined block are
 * made up with empty blocks). The baseline reads those N blocks and their receipts with viem
 * straight from anvil, one block at a time (the service's calls go through the proxy, an extra
 * hop the baseline does not pay). Then the head is let go, and the watcher, which
 * polls on its own with the service's defaults (WATCHER_POLL_MS 1000, WATCHER_MAX_BLOCKS 100; a
 * backlog is worked through batch after batch without waiting for the poll), is timed from that
 * moment until `GET /api/supervisor` shows its `synced_block` at the head (polled every 25 ms over
 * HTTP). It does more than the loop: it records each transfer (a receipt row and its event) and
 * moves its cursor in one database transaction per block; the count of receipts recorded is read
 * back through the API. `BENCH_ENV=K=V,…` runs it with other settings, reported as such.
 *
 * Prints a markdown table and writes it to bench/results/watcher-catchup.md. Never run by `npm test`.
 */
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { createPublicClient, http, toHex, type Address, type Hex } from 'viem';
import { findFreePort, startDevnet, type Devnet } from '../src/chain/devnet.js';
import { parseDatabases, positiveInt, rpc, runBench, writeReport } from './common.js';
import { profileSignal, settingsNote, startServiceProcess, type ServiceProcess } from './process.js';
import { RpcProxy } from '../test/helpers/transfers.js';

const HERE = dirname(fileURLToPath(import.meta.url));
const RESULTS_FILE = join(HERE, 'results', 'watcher-catchup.md');
/** anvil's first dev account (unlocked, funded): sends the transfers. */
const DEV_ACCOUNT = '0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266';

const { values: flags } = parseArgs({
  options: {
    blocks: { type: 'string', default: '2000' },
    db: { type: 'string', default: 'sqlite' },
  },
});
const blocks = positiveInt('blocks', flags.blocks);
const driver = parseDatabases(flags.db)[0]!;

async function call(s: ServiceProcess, method: string, path: string, body?: unknown): Promise<{ data: any; headers: Headers }> {
  const res = await fetch(`${s.base}${path}`, {
    method,
    headers: { authorization: `Bearer ${s.token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const json = (await res.json()) as { data: any };
  if (res.status !== 200) throw new Error(`${method} ${path}: ${res.status} ${JSON.stringify(json)}`);
  return { data: json.data, headers: res.headers };
}

/** The watcher's cursor on the devnet, as the supervisor reports it. */
async function syncedBlock(s: ServiceProcess): Promise<number | null> {
  const r = await call(s, 'GET', '/api/supervisor');
  return (r.data.networks as Array<{ id: number; synced_block: number | null }>).find((n) => n.id === s.networkId)?.synced_block ?? null;
}

async function waitUntil(what: string, cond: () => Promise<boolean>, timeoutMs: number, pollMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await cond())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, pollMs));
  }
}

const headOf = async (url: string) => Number(BigInt((await rpc(url, 'eth_blockNumber', [])) as Hex));

/** The bare loop: every block with its transactions, then the receipt of each, one block at a time. */
async function bareLoop(rpcUrl: string, from: bigint, to: bigint): Promise<{ ms: number; receipts: number }> {
  const client = createPublicClient({ transport: http(rpcUrl) });
  const started = performance.now();
  let receipts = 0;
  for (let n = from; n <= to; n++) {
    const block = await client.getBlock({ blockNumber: n, includeTransactions: true });
    for (const tx of block.transactions) {
      await client.getTransactionReceipt({ hash: tx.hash });
      receipts++;
    }
  }
  return { ms: performance.now() - started, receipts };
}

interface Run {
  n: number;
  bare: { ms: number; receipts: number };
  watcherMs: number;
  received: number;
  cpuMs: number;
  peakRssMiB: number;
  calls: string;
}

/** The node calls the proxy passed on since `sinceMs`, by method ("eth_getBlockByNumber 2,020, …"). */
function callsSince(proxy: RpcProxy, sinceMs: number): string {
  const count = new Map<string, number>();
  for (const c of proxy.seen) if (c.atMs >= sinceMs) count.set(c.method, (count.get(c.method) ?? 0) + 1);
  return [...count]
    .sort((a, b) => b[1] - a[1])
    .map(([m, n]) => `${m} ${n.toLocaleString('en-US')}`)
    .join(', ');
}

/** The markdown of one run. */
function report(r: Run): string {
  const f = (x: number, d = 0) => x.toLocaleString('en-US', { minimumFractionDigits: d, maximumFractionDigits: d });
  return [
    '## Watcher catch-up vs a bare viem getBlock + receipts loop',
    '',
    '| What | Blocks | Time (s) | Blocks/s | Service CPU (s) | Service peak RSS | **Time / bare** |',
    '|---|---:|---:|---:|---:|---:|---:|',
    `| bare viem loop: getBlock (with transactions) + every receipt, ${f(r.bare.receipts)} receipts | ${f(r.n)} | ${f(r.bare.ms / 1000, 2)} | ${f((r.n * 1000) / r.bare.ms)} | | | 1.00× |`,
    `| the service's watcher (\`npm start\`, ${driver}), ${f(r.received)} receipts recorded | ${f(r.n)} | ${f(r.watcherMs / 1000, 2)} | ${f((r.n * 1000) / r.watcherMs)} | ${f(r.cpuMs / 1000, 2)} | ${f(r.peakRssMiB)} MiB | **${f(r.watcherMs / r.bare.ms, 2)}×** |`,
    '',
    `The service's node calls during its catch-up (through the proxy): ${r.calls}.`,
    '',
    `Command: \`npm run bench:watcher -- --blocks ${blocks} --db ${driver}\` (\`npm start\` with its defaults and ${settingsNote()}; ` +
      `${new Date().toISOString().slice(0, 10)}, Node ${process.version}; one native transfer to the watched wallet per block; the head held still by a proxy while the blocks were mined, then let go; anvil on the same machine).`,
  ].join('\n');
}

/** Mines `n` blocks above the current head, each (nearly all) with one transfer to `to`; returns the new head. */
async function mineBacklog(rpcUrl: string, to: Address, n: number, from: number): Promise<number> {
  for (let i = 0; i < n; i++) await rpc(rpcUrl, 'eth_sendTransaction', [{ from: DEV_ACCOUNT, to, value: '0x1' }]);
  // The devnet also mines on an interval, so a few blocks hold two transfers: top up with empty blocks.
  const mined = (await headOf(rpcUrl)) - from;
  if (mined < n) await rpc(rpcUrl, 'anvil_mine', [`0x${(n - mined).toString(16)}`]);
  return headOf(rpcUrl);
}

async function runOnce(devnet: Devnet): Promise<Run> {
  const proxy = await RpcProxy.start(devnet.rpcUrl);
  const service = await startServiceProcess({ driver, rpcUrl: proxy.url });
  try {
    const wallet = (await call(service, 'POST', '/api/wallet/create', { name: 'Bench', network_id: service.networkId })).data as {
      id: number;
      address: Address;
    };
    // The watcher's cursor at the head, then the head held there while the backlog is mined.
    const start = await headOf(devnet.rpcUrl);
    await waitUntil('the first cursor at the head', async () => ((await syncedBlock(service)) ?? -1) >= start, 60_000, 50);
    proxy.rule('eth_blockNumber', { action: 'result', result: toHex(start) });
    process.stderr.write(`mining ${blocks} blocks ... `);
    const head = await mineBacklog(devnet.rpcUrl, wallet.address, blocks, start);
    process.stderr.write('bare loop ... ');
    const bare = await bareLoop(devnet.rpcUrl, BigInt(start + 1), BigInt(head));
    process.stderr.write('watcher ... ');
    await profileSignal([service]);
    const cpu0 = service.cpuMs();
    const started = performance.now();
    proxy.allow('eth_blockNumber');
    await waitUntil('the watcher at the head', async () => ((await syncedBlock(service)) ?? 0) >= head, 30 * 60_000, 25);
    const watcherMs = performance.now() - started;
    const calls = callsSince(proxy, Date.now() - watcherMs);
    const cpuMs = service.cpuMs() - cpu0;
    await profileSignal([service]);
    process.stderr.write('done\n');
    const list = await call(service, 'GET', `/api/wallet/${wallet.id}/transaction?limit=1`);
    return {
      n: head - start,
      bare,
      watcherMs,
      received: Number(list.headers.get('x-pagination-total')),
      cpuMs,
      peakRssMiB: service.peakRssMiB(),
      calls,
    };
  } finally {
    await service.stop();
    await proxy.down();
  }
}

async function main(): Promise<void> {
  const startedMs = Date.now();
  const devnet: Devnet = await startDevnet({ port: await findFreePort() });
  try {
    writeReport(RESULTS_FILE, report(await runOnce(devnet)), startedMs);
  } finally {
    await devnet.stop();
  }
}

runBench(main);
