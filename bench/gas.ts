/**
 * Benchmark: what sweeping payments costs, keyed against keyless deposit addresses, side by
 * side in one run (docs/charges.md, "Keyless deposit addresses").
 *
 *   npm run bench:gas [-- --payments 20 --db sqlite|postgres]
 *
 * One anvil (automine). Each mode runs the service as users run it (`npm start` in its own
 * process, bench/process.ts, its defaults: SWEEP_BATCH_MAX 50, SWEEP_MAX_WAIT_S 60, its workers)
 * on a fresh database, with one wallet holding ETH and a 6-decimal test token:
 *
 * - keyed: the devnet without the deterministic-deployment proxy while the service starts, so it
 *   gets no Sweeper (every deposit address has a key; a token sweep needs a gas top-up);
 * - keyless: the devnet as `npm start` makes it, with its Sweeper.
 *
 * In each, N charges in the token and N in ETH are created and paid exactly from outside (the
 * token minted to the address, the ETH sent by a dev account), and the run ends when every
 * charge is paid and every sweep of it is final. Counted from the chain: the service's
 * transactions (the main address's and the deposit addresses' own), their gas and fees, the
 * transactions and nonces of the main address spent on deposit addresses, and what is left on
 * the deposit addresses. Time: from the first payment to the last sweep confirmed. The payer's
 * own gas is not counted.
 *
 * Then a payout of `--items` (500) ERC-20 transfers to fresh addresses, in the keyless mode's
 * service (its Sweeper: PAYOUT_BATCH_MAX 100 items a batch), against a bare viem loop from one
 * funded key signing and sending the same number of token transfers (explicit nonces, fees read
 * once), then awaiting every receipt: one transaction per item. The wallet's one-time approval of
 * the Sweeper is sent by a first payout of one item, before the timed one, and reported on its
 * own line. Timed from the payout's create request to the answer showing it completed; the loop
 * from its first send to its last receipt. Prints markdown tables and writes them to
 * bench/results/gas.md. Never run by `npm test`.
 */
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { createPublicClient, encodeFunctionData, erc20Abi, getAddress, http, parseEther, type Address, type Hex } from 'viem';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { findFreePort, startDevnet } from '../src/chain/devnet.js';
import { CREATE2_FACTORY } from '../src/chain/sweeper.js';
import { deployErc20, erc20BalanceOf, mintErc20 } from '../test/helpers/erc20.js';
import { parseDatabases, positiveInt, rpc, runBench, writeReport } from './common.js';
import { settingsNote, startServiceProcess, type ServiceProcess } from './process.js';

const HERE = dirname(fileURLToPath(import.meta.url));
const RESULTS_FILE = join(HERE, 'results', 'gas.md');

const { values: flags } = parseArgs({
  options: {
    payments: { type: 'string', default: '20' },
    items: { type: 'string', default: '500' },
    db: { type: 'string', default: 'sqlite' },
  },
});
const payments = positiveInt('payments', flags.payments);
const payoutItems = positiveInt('items', flags.items);
/** Rounds of payments per mode, on one service and one wallet: the first meets a new Sweeper's first writes, the next does not. */
const ROUNDS = 2;
const driver = parseDatabases(flags.db)[0]!;

