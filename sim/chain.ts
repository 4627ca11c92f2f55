/**
 * The simulation's chain: a real anvil with a block time, the outside accounts (anvil's dev
 * accounts) that fund wallets and pay charges, the test token, a forwarder contract (payments
 * that reach an address through a contract), reorgs, and the readers the checks use.
 *
 * anvil's `anvil_reorg` drops the removed blocks' transactions, where a real node puts them back
 * in its pool; the simulation plays that node: it reads them before the reorg and sends them
 * again after it, so a reorg moves transactions to other blocks instead of erasing them.
 */
import { createHash } from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import {
  createPublicClient,
  createWalletClient,
  http,
  keccak256,
  parseAbi,
  serializeTransaction,
  type Abi,
  type Address,
  type Hex,
  type PublicClient,
} from 'viem';
import { mnemonicToAccount } from 'viem/accounts';
import { foundry } from 'viem/chains';
import { findFreePort, startDevnet, type Devnet } from '../src/chain/devnet.js';
import { deployErc20 } from '../test/helpers/erc20.js';

const DEV_MNEMONIC = 'test test test test test test test test test test test junk';
export const TOKEN_DECIMALS = 6;
export const TOKEN_SYMBOL = 'SIM';
const TRANSFER_TOPIC = '0xddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a11628f55a4df523b3ef';

const FORWARDER_SOURCE = `// SPDX-License-Identifier: MIT
pragma solidity ^0.8.20;
/// Pays through a contract: the payee sees a token Transfer log or an internal value transfer,
/// never a transaction addressed to it.
contract Forwarder {
    function payToken(address token, address to, uint256 amount) external {
        (bool ok, bytes memory r) = token.call(abi.encodeWithSignature("transferFrom(address,address,uint256)", msg.sender, to, amount));
        require(ok && (r.length == 0 || abi.decode(r, (bool))), "transferFrom failed");
    }
    function payNative(address payable to) external payable {
        (bool ok, ) = to.call{value: msg.value}("");
        require(ok, "send failed");
    }
}
`;

export const forwarderAbi = parseAbi([
  'function payToken(address token, address to, uint256 amount)',
  'function payNative(address to) payable',
]);
const tokenAbi = parseAbi([
  'function mint(address to, uint256 amount)',
  'function transfer(address to, uint256 amount) returns (bool)',
  'function approve(address spender, uint256 amount) returns (bool)',
  'function balanceOf(address owner) view returns (uint256)',
]);

export interface RpcTx {
  hash: Hex;
  from: Address;
  to: Address | null;
  value: Hex;
  input: Hex;
  nonce: Hex;
  type: Hex;
  blockNumber: Hex;
  [k: string]: unknown;
}
export interface RpcBlock {
  number: Hex;
  hash: Hex;
  timestamp: Hex;
  transactions: RpcTx[];
}
export interface RpcReceipt {
  status: Hex;
  blockNumber: Hex;
  blockHash: Hex;
  from: Address;
  to: Address | null;
  logs: Array<{ address: Address; topics: Hex[]; data: Hex }>;
}

/** One outside account; its sends are serialised (one nonce at a time). */
class Outsider {
  private queue: Promise<unknown> = Promise.resolve();
  constructor(
    readonly index: number,
    readonly client: ReturnType<typeof makeWallet>,
  ) {}
  get address(): Address {
    return this.client.account.address;
  }
  run<T>(fn: () => Promise<T>): Promise<T> {
    const p = this.queue.then(fn, fn);
    this.queue = p.catch(() => undefined);
    return p;
  }
}

/** anvil's dev accounts (the outsiders and the devnet's own): every other sender is the service. */
const DEV_ADDRESSES = new Set(
  Array.from({ length: 10 }, (_, i) => mnemonicToAccount(DEV_MNEMONIC, { addressIndex: i }).address.toLowerCase()),
);

function makeWallet(rpcUrl: string, index: number) {
  return createWalletClient({
    account: mnemonicToAccount(DEV_MNEMONIC, { addressIndex: index }),
    chain: foundry,
    transport: http(rpcUrl),
    pollingInterval: 100,
    cacheTime: 0,
  });
}

