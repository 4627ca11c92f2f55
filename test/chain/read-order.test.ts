/**
 * Who serves a read (docs/operating.md, "Several RPC providers"), through the service's own ChainClients
 * and real proxies in front of one anvil, in the cases where the freshest-first order alone would
 * not keep a read where it belongs (an endpoint that should answer failing for a moment):
 * - an endpoint more than RPC_MAX_LAG_BLOCKS (3) behind the best serves no reads: not when the
 *   fresh endpoint fails a call (the retry goes to the fresh one again), not when it is rested,
 *   not when the lagging one itself failed its last head read;
 * - a block or logs at height H are read only from endpoints whose head is at or above H: an
 *   endpoint 2 blocks behind (not lagging) that would answer null or no logs is never asked for
 *   them, a "not found" is asked of the other endpoints at or above H, and when every one of them
 *   fails the read fails (it is never answered "no logs" by the one below H); a block at its own
 *   height it still serves; a block mined after the last head reads has the heads read again;
 *   logs up to a block no endpoint has are asked of none (a transient failure, not "no logs").
 * Head reads are made only when the test asks (healthEveryMs one minute), so that every call the
 * proxies count comes from the reads under test.
 */
import { afterEach, beforeAll, afterAll, describe, expect, it } from 'vitest';
import { ChainClients, type NetworkLike } from '../../src/chain/clients.js';
import { startTestChain, type TestChain } from '../helpers/chain.js';
import { mapChainError } from '../../src/chain/errors.js';
import { RECIPIENT, RpcProxy } from '../helpers/transfers.js';

let chain: TestChain;
let chains: ChainClients | null = null;
const proxies: RpcProxy[] = [];

beforeAll(async () => {
  chain = await startTestChain();
  await chain.mine(20);
});

afterEach(async () => {
  chains?.close();
  chains = null;
  for (const p of proxies.splice(0)) await p.down();
});

afterAll(async () => {
  await chain?.stop();
});

async function proxy(): Promise<RpcProxy> {
  const p = await RpcProxy.start(chain.rpcUrl);
  proxies.push(p);
  return p;
}

/** A network over `list` (in that order), with fresh endpoint state and heads read once now. */
async function networkOf(list: RpcProxy[]): Promise<{ n: NetworkLike; chains: ChainClients }> {
  chains = new ChainClients({ healthEveryMs: 60_000, maxLagBlocks: 3, retryCount: 1 });
  const n = {
    id: 1,
    name: 'Read order',
    rpc_url: list[0]!.url,
    rpc_urls: JSON.stringify(list.map((p) => p.url)),
    chain_id: 31337,
    currency_symbol: 'ETH',
  };
  await chains.freshHealth(n, 5_000);
  for (const p of list) p.calls = [];
  return { n, chains };
}

const reads = (p: RpcProxy, method: string) => p.calls.filter((m) => m === method).length;

describe('a lagging endpoint serves no reads', () => {
  it('the fresh endpoint failing a read once (HTTP 503): asked again, never the lagging one', async () => {
    const lagging = await proxy();
    const fresh = await proxy();
    lagging.rule('eth_blockNumber', { action: 'lower', by: 5 });
    const { n, chains } = await networkOf([lagging, fresh]);
    expect(chains.health(n).map((e) => e.lag_blocks)).toEqual([5, 0]);
    fresh.rule('eth_getBalance', { action: 'error', status: 503, message: 'Service Unavailable', times: 1 });
    const balance = await chains.get(n).getBalance({ address: RECIPIENT });
    expect(balance).toBe(BigInt(await chain.rpc<string>('eth_getBalance', [RECIPIENT, 'latest'])));
    expect({ lagging: reads(lagging, 'eth_getBalance'), fresh: reads(fresh, 'eth_getBalance') }).toEqual({ lagging: 0, fresh: 2 });
  });

  it('the fresh endpoint rested (JSON-RPC -32005): never the lagging one', async () => {
    const lagging = await proxy();
    const fresh = await proxy();
    lagging.rule('eth_blockNumber', { action: 'lower', by: 5 });
    const { n, chains } = await networkOf([lagging, fresh]);
    fresh.rule('eth_getBalance', { action: 'error', code: -32005, message: 'Request exceeds defined limit', times: 1 });
    // The first read meets the limit (the fresh one is rested); the retry and the next reads do not go to the lagging one.
    await chains
      .get(n)
      .getBalance({ address: RECIPIENT })
      .catch(() => null);
    expect(chains.health(n)[1]).toMatchObject({ ok: false });
    await chains
      .get(n)
      .getBalance({ address: RECIPIENT })
      .catch(() => null);
    expect(reads(lagging, 'eth_getBalance')).toBe(0);
  });

  it('the lagging endpoint having failed its last head read: still no reads when the fresh one fails once', async () => {
    const lagging = await proxy();
    const fresh = await proxy();
    lagging.rule('eth_blockNumber', { action: 'lower', by: 5 });
    const { n, chains } = await networkOf([lagging, fresh]);
    lagging.rule('eth_blockNumber', { action: 'error', status: 503, message: 'Service Unavailable', times: 1 });
    await chains.freshHealth(n, 5_000);
    expect(chains.health(n).map((e) => [e.ok, e.lag_blocks])).toEqual([
      [false, 5],
      [true, 0],
    ]);
    fresh.rule('eth_getBalance', { action: 'error', status: 503, message: 'Service Unavailable', times: 1 });
    await chains.get(n).getBalance({ address: RECIPIENT });
    expect({ lagging: reads(lagging, 'eth_getBalance'), fresh: reads(fresh, 'eth_getBalance') }).toEqual({ lagging: 0, fresh: 2 });
  });
});

