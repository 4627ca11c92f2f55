/**
 * Benchmark: a payout of N items from one wallet, from `POST .../payout/create` to every item
 * confirmed, against N bare viem sign + send of the same transfers to the same anvil, in the
 * same run.
 *
 *   npm run bench:payout [-- --items 500 --db sqlite|postgres --tuned]
 *
 * One anvil (automine: every transfer in its own block, as the service sees a fast chain).
 *
 * 1. The baseline, bare viem: one funded local key signs N native transfers (explicit nonces, gas
 *    21000, fees read once) to N fresh addresses, sends each with `eth_sendRawTransaction` one
 *    after the other, then waits for every receipt. Timed from the first send to the last receipt.
 * 2. The service as a user runs it: `npm start` in its own process (bench/process.ts) with its
 *    defaults (its workers: the payouts worker, the watcher on its 1 s poll; confirmations 1;
 *    MAX_PENDING_PER_WALLET 64), a fresh SQLite folder or a fresh PostgreSQL database: one `POST /api/wallet/{id}/payout/create` over a real socket with the
 *    same N items (each to a fresh address), then `GET .../payout/{id}` every 100 ms until it is
 *    `completed`. Timed from the create's request to the answer that shows it completed. The
 *    service does more than the loop: it checks the whole payout, records it, and for each item
 *    estimates the gas, reserves, polices, signs, records and broadcasts, then follows it to
 *    confirmation and writes its events.
 * 3. With `--tuned`, the same again with WATCHER_POLL_MS=100 and MAX_PENDING_PER_WALLET=1000,
 *    reported beside the default, never instead.
 *
 * The ratio is the baseline's time over the service's (1.0 = as fast as bare viem). Prints a
 * markdown table and writes it to bench/results/payout.md. Never run by `npm test`.
 */
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { createPublicClient, http, type Address, type Hex } from 'viem';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { findFreePort, startDevnet } from '../src/chain/devnet.js';
import { parseDatabases, positiveInt, runBench, writeReport } from './common.js';
import { profileSignal, settingsNote, startServiceProcess } from './process.js';

const HERE = dirname(fileURLToPath(import.meta.url));
const RESULTS_FILE = join(HERE, 'results', 'payout.md');
const FUNDS = 10n ** 24n;
const AMOUNT_WEI = 10n ** 12n; // 0.000001 ETH an item

const { values: flags } = parseArgs({
  options: {
    items: { type: 'string', default: '500' },
    db: { type: 'string', default: 'sqlite' },
    tuned: { type: 'boolean', default: false },
  },
});
const items = positiveInt('items', flags.items);
const driver = parseDatabases(flags.db)[0]!;

async function rpc<T>(url: string, method: string, params: unknown[]): Promise<T> {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
  });
  const json = (await res.json()) as { result?: T; error?: { message: string } };
  if (json.error) throw new Error(`${method}: ${json.error.message}`);
  return json.result as T;
}

const freshAddresses = (n: number): Address[] => Array.from({ length: n }, () => privateKeyToAccount(generatePrivateKey()).address);

/** N bare viem transfers from one key: signed with explicit nonces, sent one after the other, then every receipt awaited. */
async function baseline(rpcUrl: string): Promise<number> {
  const key = generatePrivateKey();
  const account = privateKeyToAccount(key);
  await rpc(rpcUrl, 'anvil_setBalance', [account.address, `0x${FUNDS.toString(16)}`]);
  const client = createPublicClient({ transport: http(rpcUrl), pollingInterval: 20 });
  const fees = await client.estimateFeesPerGas();
  const to = freshAddresses(items);
  const started = performance.now();
  const hashes: Hex[] = [];
  for (let n = 0; n < items; n++) {
    const raw = await account.signTransaction({
      chainId: 31337,
      type: 'eip1559',
      nonce: n,
      gas: 21_000n,
      maxFeePerGas: fees.maxFeePerGas,
      maxPriorityFeePerGas: fees.maxPriorityFeePerGas,
      to: to[n]!,
      value: AMOUNT_WEI,
    });
    hashes.push(await rpc<Hex>(rpcUrl, 'eth_sendRawTransaction', [raw]));
  }
  for (const hash of hashes) await client.waitForTransactionReceipt({ hash, pollingInterval: 20 });
  return performance.now() - started;
}

