/**
 * Benchmark: the chain watcher catching up N blocks of backlog, against a bare viem loop that
 * fetches the same blocks (getBlock with transactions) and the receipt of every transaction in
 * them, in the same run, on the same anvil.
 *
 *   npm run bench:watcher [-- --blocks 2000 --db sqlite|postgres --max-blocks 100]
 *
 * It starts anvil and the real service (fresh SQLite folder, or a fresh PostgreSQL database on
 * DATABASE_URL), creates a user and a wallet, starts the watcher once so it sets its cursor at the
 * head, stops it, then mines N blocks each holding one native transfer to the wallet (anvil's
 * first dev account, automine; the few blocks lost to two transfers sharing an interval-mined
 * block are made up with empty blocks). The baseline reads those N blocks and their receipts with viem,
 * one block at a time; then the watcher is started again with the service's defaults
 * (WATCHER_POLL_MS 1000: a backlog is worked through batch after batch without waiting it;
 * `--poll-ms` sets another, reported beside; WATCHER_MAX_BLOCKS from --max-blocks, the service's
 * default 100) and timed until its cursor reaches the head. The
 * watcher does more than the loop: it records each transfer (a receipt row and its event) and
 * moves its cursor in one database transaction per block. The watcher's code is not changed.
 *
 * Prints a markdown table and writes it to bench/results/watcher-catchup.md. Never run by `npm test`.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { createPublicClient, http, type Address, type Hex } from 'viem';
import { findFreePort, startDevnet, type Devnet } from '../src/chain/devnet.js';
import { findCursor } from '../src/modules/networks/networks.repository.js';
import { startWatcherWorker } from '../src/workers/watcher.js';
import { parseDatabases, positiveInt, rpc, startBenchService, runBench } from './common.js';

const HERE = dirname(fileURLToPath(import.meta.url));
const RESULTS_FILE = join(HERE, 'results', 'watcher-catchup.md');
/** anvil's first dev account (unlocked, funded): sends the transfers. */
const DEV_ACCOUNT = '0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266';

const { values: flags } = parseArgs({
  options: {
    blocks: { type: 'string', default: '2000' },
    db: { type: 'string', default: 'sqlite' },
    'max-blocks': { type: 'string', default: '100' },
    'poll-ms': { type: 'string' },
  },
});
const blocks = positiveInt('blocks', flags.blocks);
const maxBlocks = positiveInt('max-blocks', flags['max-blocks']);
const driver = parseDatabases(flags.db)[0]!;

async function call(url: string, method: string, path: string, token: string | null, body?: unknown) {
  const res = await fetch(`${url}${path}`, {
    method,
    headers: { ...(token ? { authorization: `Bearer ${token}` } : {}), ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const json = (await res.json()) as { data: any };
  if (res.status !== 200) throw new Error(`${method} ${path}: ${res.status} ${JSON.stringify(json)}`);
  return json;
}

async function waitUntil(what: string, cond: () => Promise<boolean>, timeoutMs: number, pollMs = 5): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await cond())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, pollMs));
  }
}

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

/** The markdown of one run. */
function report(n: number, bare: { ms: number; receipts: number }, watcherMs: number, received: number): string {
  const f = (x: number, d = 0) => x.toLocaleString('en-US', { minimumFractionDigits: d, maximumFractionDigits: d });
  const bareRate = (n * 1000) / bare.ms;
  const watcherRate = (n * 1000) / watcherMs;
  return [
    '## Watcher catch-up vs a bare viem getBlock + receipts loop',
    '',
    '| What | Blocks | Time (s) | Blocks/s | vs bare |',
    '|---|---:|---:|---:|---:|',
    `| bare viem loop: getBlock (with transactions) + every receipt, ${f(bare.receipts)} receipts | ${f(n)} | ${f(bare.ms / 1000, 2)} | ${f(bareRate)} | 1.00× |`,
    `| watcher (${driver}, WATCHER_MAX_BLOCKS=${maxBlocks}, WATCHER_POLL_MS=${flags['poll-ms'] ?? '1000 (default)'}), ${f(received)} receipts recorded | ${f(n)} | ${f(watcherMs / 1000, 2)} | ${f(watcherRate)} | **${f(watcherRate / bareRate, 3)}×** (1/${f(bareRate / watcherRate, 1)}) |`,
    '',
    `Command: \`npm run bench:watcher -- --blocks ${blocks} --db ${driver}${maxBlocks !== 100 ? ` --max-blocks ${maxBlocks}` : ''}\` ` +
      `(${new Date().toISOString().slice(0, 10)}, Node ${process.version}; one native transfer to the watched wallet per block; anvil on the same machine).`,
    '',
  ].join('\n');
}

async function main(): Promise<void> {
  const devnet: Devnet = await startDevnet({ port: await findFreePort() });
  const pollEnv: Record<string, string> = flags['poll-ms'] === undefined ? {} : { WATCHER_POLL_MS: String(positiveInt('poll-ms', flags['poll-ms'])) };
  const service = await startBenchService({ driver, rpcUrl: devnet.rpcUrl, env: { ...pollEnv, WATCHER_MAX_BLOCKS: String(maxBlocks) } });
  const { base, token, store, ctx, services } = service;
  const network = { id: service.networkId };
  try {
    const wallet = (await call(base, 'POST', '/api/wallet/create', token, { name: 'Bench', network_id: network.id })).data as { address: Address };

    // The watcher's cursor at the head, then the backlog.
    const deps = { balances: services.balances, transactions: services.transactions };
    let worker = startWatcherWorker(ctx, deps);
    await waitUntil('the first cursor', async () => (await findCursor(store.db, network.id)) !== undefined, 30_000);
    await worker.stop();
    const startBlock = (await findCursor(store.db, network.id))!.block_number;
    process.stderr.write(`mining ${blocks} blocks ... `);
    for (let i = 0; i < blocks; i++) {
      await rpc(devnet.rpcUrl, 'eth_sendTransaction', [{ from: DEV_ACCOUNT, to: wallet.address, value: '0x1' }]);
    }
    // The devnet also mines on an interval, so a few blocks hold two transfers: top up with empty blocks.
    const mined = Number(BigInt((await rpc(devnet.rpcUrl, 'eth_blockNumber', [])) as Hex)) - startBlock;
    if (mined < blocks) await rpc(devnet.rpcUrl, 'anvil_mine', [`0x${(blocks - mined).toString(16)}`]);
    const head = Number(BigInt((await rpc(devnet.rpcUrl, 'eth_blockNumber', [])) as Hex));

    process.stderr.write('bare loop ... ');
    const bare = await bareLoop(devnet.rpcUrl, BigInt(startBlock + 1), BigInt(head));
    process.stderr.write('watcher ... ');
    const started = performance.now();
    worker = startWatcherWorker(ctx, deps);
    await waitUntil('the watcher to reach the head', async () => ((await findCursor(store.db, network.id))?.block_number ?? 0) >= head, 30 * 60_000);
    const watcherMs = performance.now() - started;
    await worker.stop();
    process.stderr.write('done\n');
    const received = await store.db
      .selectFrom('transactions')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .where('type', '=', 'receipt')
      .executeTakeFirstOrThrow();

    const text = report(head - startBlock, bare, watcherMs, Number(received.n));
    mkdirSync(dirname(RESULTS_FILE), { recursive: true });
    writeFileSync(RESULTS_FILE, text);
    process.stdout.write(`${text}\n(written to ${RESULTS_FILE})\n`);
  } finally {
    await service.close();
    await devnet.stop();
  }
}

runBench(main);