export class SimChain {
  private rpcId = 0;
  readonly outsiders: Outsider[];
  readonly pub: PublicClient;
  token!: Address;
  forwarder!: Address;
  /** Native payments made through the forwarder: tx hash → (to, amount). Only the sender knows them. */
  readonly internalNative = new Map<string, { to: string; amount: bigint }>();
  reorgs = 0;
  /** Service transactions a reorg removed and the simulated node did not put back (`reorg`'s `dropOne`). */
  droppedByReorg = 0;
  /** Heights anvil answered null for although at or below its head (see `block`). */
  readonly missingBlocks: number[] = [];
  private blockTimeS = 1;

  private constructor(
    readonly devnet: Devnet,
    readonly rpcUrl: string,
  ) {
    this.pub = createPublicClient({ chain: foundry, transport: http(rpcUrl), pollingInterval: 100, cacheTime: 0 });
    this.outsiders = Array.from({ length: 9 }, (_, i) => new Outsider(i, makeWallet(rpcUrl, i)));
  }

  static async start(blockTimeS: number): Promise<SimChain> {
    const devnet = await startDevnet({ port: await findFreePort(), blockTimeS, accounts: 10 });
    const c = new SimChain(devnet, devnet.rpcUrl);
    c.blockTimeS = blockTimeS;
    c.token = await c.outsiders[0]!.run(() =>
      deployErc20(devnet.rpcUrl, { name: 'Sim Token', symbol: TOKEN_SYMBOL, decimals: TOKEN_DECIMALS }),
    );
    c.forwarder = await c.outsiders[0]!.run(() => c.deployForwarder());
    for (const o of c.outsiders.slice(1)) {
      await c.mint(o.address, 10n ** 15n);
      await o.run(() => c.send(o, { to: c.token, abi: tokenAbi, fn: 'approve', args: [c.forwarder, 2n ** 255n] }));
    }
    return c;
  }

  /**
   * The native coin a transaction moved by SELFDESTRUCT (a keyless deposit address emptied by a
   * Sweeper call), read from anvil's call tracer: each frame's source, beneficiary and value.
   */
  async selfDestructs(hash: string): Promise<Array<{ from: string; to: string; value: bigint }>> {
    type Frame = { type: string; from: string; to?: string; value?: Hex; calls?: Frame[] };
    const root = await this.rpc<Frame>('debug_traceTransaction', [hash, { tracer: 'callTracer' }]);
    const out: Array<{ from: string; to: string; value: bigint }> = [];
    const walk = (f: Frame) => {
      if (f.type === 'SELFDESTRUCT' && f.to && f.value && BigInt(f.value) > 0n)
        out.push({ from: f.from.toLowerCase(), to: f.to.toLowerCase(), value: BigInt(f.value) });
      for (const c of f.calls ?? []) walk(c);
    };
    walk(root);
    return out;
  }