describe('a block or logs at height H only from endpoints at or above H', () => {
  /** `below` two blocks behind (not lagging: RPC_MAX_LAG_BLOCKS 3), answering as a node without the newest blocks would. */
  async function setup() {
    const below = await proxy();
    const b = await proxy();
    const c = await proxy();
    below.rule('eth_blockNumber', { action: 'lower', by: 2 });
    const { n, chains } = await networkOf([below, b, c]);
    const h = await chain.blockNumber();
    expect(chains.health(n).map((e) => e.head_block)).toEqual([h - 2, h, h]);
    below.rule('eth_getBlockByNumber', { action: 'null', match: (p) => Number(BigInt(p[0] as string)) > h - 2 });
    below.rule('eth_getLogs', { action: 'result', result: [] });
    return { below, b, c, h, client: chains.get(n) };
  }

  it('a block at H: "not found" at one is asked of the other at H, never of the one below', async () => {
    const { below, b, c, h, client } = await setup();
    b.rule('eth_getBlockByNumber', { action: 'null', times: 1 });
    const block = await client.getBlock({ blockNumber: BigInt(h) });
    expect(Number(block.number)).toBe(h);
    expect([reads(below, 'eth_getBlockByNumber'), reads(b, 'eth_getBlockByNumber'), reads(c, 'eth_getBlockByNumber')]).toEqual([0, 1, 1]);
  });

  it('a block at H that neither endpoint at H has: not found, the one below never asked', async () => {
    const { below, b, c, h, client } = await setup();
    b.rule('eth_getBlockByNumber', { action: 'null', times: 1 });
    c.rule('eth_getBlockByNumber', { action: 'null', times: 1 });
    await expect(client.getBlock({ blockNumber: BigInt(h) })).rejects.toThrow(/could not be found/);
    expect(reads(below, 'eth_getBlockByNumber')).toBe(0);
  });

  it('logs up to H with both endpoints at H failing: the read fails, never "no logs" from the one below', async () => {
    const { below, b, c, h, client } = await setup();
    for (const p of [b, c]) p.rule('eth_getLogs', { action: 'error', status: 503, message: 'Service Unavailable', times: 2 });
    await expect(client.getLogs({ fromBlock: BigInt(h - 5), toBlock: BigInt(h) })).rejects.toThrow();
    expect(reads(below, 'eth_getLogs')).toBe(0);
    expect([reads(b, 'eth_getLogs'), reads(c, 'eth_getLogs')]).toEqual([2, 2]);
  });

  it('a block at H mined after the last head reads: the heads are read again, then it is found', async () => {
    const { below, b, c, h, client } = await setup();
    await chain.mine(1);
    const block = await client.getBlock({ blockNumber: BigInt(h + 1) });
    expect(Number(block.number)).toBe(h + 1);
    expect(reads(below, 'eth_getBlockByNumber')).toBe(0);
    expect(reads(b, 'eth_blockNumber') + reads(c, 'eth_blockNumber')).toBeGreaterThan(0);
  });

  it('logs up to a block no endpoint has: the read fails (transient), no endpoint asked for logs', async () => {
    const { below, b, c, h, client } = await setup();
    await expect(client.getLogs({ fromBlock: BigInt(h - 5), toBlock: BigInt(h + 50) })).rejects.toThrow(
      /No RPC endpoint has reached block/,
    );
    expect([below, b, c].map((p) => reads(p, 'eth_getLogs'))).toEqual([0, 0, 0]);
  });

  it('a block at its own height the one below still serves (the others not having it)', async () => {
    const { below, b, c, h, client } = await setup();
    b.rule('eth_getBlockByNumber', { action: 'null', times: 1 });
    c.rule('eth_getBlockByNumber', { action: 'null', times: 1 });
    const block = await client.getBlock({ blockNumber: BigInt(h - 2) });
    expect(Number(block.number)).toBe(h - 2);
    expect(reads(below, 'eth_getBlockByNumber')).toBe(1);
  });
});