async function call(svc: ServiceProcess, method: string, path: string, body?: unknown) {
  const res = await fetch(`${svc.base}${path}`, {
    method,
    headers: { authorization: `Bearer ${svc.token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const out = { status: res.status, body: (await res.json()) as { message: string; data: any } };
  if (out.status !== 200) throw new Error(`${method} ${path}: ${out.status} ${out.body.message}`);
  return out.body.data;
}

interface Cost {
  txs: number;
  gas: bigint;
  fee: bigint;
}

interface ModeResult {
  kind: string;
  token: Cost;
  native: Cost;
  /** Transactions of the main address to deposit addresses (gas top-ups), and their nonces. */
  toDeposits: number;
  /** What stayed on the deposit addresses: token units and wei. */
  leftToken: bigint;
  leftWei: bigint;
  seconds: number;
}

/** Every charge paid and every sweep of it final (none pending), polled every 500 ms. */
async function allSwept(svc: ServiceProcess, walletId: number, ids: number[]): Promise<any[]> {
  for (const deadline = Date.now() + 15 * 60_000; Date.now() < deadline;) {
    const shown = await Promise.all(ids.map((id) => call(svc, 'GET', `/api/wallet/${walletId}/charge/show/${id}`)));
    const done = shown.every(
      (c) => c.status === 'paid' && c.sweeps.length > 0 && c.sweeps.every((s: any) => s.status === 'confirmed' || s.status === 'failed'),
    );
    if (done) return shown;
    await new Promise((r) => setTimeout(r, 500));
  }
  throw new Error('charges not all swept within 15 minutes');
}

/** The gas, fee and count of a set of transactions, from their receipts. */
async function costOf(rpcUrl: string, hashes: Iterable<string>): Promise<Cost> {
  const client = createPublicClient({ transport: http(rpcUrl) });
  const cost: Cost = { txs: 0, gas: 0n, fee: 0n };
  for (const hash of new Set(hashes)) {
    const r = await client.getTransactionReceipt({ hash: hash as Hex });
    cost.txs += 1;
    cost.gas += r.gasUsed;
    cost.fee += r.gasUsed * r.effectiveGasPrice;
  }
  return cost;
}

/** The wallet's own transactions (not its receipts): hash and recipient, every page. */
async function outgoing(svc: ServiceProcess, rpcUrl: string, walletId: number): Promise<Array<{ tx_hash: string; to: Address }>> {
  const out: Array<{ tx_hash: string; to: Address }> = [];
  const client = createPublicClient({ transport: http(rpcUrl) });
  for (let page = 1; ; page++) {
    const list = (await call(svc, 'GET', `/api/wallet/${walletId}/transaction?page=${page}&limit=100`)) as any[];
    for (const x of list.filter((t) => t.type !== 'receipt' && t.tx_hash)) {
      const tx = await client.getTransaction({ hash: x.tx_hash as Hex });
      out.push({ tx_hash: x.tx_hash, to: getAddress(tx.to!) });
    }
    if (list.length < 100) return out;
  }
}

const fresh = (n: number): Address[] => Array.from({ length: n }, () => privateKeyToAccount(generatePrivateKey()).address);
const ITEM_UNITS = 1_000_000n; // 1 token (6 decimals) an item

interface PayoutResult {
  txs: number;
  gas: bigint;
  ms: number;
}

/** The bare loop: one key signs and sends `payoutItems` token transfers to fresh addresses, then awaits every receipt. */
async function barePayout(rpcUrl: string): Promise<PayoutResult> {
  const account = privateKeyToAccount(generatePrivateKey());
  await rpc(rpcUrl, 'anvil_setBalance', [account.address, `0x${parseEther('100').toString(16)}`]);
  const usd = await deployErc20(rpcUrl, { name: 'Bare USD', symbol: 'XUSD', decimals: 6 });
  await mintErc20(rpcUrl, usd, account.address, ITEM_UNITS * BigInt(payoutItems));
  const client = createPublicClient({ transport: http(rpcUrl), pollingInterval: 20 });
  const fees = await client.estimateFeesPerGas();
  const to = fresh(payoutItems);
  const nonce0 = await client.getTransactionCount({ address: account.address });
  const started = performance.now();
  const hashes: Hex[] = [];
  for (let n = 0; n < payoutItems; n++) {
    const raw = await account.signTransaction({
      chainId: 31337,
      type: 'eip1559',
      nonce: nonce0 + n,
      gas: 80_000n,
      maxFeePerGas: fees.maxFeePerGas,
      maxPriorityFeePerGas: fees.maxPriorityFeePerGas,
      to: usd,
      data: encodeFunctionData({ abi: erc20Abi, functionName: 'transfer', args: [to[n]!, ITEM_UNITS] }),
    });
    hashes.push((await rpc(rpcUrl, 'eth_sendRawTransaction', [raw])) as Hex);
  }
  let gas = 0n;
  for (const hash of hashes) {
    const r = await client.waitForTransactionReceipt({ hash, pollingInterval: 20 });
    if (r.status !== 'success') throw new Error(`bare transfer ${hash} reverted`);
    gas += r.gasUsed;
  }
  return { txs: hashes.length, gas, ms: performance.now() - started };
}

/** Polls the payout every 100 ms until it is completed; its items. */
async function payoutCompleted(svc: ServiceProcess, walletId: number, id: number): Promise<any[]> {
  for (const deadline = Date.now() + 15 * 60_000; Date.now() < deadline;) {
    const p = await call(svc, 'GET', `/api/wallet/${walletId}/payout/${id}`);
    if (p.status === 'completed') return p.items;
    if (p.status !== 'processing') throw new Error(`payout ${id} ended ${p.status}`);
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`payout ${id} not completed within 15 minutes`);
}

/** The service (the devnet with its Sweeper): the approval's payout of one item, then the timed payout of `payoutItems`. */
async function batchedPayout(rpcUrl: string): Promise<{ approval: Cost; payout: PayoutResult }> {
  const svc = await startServiceProcess({ driver, rpcUrl, label: 'payout' });
  try {
    const wallet = await call(svc, 'POST', '/api/wallet/create', { name: 'Payouts', network_id: svc.networkId });
    await rpc(rpcUrl, 'anvil_setBalance', [wallet.address, `0x${parseEther('100').toString(16)}`]);
    const usd = await deployErc20(rpcUrl, { name: 'Bench USD', symbol: 'BUSD', decimals: 6 });
    await call(svc, 'POST', `/api/wallet/${wallet.id}/token/add`, { contract: usd });
    await mintErc20(rpcUrl, usd, wallet.address, ITEM_UNITS * BigInt(payoutItems + 1));
    const create = (n: number) =>
      call(svc, 'POST', `/api/wallet/${wallet.id}/payout/create`, {
        token: 'BUSD',
        items: fresh(n).map((address) => ({ address, amount: '1' })),
      });
    const client = createPublicClient({ transport: http(rpcUrl) });
    const nonceOf = () => client.getTransactionCount({ address: wallet.address });
    // The first payout of the token: the one-time approval of the Sweeper, then its batch.
    const first = await create(1);
    await payoutCompleted(svc, wallet.id, first.id);
    const before = await nonceOf();
    const calls = (await outgoing(svc, rpcUrl, wallet.id)).filter((x) => x.to === getAddress(usd)).map((x) => x.tx_hash);
    const started = performance.now();
    const payout = await create(payoutItems);
    const items = await payoutCompleted(svc, wallet.id, payout.id);
    const ms = performance.now() - started;
    const cost = await costOf(
      rpcUrl,
      items.map((i) => i.tx_hash as string),
    );
    const paid = await Promise.all(items.map((i) => erc20BalanceOf(rpcUrl, usd, i.address)));
    if (paid.some((b) => b !== ITEM_UNITS)) throw new Error('a recipient was not paid exactly');
    return { approval: await costOf(rpcUrl, calls), payout: { txs: (await nonceOf()) - before, gas: cost.gas, ms } };
  } finally {
    await svc.stop();
  }
}

/** One mode: a fresh service on the devnet, a wallet and its token, and `ROUNDS` rounds of payments. */
async function runMode(rpcUrl: string, kind: 'keyed' | 'keyless'): Promise<ModeResult[]> {
  // Keyed: the service starts on a devnet without the proxy its Sweeper is deployed through.
  const proxyCode = (await rpc(rpcUrl, 'eth_getCode', [CREATE2_FACTORY, 'latest'])) as Hex;
  if (kind === 'keyed') await rpc(rpcUrl, 'anvil_setCode', [CREATE2_FACTORY, '0x']);
  const svc = await startServiceProcess({ driver, rpcUrl, label: kind });
  await rpc(rpcUrl, 'anvil_setCode', [CREATE2_FACTORY, proxyCode]);
  try {
    const network = (await call(svc, 'GET', '/api/networks')).find((n: any) => n.id === svc.networkId);
    if ((network.sweeper !== null) !== (kind === 'keyless')) throw new Error(`${kind}: the network's sweeper is ${network.sweeper}`);
    const wallet = await call(svc, 'POST', '/api/wallet/create', { name: kind, network_id: svc.networkId });
    await rpc(rpcUrl, 'anvil_setBalance', [wallet.address, `0x${parseEther('100').toString(16)}`]);
    const usd = await deployErc20(rpcUrl, { name: 'Bench USD', symbol: 'BUSD', decimals: 6 });
    await call(svc, 'POST', `/api/wallet/${wallet.id}/token/add`, { contract: usd });
    const out: ModeResult[] = [];
    const counted = new Set<string>();
    for (let r = 1; r <= ROUNDS; r++) out.push(await payRound({ svc, rpcUrl, wallet, usd, counted }, `${kind}, round ${r}`));
    return out;
  } finally {
    await svc.stop();
  }
}

/** N token and N ETH charges created and paid exactly, until every sweep is final; the costs of this round only (`counted`: earlier rounds' transactions). */
async function payRound(
  m: { svc: ServiceProcess; rpcUrl: string; wallet: { id: number }; usd: Address; counted: Set<string> },
  kind: string,
): Promise<ModeResult> {
  const { svc, rpcUrl, wallet, usd } = m;
  const create = (body: unknown) => call(svc, 'POST', `/api/wallet/${wallet.id}/charge/create`, body);
  const tokenCharges = [];
  const nativeCharges = [];
  for (let i = 0; i < payments; i++) {
    tokenCharges.push(await create({ amount: '5', token: 'BUSD', expires: 3600 }));
    nativeCharges.push(await create({ amount: '0.05', token: 'ETH', expires: 3600 }));
  }
  const [payer] = (await rpc(rpcUrl, 'eth_accounts', [])) as Address[];
  const started = performance.now();
  for (const c of tokenCharges) await mintErc20(rpcUrl, usd, c.address, 5_000_000n);
  for (const c of nativeCharges)
    await rpc(rpcUrl, 'eth_sendTransaction', [{ from: payer, to: c.address, value: `0x${parseEther('0.05').toString(16)}` }]);
  const shownToken = await allSwept(
    svc,
    wallet.id,
    tokenCharges.map((c) => c.id),
  );
  const shownNative = await allSwept(
    svc,
    wallet.id,
    nativeCharges.map((c) => c.id),
  );
  const seconds = (performance.now() - started) / 1000;

  const deposits = new Set([...tokenCharges, ...nativeCharges].map((c) => getAddress(c.address)));
  const tokenDeposits = new Set(tokenCharges.map((c) => getAddress(c.address)));
  const mainTxs = (await outgoing(svc, rpcUrl, wallet.id)).filter((x) => !m.counted.has(x.tx_hash));
  for (const x of mainTxs) m.counted.add(x.tx_hash);
  const mainHashes = new Set(mainTxs.map((x) => x.tx_hash));
  const own = (shown: any[]) => shown.flatMap((c) => c.sweeps.map((s: any) => s.tx_hash as string)).filter((h) => !mainHashes.has(h));
  // The token payments' cost: the main address's transactions for them (top-ups to their
  // addresses, the Sweeper's batches) and their addresses' own sweeps; the native ones': theirs.
  const forToken = mainTxs.filter((x) => tokenDeposits.has(x.to) || !deposits.has(x.to)).map((x) => x.tx_hash);
  const forNative = mainTxs.filter((x) => deposits.has(x.to) && !tokenDeposits.has(x.to)).map((x) => x.tx_hash);
  let leftToken = 0n;
  let leftWei = 0n;
  for (const a of deposits) {
    leftToken += await erc20BalanceOf(rpcUrl, usd, a);
    leftWei += BigInt((await rpc(rpcUrl, 'eth_getBalance', [a, 'latest'])) as string);
  }
  return {
    kind,
    token: await costOf(rpcUrl, [...forToken, ...own(shownToken)]),
    native: await costOf(rpcUrl, [...forNative, ...own(shownNative)]),
    toDeposits: mainTxs.filter((x) => deposits.has(x.to)).length,
    leftToken,
    leftWei,
    seconds,
  };
}

const per = (x: bigint) => (Number(x) / payments).toFixed(0);

async function main(): Promise<void> {
  const startedMs = Date.now();
  const devnet = await startDevnet({ port: await findFreePort() });
  try {
    const keyed = await runMode(devnet.rpcUrl, 'keyed');
    const keyless = await runMode(devnet.rpcUrl, 'keyless');
    const bare = await barePayout(devnet.rpcUrl);
    const batched = await batchedPayout(devnet.rpcUrl);
    const row = (r: ModeResult, what: 'token' | 'native', base: ModeResult) =>
      `| ${r.kind}, ${what === 'token' ? 'ERC-20' : 'ETH'} | ${(r[what].txs / payments).toFixed(2)} | ${per(r[what].gas)} | ${(Number(r[what].fee) / payments / 1e9).toFixed(0)} gwei | **${(Number(r[what].gas) / Number(base[what].gas)).toFixed(3)}×** | ${r.toDeposits} | ${r.leftToken} units, ${r.leftWei} wei | ${r.seconds.toFixed(1)} s |`;
    const rows: string[] = [];
    for (const what of ['token', 'native'] as const)
      for (let r = 0; r < ROUNDS; r++) rows.push(row(keyed[r]!, what, keyed[r]!), row(keyless[r]!, what, keyed[r]!));
    const report = [
      `# Sweeping ${payments} ERC-20 and ${payments} ETH payments: keyed against keyless deposit addresses (${driver})`,
      '',
      `Command: \`npm run bench:gas -- --payments ${payments} --db ${driver}\` (${new Date().toISOString().slice(0, 10)}); the service's defaults and ${settingsNote()}.`,
      '',
      '| mode, payments | service transactions a payment | gas a payment (beyond the payer’s) | fee a payment | gas against keyed | main-address transactions to deposit addresses | left on deposit addresses | first payment to last sweep confirmed |',
      '|---|---:|---:|---:|---|---:|---|---:|',
      ...rows,
      '',
      `Each round: ${payments} new charges in each of the token and ETH, paid, swept. The first keyless batch on a new Sweeper also writes the Sweeper's stored order for the first time (a never-used storage slot costs 20,000 gas more than a used one), which later batches do not pay again.`,
      '',
      `## A payout of ${payoutItems} ERC-20 items to fresh addresses: batched against one transaction per item`,
      '',
      '| run | transactions | gas | gas an item | gas against one per item | create to all confirmed | speed against the bare loop |',
      '|---|---:|---:|---:|---|---:|---|',
      `| bare viem loop: ${payoutItems} token transfers, all receipts | ${bare.txs} | ${bare.gas} | ${(Number(bare.gas) / payoutItems).toFixed(0)} | 1 | ${(bare.ms / 1000).toFixed(2)} s | 1 |`,
      `| service, batched (\`npm start\`, its defaults) | ${batched.payout.txs} | ${batched.payout.gas} | ${(Number(batched.payout.gas) / payoutItems).toFixed(0)} | **${(Number(batched.payout.gas) / Number(bare.gas)).toFixed(3)}×** | ${(batched.payout.ms / 1000).toFixed(2)} s | **${(bare.ms / batched.payout.ms).toFixed(2)}×** |`,
      `| the wallet's one-time approval of the Sweeper for the token (its first batched payout) | ${batched.approval.txs} | ${batched.approval.gas} | | | | |`,
    ].join('\n');
    writeReport(RESULTS_FILE, report, startedMs);
  } finally {
    await devnet.stop();
  }
}

runBench(main);