  async rpc<T = unknown>(method: string, params: unknown[] = []): Promise<T> {
    const res = await fetch(this.rpcUrl, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ jsonrpc: '2.0', id: ++this.rpcId, method, params }),
    });
    const json = (await res.json()) as { result?: T; error?: { message: string } };
    if (json.error) throw new Error(`${method}: ${json.error.message}`);
    return json.result as T;
  }

  async head(): Promise<number> {
    return Number(BigInt(await this.rpc<Hex>('eth_blockNumber')));
  }

  private async deployForwarder(): Promise<Address> {
    const { abi, bytecode } = compileForwarder();
    const w = this.outsiders[0]!.client;
    const hash = await w.deployContract({ abi, bytecode, args: [] });
    const r = await this.pub.waitForTransactionReceipt({ hash, timeout: 30_000 });
    if (!r.contractAddress || r.status !== 'success') throw new Error('forwarder deployment failed');
    return r.contractAddress;
  }

  /** Sends a contract call or a plain value transfer and waits (bounded) for it to mine. */
  private async send(o: Outsider, c: { to: Address; value?: bigint; abi?: Abi; fn?: string; args?: unknown[] }): Promise<Hex> {
    const hash = c.abi
      ? await o.client.writeContract({ address: c.to, abi: c.abi, functionName: c.fn!, args: c.args ?? [], value: c.value } as never)
      : await o.client.sendTransaction({ to: c.to, value: c.value ?? 0n });
    await this.pub.waitForTransactionReceipt({ hash, timeout: 30_000 }).catch(() => undefined);
    return hash;
  }

  async mint(to: Address, amount: bigint): Promise<Hex> {
    return this.outsiders[0]!.run(() => this.send(this.outsiders[0]!, { to: this.token, abi: tokenAbi, fn: 'mint', args: [to, amount] }));
  }

  payNative(o: Outsider, to: Address, amount: bigint): Promise<Hex> {
    return o.run(() => this.send(o, { to, value: amount }));
  }

  payToken(o: Outsider, to: Address, amount: bigint): Promise<Hex> {
    return o.run(() => this.send(o, { to: this.token, abi: tokenAbi, fn: 'transfer', args: [to, amount] }));
  }

  /** A token payment through the forwarder (transferFrom inside a contract call). */
  payTokenViaContract(o: Outsider, to: Address, amount: bigint): Promise<Hex> {
    return o.run(() => this.send(o, { to: this.forwarder, abi: forwarderAbi, fn: 'payToken', args: [this.token, to, amount] }));
  }

  /** A native payment through the forwarder: an internal transfer, no transaction to `to`. */
  async payNativeViaContract(o: Outsider, to: Address, amount: bigint): Promise<Hex> {
    const hash = await o.run(() => this.send(o, { to: this.forwarder, abi: forwarderAbi, fn: 'payNative', args: [to], value: amount }));
    this.internalNative.set(hash.toLowerCase(), { to: to.toLowerCase(), amount });
    return hash;
  }

  /**
   * `anvil_reorg` of `depth` blocks; the removed transactions go back to the node's pool, all of
   * them, or (`dropOne`) all but the first one the service sent (from none of anvil's dev
   * accounts): a node that lost it, as a real pool may after a reorg. The service must send it
   * again itself (its signed bytes: a transfer by the watcher's recheck, a sweep by its tracker).
   * Returns the hash of the transaction dropped, if any.
   */
  async reorg(depth: number, dropOne = false): Promise<Hex | null> {
    const head = await this.head();
    if (head <= depth + 1) return null;
    const removed: RpcTx[] = [];
    for (let n = head - depth + 1; n <= head; n++) removed.push(...((await this.block(n))?.transactions ?? []));
    // Interval mining paused around the reorg: a block mined while anvil replaces the last ones
    // could leave a height it answers null for.
    await this.rpc('evm_setIntervalMining', [0]);
    try {
      await this.rpc('anvil_reorg', [depth, []]);
    } finally {
      await this.rpc('evm_setIntervalMining', [this.blockTimeS]);
    }
    this.reorgs += 1;
    const dropped = dropOne ? (removed.find((tx) => !DEV_ADDRESSES.has(tx.from.toLowerCase())) ?? null) : null;
    for (const tx of removed) {
      const raw = rawOf(tx);
      if (raw && tx !== dropped) await this.rpc('eth_sendRawTransaction', [raw]).catch(() => undefined);
    }
    if (dropped) this.droppedByReorg += 1;
    return dropped ? dropped.hash : null;
  }

  /**
   * Block `n` with its transactions. Right after an `anvil_reorg` anvil may answer null for a
   * height at or below its head for a moment: asked again (bounded) before the run gives up.
   */
  async block(n: number): Promise<RpcBlock | null> {
    for (let attempt = 0; attempt < 20; attempt++) {
      const b = await this.rpc<RpcBlock | null>('eth_getBlockByNumber', [`0x${n.toString(16)}`, true]);
      if (b !== null) return b;
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
    // anvil (1.x) can lose a height after an `anvil_reorg` that met interval mining: reported by
    // the run as a note naming the height, not a crash; the node itself has no such block.
    this.missingBlocks.push(n);
    return null;
  }

  receipt(hash: string): Promise<RpcReceipt | null> {
    return this.rpc<RpcReceipt | null>('eth_getTransactionReceipt', [hash]);
  }

  async nativeBalance(address: string): Promise<bigint> {
    return BigInt(await this.rpc<Hex>('eth_getBalance', [address, 'latest']));
  }

  async tokenBalance(address: string): Promise<bigint> {
    return this.pub.readContract({ address: this.token, abi: tokenAbi, functionName: 'balanceOf', args: [address as Address] });
  }

  async nonce(address: string): Promise<number> {
    return Number(BigInt(await this.rpc<Hex>('eth_getTransactionCount', [address, 'latest'])));
  }

  /** Every token Transfer log up to the head: {hash, from, to, amount, block}. */
  async tokenTransfers(): Promise<Array<{ hash: string; from: string; to: string; amount: bigint; block: number }>> {
    const logs = await this.rpc<Array<{ transactionHash: Hex; topics: Hex[]; data: Hex; blockNumber: Hex }>>('eth_getLogs', [
      { address: this.token, fromBlock: '0x0', toBlock: 'latest', topics: [TRANSFER_TOPIC] },
    ]);
    return logs.map((l) => ({
      hash: l.transactionHash.toLowerCase(),
      from: `0x${l.topics[1]!.slice(26)}`.toLowerCase(),
      to: `0x${l.topics[2]!.slice(26)}`.toLowerCase(),
      amount: BigInt(l.data),
      block: Number(BigInt(l.blockNumber)),
    }));
  }

  stop(): Promise<void> {
    return this.devnet.stop();
  }
}

