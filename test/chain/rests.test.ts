/**
 * A rate-limited endpoint is rested (docs/operating.md, "Several RPC providers"): after HTTP 429 or
 * JSON-RPC -32005 it receives no call at all (no read, no head read) for its `Retry-After`, else
 * 1 s doubling while it keeps limiting; then it is asked again and serves reads again. Two real
 * proxies in front of one anvil, through the service's own ChainClients (head reads every 100 ms),
 * while a reader asks a balance every 30 ms: every read answers (through the other endpoint), and
 * the rested endpoint's proxy counts the calls it receives, with their arrival times.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { PublicClient } from 'viem';
import { ChainClients, type NetworkLike } from '../../src/chain/clients.js';
import { startTestChain, type TestChain } from '../helpers/chain.js';
import { waitFor } from '../helpers/wait.js';
import { RECIPIENT, RpcProxy, type RpcRule, type SeenCall } from '../helpers/transfers.js';

/** A call arriving this soon after the limited one was sent before its answer (the same batch, or in flight). */
const IN_FLIGHT_MS = 25;
/** How late a rested endpoint may be asked again after its rest (head reads every 100 ms, a loaded machine). */
const LATE_MS = 1_000;

let chain: TestChain;
let a: RpcProxy;
let b: RpcProxy;
let chains: ChainClients;

/** The network, the rate-limited proxy first (each test has ChainClients of its own: fresh endpoint state). */
function network(): NetworkLike {
  return {
    id: 1,
    name: 'Rate-limited provider',
    rpc_url: a.url,
    rpc_urls: JSON.stringify([a.url, b.url]),
    chain_id: 31337,
    currency_symbol: 'ETH',
  };
}

beforeAll(async () => {
  chain = await startTestChain();
  a = await RpcProxy.start(chain.rpcUrl);
  b = await RpcProxy.start(chain.rpcUrl);
});

afterAll(async () => {
  chains?.close();
  await a?.down();
  await b?.down();
  await chain?.stop();
});

/** Reads a balance every 30 ms until stopped; counts the answers and keeps every failure. */
function keepReading(client: PublicClient): { stop(): Promise<{ answered: number; failures: unknown[] }> } {
  let stopped = false;
  let answered = 0;
  const failures: unknown[] = [];
  const loop = (async () => {
    while (!stopped) {
      try {
        await client.getBalance({ address: RECIPIENT });
        answered += 1;
      } catch (err) {
        failures.push(err);
      }
      await new Promise((r) => setTimeout(r, 30));
    }
  })();
  return {
    stop: async () => {
      stopped = true;
      await loop;
      return { answered, failures };
    },
  };
}

/**
 * Follows the rate-limited endpoint's calls: for each expected rest, the call that met the limit,
 * then the next call it received (after the ones already in flight): none came before the rest
 * was over, and one came soon after it. The limit is lifted once the last expected one is met.
 * Returns the gaps measured.
 */
async function expectRests(n: NetworkLike, reason: string, restsMs: number[]): Promise<number[]> {
  const gaps: number[] = [];
  let from = 0;
  for (const [k, restMs] of restsMs.entries()) {
    const limitedAt = await waitFor(
      () => {
        const i = a.seen.findIndex((c, j) => j >= from && c.action !== null);
        return i >= 0 ? i : null;
      },
      { timeoutMs: 5_000, message: 'a call meeting the rate limit' },
    ).catch(() => -1);
    expect(limitedAt, `a call met the rate limit (calls: ${JSON.stringify(a.seen.slice(from, from + 5))})`).toBeGreaterThanOrEqual(0);
    const t0 = a.seen[limitedAt]!.atMs;
    if (k === restsMs.length - 1) a.allow('*');
    // Its health says why, with the rest.
    await waitFor(() => chains.health(n)[0]!.error === `${reason}: rested ${restMs / 1000} s`, {
      timeoutMs: 2_000,
      message: `health error "${reason}: rested ${restMs / 1000} s" (is ${JSON.stringify(chains.health(n)[0])})`,
    });
    const next = await waitFor(
      () => {
        const i = a.seen.findIndex((c, j) => j > limitedAt && c.atMs > t0 + IN_FLIGHT_MS);
        return i >= 0 ? i : null;
      },
      { timeoutMs: restMs + LATE_MS + 2_000, message: `a call after the ${restMs} ms rest` },
    );
    const during = a.seen.slice(limitedAt + 1, next).filter((c: SeenCall) => c.atMs > t0 + IN_FLIGHT_MS);
    expect(during, 'calls during the rest').toEqual([]);
    gaps.push(a.seen[next]!.atMs - t0);
    from = next;
  }
  return gaps;
}