async function call(base: string, token: string, method: string, path: string, body?: unknown) {
  const res = await fetch(`${base}${path}`, {
    method,
    headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: res.status, body: (await res.json()) as { message: string; data: any } };
}

/** The service: one payout of N items, timed from the create's request to the answer showing it completed. */
async function service(
  rpcUrl: string,
  env: Record<string, string>,
): Promise<{ ms: number; items: number; cpuMs: number; peakRssMiB: number }> {
  const svc = await startServiceProcess({ driver, rpcUrl, env });
  try {
    const wallet = await call(svc.base, svc.token, 'POST', '/api/wallet/create', { name: 'Payouts', network_id: svc.networkId });
    if (wallet.status !== 200) throw new Error(`wallet: ${wallet.status} ${wallet.body.message}`);
    await rpc(rpcUrl, 'anvil_setBalance', [wallet.body.data.address, `0x${FUNDS.toString(16)}`]);
    const amount = `0.${AMOUNT_WEI.toString().padStart(18, '0')}`;
    const body = { token: 'ETH', items: freshAddresses(items).map((address, n) => ({ address, amount, reference: `bench-${n}` })) };
    await profileSignal([svc]);
    const started = performance.now();
    const cpu0 = svc.cpuMs();
    const created = await call(svc.base, svc.token, 'POST', `/api/wallet/${wallet.body.data.id}/payout/create`, body);
    if (created.status !== 200) throw new Error(`payout: ${created.status} ${created.body.message}`);
    for (;;) {
      const shown = await call(svc.base, svc.token, 'GET', `/api/wallet/${wallet.body.data.id}/payout/${created.body.data.id}`);
      if (shown.body.data.status === 'completed') {
        await profileSignal([svc]);
        return {
          ms: performance.now() - started,
          items: shown.body.data.items.length,
          cpuMs: svc.cpuMs() - cpu0,
          peakRssMiB: svc.peakRssMiB(),
        };
      }
      if (shown.body.data.status !== 'processing')
        throw new Error(
          `payout ended ${shown.body.data.status}: ${JSON.stringify(shown.body.data.items.filter((i: any) => i.status === 'failed').slice(0, 3))}`,
        );
      await new Promise((r) => setTimeout(r, 100));
    }
  } finally {
    await svc.stop();
  }
}

async function main(): Promise<void> {
  const startedMs = Date.now();
  const devnet = await startDevnet({ port: await findFreePort() });
  try {
    const base = await baseline(devnet.rpcUrl);
    const runs = [{ name: `service (\`npm start\`), defaults and ${settingsNote()}`, ...(await service(devnet.rpcUrl, {})) }];
    if (flags.tuned)
      runs.push({
        name: 'service, WATCHER_POLL_MS=100 MAX_PENDING_PER_WALLET=1000',
        ...(await service(devnet.rpcUrl, { WATCHER_POLL_MS: '100', MAX_PENDING_PER_WALLET: '1000' })),
      });
    const rows = runs.map(
      (r) =>
        `| ${r.name} | ${(r.ms / 1000).toFixed(2)} s | ${(items / (r.ms / 1000)).toFixed(0)} items/s | ${(r.cpuMs / items).toFixed(1)} ms | ${r.peakRssMiB.toFixed(0)} MiB | **${(base / r.ms).toFixed(3)}×** |`,
    );
    const report = [
      `# Payout of ${items} items, create to all confirmed (${driver})`,
      '',
      `Command: \`npm run bench:payout -- --items ${items} --db ${driver}${flags.tuned ? ' --tuned' : ''}\` (${new Date().toISOString().slice(0, 10)}).`,
      '',
      '| run | time | rate | service CPU an item | service peak RSS | ratio (baseline time / this time) |',
      '|---|---|---|---:|---:|---|',
      `| bare viem: ${items} sign + send, all receipts | ${(base / 1000).toFixed(2)} s | ${(items / (base / 1000)).toFixed(0)} transfers/s | | | 1 |`,
      ...rows,
    ].join('\n');
    writeReport(RESULTS_FILE, report, startedMs);
  } finally {
    await devnet.stop();
  }
}

runBench(main);
