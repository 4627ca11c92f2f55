/**
 * The endpoint transport (src/chain/endpoints.ts) through the service's own ChainClients, with two
 * real proxies in front of one anvil (docs/architecture.md, "The chain transport: several endpoints"):
 * - each refusing any eth_getLogs over more than 10 blocks with -32005 "query exceeds max block
 *   range 10" (as providers do): a 500-block query is split and retried, every ERC-20 Transfer log
 *   of the range returned in chain order, the same as anvil's own answer; neither endpoint is
 *   rested or marked down for it;
 * - the first answering null for a block, a transaction and a receipt it "does not have": asked
 *   of the second, never taken as "not found"; null only when neither has it;
 * - a signed transaction reaches both endpoints; the first refusing it, the second's acceptance is
 *   the answer, and it is mined.
 * - a send or a trace the node is slow to answer holds none of the reads issued in the same turn
 *   (each goes in its own batched request).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseAbiItem, type Address, type Hex } from 'viem';
import { ChainClients } from '../../src/chain/clients.js';
import { startTestChain, type TestChain } from '../helpers/chain.js';
import { deployErc20, mintErc20 } from '../helpers/erc20.js';
import { RpcProxy, RECIPIENT, publicClient, signFromOutsider, OUTSIDER } from '../helpers/transfers.js';

const TRANSFER = parseAbiItem('event Transfer(address indexed from, address indexed to, uint256 value)');
const MAX_RANGE = 10;

let chain: TestChain;
let a: RpcProxy;
let b: RpcProxy;
let chains: ChainClients;
let token: Address;
let from: number;
let to: number;
const mints: Hex[] = [];
const network = () => ({
  id: 1,
  name: 'Picky providers',
  rpc_url: a.url,
  rpc_urls: JSON.stringify([a.url, b.url]),
  chain_id: 31337,
  currency_symbol: 'ETH',
});

function rangeOf(params: unknown[]): number {
  const f = params[0] as { fromBlock?: string; toBlock?: string };
  if (!f.fromBlock?.startsWith('0x') || !f.toBlock?.startsWith('0x')) return 0;
  return Number(BigInt(f.toBlock) - BigInt(f.fromBlock)) + 1;
}

beforeAll(async () => {
  chain = await startTestChain();
  token = await deployErc20(chain.rpcUrl, { name: 'Test USD', symbol: 'TUSD', decimals: 6 });
  from = (await chain.blockNumber()) + 1;
  // 7 mints spread over 500 blocks.
  for (let i = 0; i < 7; i++) {
    mints.push(await mintErc20(chain.rpcUrl, token, RECIPIENT, BigInt(1_000 + i)));
    await chain.mine(70);
  }
  to = from + 499;
  // The whole range mined (a query beyond every endpoint's head is answered by none).
  await chain.mine(Math.max(0, to - (await chain.blockNumber())));
  a = await RpcProxy.start(chain.rpcUrl);
  b = await RpcProxy.start(chain.rpcUrl);
  for (const p of [a, b]) {
    p.rule('eth_getLogs', {
      action: 'error',
      code: -32005,
      message: `query exceeds max block range ${MAX_RANGE}`,
      match: (params) => rangeOf(params) > MAX_RANGE,
    });
  }
  chains = new ChainClients({ healthEveryMs: 200 });
});

afterAll(async () => {
  chains?.close();
  await a?.down();
  await b?.down();
  await chain?.stop();
});

describe('eth_getLogs refused over more than 10 blocks', () => {
  it('is split and retried: all 7 transfers over 500 blocks, as anvil has them', async () => {
    const client = chains.get(network());
    const query = { address: token, event: TRANSFER, fromBlock: BigInt(from), toBlock: BigInt(to) } as const;
    const expected = await publicClient(chain.rpcUrl).getLogs(query);
    expect(expected.map((l) => l.args.value)).toEqual([1000n, 1001n, 1002n, 1003n, 1004n, 1005n, 1006n]);

    const got = await client.getLogs(query);
    expect(got.map((l) => [l.transactionHash, l.logIndex, l.args.value])).toEqual(
      expected.map((l) => [l.transactionHash, l.logIndex, l.args.value]),
    );
    // The proxies did refuse the wide queries (at least the first one), and answered the narrow ones.
    expect(a.calls.filter((m) => m === 'eth_getLogs').length).toBeGreaterThan(50);
    // A refused range is not a fault of the endpoint: both stay ok.
    expect(chains.health(network()).map((e) => e.ok)).toEqual([true, true]);
  });
});

describe('a block, transaction or receipt the first endpoint does not have', () => {
  it('is asked of the second; null only when neither has it', async () => {
    const client = chains.get(network());
    const n = await chain.blockNumber();
    const direct = await publicClient(chain.rpcUrl).getBlock({ blockNumber: BigInt(n) });
    for (const m of ['eth_getBlockByNumber', 'eth_getTransactionByHash', 'eth_getTransactionReceipt']) a.rule(m, { action: 'null' });
    b.calls = [];
    try {
      expect((await client.getBlock({ blockNumber: BigInt(n) })).hash).toBe(direct.hash);
      expect((await client.getTransaction({ hash: mints[3]! })).hash).toBe(mints[3]);
      expect((await client.getTransactionReceipt({ hash: mints[3]! })).status).toBe('success');
      expect(b.calls.filter((m) => m !== 'eth_blockNumber')).toEqual([
        'eth_getBlockByNumber',
        'eth_getTransactionByHash',
        'eth_getTransactionReceipt',
      ]);
      const nowhere: Hex = `0x${'ab'.repeat(32)}`;
      await expect(client.getTransaction({ hash: nowhere })).rejects.toThrow(/could not be found/);
    } finally {
      for (const m of ['eth_getBlockByNumber', 'eth_getTransactionByHash', 'eth_getTransactionReceipt']) a.allow(m);
    }
  });
});

describe('a signed transaction', () => {
  it('is broadcast to both endpoints; the first refusing it, the second accepts and it is mined', async () => {
    const client = chains.get(network());
    const nonce = await publicClient(chain.rpcUrl).getTransactionCount({ address: OUTSIDER.address });
    const raw = await signFromOutsider(chain.rpcUrl, RECIPIENT, 1234n, nonce);
    a.rule('eth_sendRawTransaction', { action: 'error', code: -32000, message: 'internal error' });
    a.calls = [];
    b.calls = [];
    try {
      const hash = await client.sendRawTransaction({ serializedTransaction: raw });
      expect(a.calls).toContain('eth_sendRawTransaction');
      expect(b.calls).toContain('eth_sendRawTransaction');
      const receipt = await publicClient(chain.rpcUrl).waitForTransactionReceipt({ hash, timeout: 20_000 });
      expect(receipt.status).toBe('success');
    } finally {
      a.allow('eth_sendRawTransaction');
    }
  });
});

describe('a send the node is slow to answer', () => {
  it('holds none of the reads issued with it: the head is read while the send waits', async () => {
    const client = chains.get(network());
    const nonce = await publicClient(chain.rpcUrl).getTransactionCount({ address: OUTSIDER.address });
    const raw = await signFromOutsider(chain.rpcUrl, RECIPIENT, 4321n, nonce);
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    for (const p of [a, b])
      p.rule('eth_sendRawTransaction', {
        action: 'error',
        code: -32000,
        message: 'insufficient funds for gas * price + value',
        until: held,
      });
    try {
      // Issued in one turn, as a create's broadcast and the watcher's head read can be.
      const send = client.sendRawTransaction({ serializedTransaction: raw });
      send.catch(() => undefined);
      const head = client.getBlockNumber({ cacheTime: 0 });
      const answered = await Promise.race([
        head.then(() => 'head read'),
        new Promise((r) => setTimeout(() => r('held with the send'), 5_000)),
      ]);
      expect(answered).toBe('head read');
      expect(await head).toBe(BigInt(await chain.blockNumber()));
      release();
      await expect(send).rejects.toThrow(/insufficient funds/);
    } finally {
      release();
      for (const p of [a, b]) p.allow('eth_sendRawTransaction');
    }
  });
});

describe('a trace the node is slow to answer', () => {
  it('holds none of the reads issued with it: the balance is read while the trace waits', async () => {
    const client = chains.get(network());
    const block = await publicClient(chain.rpcUrl).getBlock();
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    for (const p of [a, b]) p.rule('debug_traceBlockByHash', { action: 'result', result: [], until: held });
    try {
      // Issued in one turn, as a create's reads and the follower's traces of a block can be.
      const trace = client.request({ method: 'debug_traceBlockByHash', params: [block.hash, { tracer: 'callTracer' }] } as never);
      const balance = client.getBalance({ address: RECIPIENT, blockNumber: block.number });
      const answered = await Promise.race([
        balance.then(() => 'balance read'),
        new Promise((r) => setTimeout(() => r('held with the trace'), 5_000)),
      ]);
      expect(answered).toBe('balance read');
      expect(await balance).toBe(await publicClient(chain.rpcUrl).getBalance({ address: RECIPIENT, blockNumber: block.number }));
      release();
      expect(await trace).toEqual([]);
    } finally {
      release();
      for (const p of [a, b]) p.allow('debug_traceBlockByHash');
    }
  });
});