describe("a node without the block a read is about (a balancer's backend behind, a reorg lowering the height)", () => {
  const pinned = (p: unknown[]) => typeof p[1] === 'string' && /^0x/.test(p[1]);

  it('"header not found" at H from one endpoint: asked of the next at H; the first serves H again only after its head is read at H', async () => {
    const a = await proxy();
    const b = await proxy();
    const { n, chains } = await networkOf([a, b]);
    const h = await chain.blockNumber();
    a.rule('eth_getBalance', { action: 'error', code: -32000, message: 'header not found', match: pinned, times: 1 });
    const client = chains.get(n);
    const expected = BigInt(await chain.rpc<string>('eth_getBalance', [RECIPIENT, 'latest']));
    expect(await client.getBalance({ address: RECIPIENT, blockNumber: BigInt(h) })).toBe(expected);
    expect([reads(a, 'eth_getBalance'), reads(b, 'eth_getBalance')]).toEqual([1, 1]);
    // Below H as far as this process knows now: the next read at H goes to b alone.
    expect(chains.health(n).map((e) => e.head_block)).toEqual([h - 1, h]);
    expect(await client.getBalance({ address: RECIPIENT, blockNumber: BigInt(h) })).toBe(expected);
    expect([reads(a, 'eth_getBalance'), reads(b, 'eth_getBalance')]).toEqual([1, 2]);
  });

  it("anvil's BlockOutOfRangeError (-32602) from the only endpoint: a transient failure (503), never the node refusing the request (400)", async () => {
    const a = await proxy();
    const { n, chains } = await networkOf([a]);
    const h = await chain.blockNumber();
    a.rule('eth_getBalance', {
      action: 'error',
      code: -32602,
      message: `BlockOutOfRangeError: block height is ${h - 1} but requested was ${h}`,
      match: pinned,
    });
    const err: unknown = await chains
      .get(n)
      .getBalance({ address: RECIPIENT, blockNumber: BigInt(h) })
      .then(
        () => null,
        (e: unknown) => e,
      );
    expect(String(err)).toMatch(new RegExp(`No RPC endpoint has reached block ${h} yet`));
    expect(mapChainError(err).statusCode).toBe(503);
    // The same answer to a read that names no height is the node's own answer (400), not a height.
    a.rule('eth_getBalance', { action: 'error', code: -32602, message: 'BlockOutOfRangeError: block height is 1 but requested was 2' });
    const unpinned: unknown = await chains
      .get(n)
      .getBalance({ address: RECIPIENT })
      .then(
        () => null,
        (e: unknown) => e,
      );
    expect(mapChainError(unpinned).statusCode).toBe(400);
    // A contract's revert whose reason reads like a missing block is still the contract's answer.
    a.rule('eth_call', { action: 'error', code: -32000, message: 'execution reverted: header not found', match: pinned });
    const reverted: unknown = await chains
      .get(n)
      .call({ to: RECIPIENT, data: '0x', blockNumber: BigInt(h) })
      .then(
        () => null,
        (e: unknown) => e,
      );
    expect(String(reverted)).not.toMatch(/No RPC endpoint has reached block/);
    expect(mapChainError(reverted).statusCode).toBe(400);
  });

  it('logs up to H answered "block range extends beyond current head block" (-32602): not split as a range too wide; a transient failure', async () => {
    const a = await proxy();
    const { n, chains } = await networkOf([a]);
    const h = await chain.blockNumber();
    a.rule('eth_getLogs', { action: 'error', code: -32602, message: 'block range extends beyond current head block' });
    const err: unknown = await chains
      .get(n)
      .getLogs({ fromBlock: BigInt(h - 8), toBlock: BigInt(h) })
      .then(
        () => null,
        (e: unknown) => e,
      );
    expect(String(err)).toMatch(new RegExp(`No RPC endpoint has reached block ${h} yet`));
    expect(mapChainError(err).statusCode).toBe(503);
    // Asked at H (and again, after its head was read at H once more), never in halves.
    expect(a.seen.filter((c) => c.method === 'eth_getLogs').length).toBeLessThanOrEqual(2);
  });
});