/** The signed bytes of a transaction as a node returns it (legacy or EIP-1559). */
export function rawOf(tx: RpcTx): Hex | null {
  const t = tx as Record<string, string | undefined> & RpcTx;
  const common = {
    chainId: Number(BigInt(t.chainId ?? '0x7a69')),
    nonce: Number(BigInt(t.nonce)),
    gas: BigInt(t.gas!),
    to: t.to ?? undefined,
    value: BigInt(t.value),
    data: t.input,
  };
  const sig = { r: t.r as Hex, s: t.s as Hex };
  let raw: Hex;
  if (t.type === '0x2') {
    raw = serializeTransaction(
      {
        ...common,
        type: 'eip1559',
        maxFeePerGas: BigInt(t.maxFeePerGas!),
        maxPriorityFeePerGas: BigInt(t.maxPriorityFeePerGas!),
        accessList: (tx.accessList as never) ?? [],
      },
      { ...sig, yParity: Number(BigInt(t.yParity ?? t.v!)) },
    );
  } else if (t.type === '0x0') {
    raw = serializeTransaction({ ...common, type: 'legacy', gasPrice: BigInt(t.gasPrice!) }, { ...sig, v: BigInt(t.v!) });
  } else return null;
  return keccak256(raw).toLowerCase() === tx.hash.toLowerCase() ? raw : null;
}

function compileForwarder(): { abi: Abi; bytecode: Hex } {
  const input = JSON.stringify({
    language: 'Solidity',
    sources: { 'Forwarder.sol': { content: FORWARDER_SOURCE } },
    settings: {
      evmVersion: 'paris',
      optimizer: { enabled: true, runs: 200 },
      outputSelection: { '*': { '*': ['abi', 'evm.bytecode.object'] } },
    },
  });
  const path = join(tmpdir(), 'wallet-service-sim', `${createHash('sha256').update(input).digest('hex')}.json`);
  try {
    return JSON.parse(readFileSync(path, 'utf8')) as { abi: Abi; bytecode: Hex };
  } catch {
    /* compile below */
  }
  const solc = createRequire(import.meta.url)('solc') as { compile(input: string): string };
  const out = JSON.parse(solc.compile(input)) as {
    contracts?: Record<string, Record<string, { abi: Abi; evm: { bytecode: { object: string } } }>>;
    errors?: Array<{ severity: string; message: string }>;
  };
  const c = out.contracts?.['Forwarder.sol']?.['Forwarder'];
  if (!c) throw new Error(`forwarder compilation failed: ${JSON.stringify(out.errors)}`);
  const compiled: { abi: Abi; bytecode: Hex } = { abi: c.abi, bytecode: `0x${c.evm.bytecode.object}` };
  try {
    mkdirSync(dirname(path), { recursive: true });
    writeFileSync(path, JSON.stringify(compiled));
  } catch {
    /* the cache is an optimisation */
  }
  return compiled;
}