/** The limited endpoint serves reads again: a balance read answered by it, and its health ok. */
async function expectUsedAgain(n: NetworkLike): Promise<void> {
  const since = a.seen.length;
  await waitFor(() => a.seen.slice(since).some((c) => c.method === 'eth_getBalance' && c.action === null), {
    timeoutMs: 5_000,
    message: 'the rested endpoint serving a read again',
  });
  expect(chains.health(n)[0]).toMatchObject({ url: a.url, ok: true, error: null });
}

async function restScenario(rule: RpcRule, reason: string, restsMs: number[]): Promise<void> {
  chains?.close();
  chains = new ChainClients({ healthEveryMs: 100 });
  const n = network();
  const client = chains.get(n);
  await chains.freshHealth(n, 5_000);
  a.seen = [];
  b.seen = [];
  a.rule('*', rule);
  const reader = keepReading(client);
  let reads: Awaited<ReturnType<ReturnType<typeof keepReading>['stop']>>;
  try {
    const gaps = await expectRests(n, reason, restsMs);
    for (const [i, restMs] of restsMs.entries()) {
      expect(gaps[i], `rest ${i + 1} (${restMs} ms)`).toBeGreaterThanOrEqual(restMs);
      expect(gaps[i], `rest ${i + 1} (${restMs} ms)`).toBeLessThanOrEqual(restMs + LATE_MS);
    }
    await expectUsedAgain(n);
  } finally {
    a.allow('*');
    reads = await reader.stop();
  }
  // Every read answered; the other endpoint served them meanwhile.
  expect(reads.failures).toEqual([]);
  expect(reads.answered).toBeGreaterThan(10);
  expect(b.seen.filter((c) => c.method === 'eth_getBalance').length).toBeGreaterThan(10);
}

describe('a rate-limited endpoint is rested, then used again', () => {
  it('HTTP 429 with Retry-After: 3: no call for 3 s', async () => {
    await restScenario(
      { action: 'error', status: 429, code: -32603, message: 'busy', headers: { 'retry-after': '3' } },
      'HTTP 429',
      [3_000],
    );
  });

  it('HTTP 429 without Retry-After, limiting twice in a row: rested 1 s, then 2 s', async () => {
    await restScenario({ action: 'error', status: 429, code: -32603, message: 'busy' }, 'HTTP 429', [1_000, 2_000]);
  });

  it('JSON-RPC -32005 (HTTP 200): rested 1 s', async () => {
    await restScenario(
      { action: 'error', code: -32005, message: 'Request exceeds defined limit' },
      'JSON-RPC -32005 rate limited',
      [1_000],
    );
  });
});

describe('an answer to a call sent before the rate limit', () => {
  it('does not end the rest nor clear its reason: health stays ok false, "HTTP 429: rested 1 s"', async () => {
    chains?.close();
    chains = new ChainClients({ healthEveryMs: 100 });
    const n = network();
    const client = chains.get(n);
    await chains.freshHealth(n, 5_000);
    expect(chains.health(n)[0]).toMatchObject({ url: a.url, ok: true, error: null });
    a.seen = [];
    // A balance read the first endpoint answers (rightly) only after 700 ms; meanwhile it limits every other call.
    a.rule('eth_getBalance', { action: 'other-node', url: chain.rpcUrl, delayMs: 700, times: 1 });
    a.rule('*', { action: 'error', status: 429, code: -32603, message: 'busy' });
    try {
      const slow = client.getBalance({ address: RECIPIENT });
      await waitFor(() => chains.health(n)[0]!.error === 'HTTP 429: rested 1 s', {
        timeoutMs: 2_000,
        message: 'the first endpoint rested',
      });
      const limitedAt = a.seen.find((c) => c.action === 'error')!.atMs;
      expect(typeof (await slow)).toBe('bigint');
      const answeredAt = Date.now();
      // The answer came inside the rest (else this test shows nothing).
      expect(answeredAt).toBeLessThan(limitedAt + 1_000);
      expect(chains.health(n)[0]).toMatchObject({ url: a.url, ok: false, error: 'HTTP 429: rested 1 s' });
    } finally {
      a.allow('eth_getBalance');
      a.allow('*');
    }
    const reader = keepReading(client);
    try {
      await expectUsedAgain(n);
    } finally {
      expect((await reader.stop()).failures).toEqual([]);
    }
  });
});
