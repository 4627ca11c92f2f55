/**
 * Several RPC endpoints per network (docs/operating.md, "Several RPC providers"): two real JSON-RPC
 * proxies in front of ONE anvil, the network registered with both. The first endpoint answers
 * HTTP 503, then HTTP 429, then JSON-RPC -32005, then lags 5 blocks (its eth_blockNumber
 * lowered), then hangs, then refuses connections (its port closed). Under each fault, through the second endpoint: a balance read from the
 * chain, a transfer created, sent and confirmed, a charge paid and settled; every state the
 * service shows is on the chain (each confirmed transfer's receipt at its block, each charge
 * payment's transaction with its value); and `rpc_endpoints` says why the first endpoint is not
 * used (ok false with its `error`: "HTTP 503", "HTTP 429: rested N s", "JSON-RPC -32005 rate
 * limited: rested N s", "timed out", "connection refused"; or lag_blocks 5 while the lagging one
 * serves no reads at all), and the supervisor's `endpoints` the same.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseEther, type Hex } from 'viem';
import { startTestApp, type TestApp, type TestUser } from '../helpers/app.js';
import { startTestChain, type TestChain } from '../helpers/chain.js';
import { waitFor } from '../helpers/wait.js';
import { upsertNetwork } from '../../src/modules/networks/networks.repository.js';
import {
  RECIPIENT,
  RpcProxy,
  fundedWallet,
  txRows,
  waitForCursor,
  waitForStatus,
  type FundedWallet,
  type RpcRule,
} from '../helpers/transfers.js';
import { chargeApi, pay } from '../charges/support.js';

/** Every method the service calls (a fault on the first endpoint applies to all of them). */
const METHODS = [
  'eth_blockNumber',
  'eth_chainId',
  'eth_getBlockByNumber',
  'eth_getBlockByHash',
  'eth_getBlockReceipts',
  'eth_getLogs',
  'eth_getBalance',
  'eth_getTransactionCount',
  'eth_getCode',
  'eth_call',
  'eth_estimateGas',
  'eth_gasPrice',
  'eth_maxPriorityFeePerGas',
  'eth_feeHistory',
  'eth_sendRawTransaction',
  'eth_getTransactionByHash',
  'eth_getTransactionReceipt',
];

let t: TestApp;
let chain: TestChain;
let first: RpcProxy;
let second: RpcProxy;
let networkId: number;
let user: TestUser;
let wallet: FundedWallet;

beforeAll(async () => {
  t = await startTestApp({
    workers: true,
    env: { WATCHER_POLL_MS: '100', WATCHER_RECHECK_MS: '300', CHARGES_POLL_MS: '100', BALANCE_MAX_AGE_S: '0' },
  });
  chain = await startTestChain();
  await chain.mine(10); // a head above the lag of the lagging endpoint
  first = await RpcProxy.start(chain.rpcUrl);
  second = await RpcProxy.start(chain.rpcUrl);
  const n = await upsertNetwork(
    t.store.db,
    {
      name: 'Two providers',
      rpc_url: first.url,
      rpc_urls: [first.url, second.url],
      chain_id: 31337,
      currency_symbol: 'ETH',
      block_explorer: '',
      is_mainnet: false,
      confirmations: 1,
    },
    Date.now(),
  );
  networkId = n.id;
  await waitForCursor(t, networkId);
  user = await t.createUser();
  wallet = await fundedWallet(t, chain, user, networkId, 100n * 10n ** 18n);
});

afterAll(async () => {
  await t?.close();
  await first?.down();
  await second?.down();
  await chain?.stop();
});

async function endpoints(): Promise<
  Array<{ url: string; ok: boolean; head_block: number | null; lag_blocks: number | null; latency_ms: number | null; error: string | null }>
> {
  const res = await t.request('GET', '/api/networks', { token: user.token });
  return res.body.data.find((n: { id: number }) => n.id === networkId).rpc_endpoints;
}

function breakFirst(rule: RpcRule): void {
  for (const m of METHODS) first.rule(m, { ...rule });
}

function healFirst(): void {
  for (const m of METHODS) first.allow(m);
}

/** A balance read from the chain (BALANCE_MAX_AGE_S=0), exact. */
/**
 * The balance route answers the chain's balance. A sweep of an earlier charge may land between
 * the two reads, so they are compared again (with a deadline) until one pair agrees.
 */
async function expectBalanceFromChain(): Promise<void> {
  await waitFor(
    async () => {
      const res = await t.request('GET', `/api/wallet/${wallet.id}/balance`, { token: user.token });
      expect(res.status).toBe(200);
      expect(res.body.message).not.toMatch(/from cache/i);
      const onChain = BigInt(await chain.rpc<string>('eth_getBalance', [wallet.address, 'latest']));
      return res.body.data.balance === formatEth(onChain);
    },
    { timeoutMs: 15_000, message: 'the balance route to equal the chain balance' },
  );
}

function formatEth(wei: bigint): string {
  const whole = wei / 10n ** 18n;
  return `${whole}.${(wei % 10n ** 18n).toString().padStart(18, '0')}`;
}

/** A transfer through the API, confirmed; its receipt on the chain at the block the service shows. */
async function transferConfirmed(): Promise<void> {
  const res = await t.request('POST', `/api/wallet/${wallet.id}/transaction/create`, {
    token: user.token,
    body: { amount: '0.01', token: 'ETH', address: RECIPIENT },
  });
  expect({ status: res.status, message: res.body.message }).toMatchObject({ status: 200 });
  const done = await waitForStatus(t, user, wallet.id, res.body.data.id, 'confirmed', 30_000);
  const receipt = await chain.rpc<{ status: string; blockNumber: string; blockHash: string }>('eth_getTransactionReceipt', [done.tx_hash]);
  expect(receipt.status).toBe('0x1');
  const row = (await txRows(t, wallet.id)).find((r) => r.id === res.body.data.id)!;
  expect({ block: Number(row.block_number), hash: row.block_hash }).toEqual({
    block: Number(BigInt(receipt.blockNumber)),
    hash: receipt.blockHash,
  });
}

/** A charge paid from outside (straight to anvil), settled `paid`; its payment is that transaction. */
async function chargePaid(): Promise<void> {
  const api = chargeApi(t, wallet.id, user.token);
  const c = await api.create({ amount: '0.02', token: 'ETH', expires: 600 });
  const hash: Hex = await pay(chain.rpcUrl, c.address, parseEther('0.02'));
  const paid = await api.until(c.id, (x) => x.status === 'paid', `charge ${c.id} paid`, 30_000);
  expect(paid.paid_amount).toBe('0.020000000000000000');
  expect(paid.payments.map((p: { tx_hash: string }) => p.tx_hash)).toEqual([hash]);
  const tx = await chain.rpc<{ value: string; to: string }>('eth_getTransactionByHash', [hash]);
  expect({ value: BigInt(tx.value), to: tx.to.toLowerCase() }).toEqual({ value: parseEther('0.02'), to: c.address.toLowerCase() });
}

/** No transfer of the wallet in a state the chain does not show: none failed, each confirmed one mined. */
async function nothingFalse(): Promise<void> {
  for (const r of await txRows(t, wallet.id)) {
    expect(r.status, `transaction ${r.id}`).not.toBe('failed');
    if (r.status !== 'confirmed' || r.tx_hash === null) continue;
    const receipt = await chain.rpc<{ blockHash: string } | null>('eth_getTransactionReceipt', [r.tx_hash]);
    expect(receipt?.blockHash, `transaction ${r.id}`).toBe(r.block_hash);
  }
}

/** Both endpoints ok, level, and not rested any more (a rest after a rate limit ends by itself). */
async function bothHealthy(): Promise<void> {
  await waitFor(
    async () => {
      const e = await endpoints();
      return e.length === 2 && e.every((x) => x.ok && x.lag_blocks === 0 && x.error === null) ? e : null;
    },
    { timeoutMs: 45_000, message: 'both endpoints ok and level' },
  );
}

/** Each fault, and the reason the first endpoint's health gives for it (`error`). */
const FAULTS: Array<{ name: string; rule: RpcRule; error: RegExp }> = [
  { name: 'HTTP 503', rule: { action: 'forward-error', status: 503, message: 'Service Unavailable' }, error: /^HTTP 503$/ },
  {
    name: 'HTTP 429',
    rule: { action: 'forward-error', status: 429, code: -32005, message: 'Too Many Requests' },
    error: /^HTTP 429: rested \d+(\.\d)? s$/,
  },
  {
    name: 'JSON-RPC -32005',
    rule: { action: 'error', code: -32005, message: 'Request exceeds defined limit' },
    error: /^JSON-RPC -32005 rate limited: rested \d+(\.\d)? s$/,
  },
];

describe('two endpoints in front of one anvil, the first one faulty', () => {
  it('starts with both endpoints ok, level, origins only', async () => {
    await bothHealthy();
    const e = await endpoints();
    expect(e.map((x) => x.url)).toEqual([first.url, second.url]);
    for (const x of e)
      expect(x).toEqual({
        url: x.url,
        ok: true,
        head_block: expect.any(Number),
        lag_blocks: 0,
        latency_ms: expect.any(Number),
        error: null,
        traces: true,
      });
  });

  for (const f of FAULTS) {
    it(`${f.name} on the first: reads, a create, its confirmation and a charge payment go through the second; health says ok false and why`, async () => {
      await bothHealthy();
      breakFirst(f.rule);
      try {
        await expectBalanceFromChain();
        await transferConfirmed();
        await chargePaid();
        const e = await waitFor(
          async () => {
            const x = await endpoints();
            return !x[0]!.ok && x[1]!.ok ? x : null;
          },
          { message: `first endpoint reported down under ${f.name}` },
        );
        expect(e[0]).toMatchObject({ url: first.url, ok: false, error: expect.stringMatching(f.error) });
        expect(e[1]).toMatchObject({ url: second.url, ok: true, lag_blocks: 0, error: null });
        await nothingFalse();
      } finally {
        healFirst();
      }
    });
  }

  it('the first lagging 5 blocks: it serves no reads, everything goes through the second; lag_blocks 5', async () => {
    await bothHealthy();
    first.rule('eth_blockNumber', { action: 'lower', by: 5 });
    try {
      const e = await waitFor(
        async () => {
          const x = await endpoints();
          return x[0]!.lag_blocks === 5 && x[1]!.lag_blocks === 0 ? x : null;
        },
        { message: 'lag seen' },
      );
      expect(e[0]).toMatchObject({ url: first.url, ok: true, lag_blocks: 5, error: null });
      expect(e[0]!.head_block).toBe(e[1]!.head_block! - 5);
      // The supervisor's entry carries the same list (read afresh) and the best head.
      const sup = await waitFor(
        async () => {
          const r = await t.request('GET', '/api/supervisor', { token: user.token });
          const n = r.body.data.networks.find((x: { id: number }) => x.id === networkId);
          return n.endpoints[0].lag_blocks === 5 ? n : null;
        },
        { message: 'supervisor sees the lag' },
      );
      expect(sup).toMatchObject({ rpc_ok: true, head_block: sup.endpoints[1].head_block });
      expect(
        sup.endpoints.map((x: { url: string; ok: boolean; lag_blocks: number; error: string | null }) => [
          x.url,
          x.ok,
          x.lag_blocks,
          x.error,
        ]),
      ).toEqual([
        [first.url, true, 5, null],
        [second.url, true, 0, null],
      ]);
      first.calls = [];
      await expectBalanceFromChain();
      await transferConfirmed();
      await chargePaid();
      await nothingFalse();
      // Head reads (its health) and broadcasts only: not one read was served by the lagging endpoint.
      expect(first.calls.filter((m) => m !== 'eth_blockNumber' && m !== 'eth_sendRawTransaction')).toEqual([]);
      expect(first.calls).toContain('eth_sendRawTransaction');
    } finally {
      healFirst();
    }
  });

  it('the first hanging: after its time-out everything goes through the second; health says ok false, timed out', async () => {
    await bothHealthy();
    breakFirst({ action: 'forward-timeout', ms: 60_000 });
    try {
      await expectBalanceFromChain();
      await transferConfirmed();
      await chargePaid();
      const e = await endpoints();
      expect(e[0]).toMatchObject({ url: first.url, ok: false, error: 'timed out' });
      expect(e[1]).toMatchObject({ url: second.url, ok: true, lag_blocks: 0, error: null });
      await nothingFalse();
      // The supervisor's entry says the same.
      const r = await t.request('GET', '/api/supervisor', { token: user.token });
      const sup = r.body.data.networks.find((x: { id: number }) => x.id === networkId);
      expect(sup.endpoints[0]).toMatchObject({ url: first.url, ok: false, error: 'timed out' });
    } finally {
      healFirst();
    }
  });

  it('the first refusing connections (its port closed): reads, a create, its confirmation and a charge payment go through the second; health says ok false, connection refused', async () => {
    await bothHealthy();
    await first.down();
    try {
      // The very first read after the port closed (the first endpoint still level, ok, first in order) answers.
      const res = await t.request('GET', `/api/wallet/${wallet.id}/balance`, { token: user.token });
      expect({ status: res.status, message: res.body.message }).toMatchObject({ status: 200 });
      await expectBalanceFromChain();
      await transferConfirmed();
      await chargePaid();
      const e = await waitFor(
        async () => {
          const x = await endpoints();
          return !x[0]!.ok && x[1]!.ok ? x : null;
        },
        { message: 'first endpoint reported down while refusing connections' },
      );
      expect(e[0]).toMatchObject({ url: first.url, ok: false, error: 'connection refused' });
      expect(e[1]).toMatchObject({ url: second.url, ok: true, lag_blocks: 0, error: null });
      await nothingFalse();
    } finally {
      await first.up();
    }
    await bothHealthy();
  });

  it('/metrics counts calls and errors per endpoint host, never a path', async () => {
    const res = { text: await (await fetch(`${t.url}/metrics`)).text() };
    const hostOf = (p: RpcProxy) => new URL(p.url).host;
    const line = (name: string, p: RpcProxy) =>
      new RegExp(`^${name}\\{network_id="${networkId}",host="${hostOf(p).replace(/\./g, '\\.')}"\\} (\\d+)$`, 'm').exec(res.text);
    const errorsFirst = Number(line('rpc_errors_total', first)?.[1]);
    const callsSecond = Number(line('rpc_calls_total', second)?.[1]);
    expect(errorsFirst).toBeGreaterThan(0);
    expect(callsSecond).toBeGreaterThan(0);
    expect(Number(line('rpc_calls_total', first)?.[1])).toBeGreaterThanOrEqual(errorsFirst);
    expect(res.text).toMatch(new RegExp(`^network_rpc_up\\{network_id="${networkId}",network="Two providers"\\} 1$`, 'm'));
  });
});

describe('an RPC URL with a key in its path and query', () => {
  it('is called as given, and shows only as its host in /metrics and its origin in the Network object and the supervisor', async () => {
    const keyed = await RpcProxy.start(chain.rpcUrl);
    try {
      const url1 = `${keyed.url}/v3/SECRETKEY123?x=1`;
      const url2 = `${second.url}/v2/OTHERKEY456?apikey=QUERYKEY789`;
      const n = await upsertNetwork(
        t.store.db,
        {
          name: 'Keyed providers',
          rpc_url: url1,
          rpc_urls: [url1, url2],
          chain_id: 31337,
          currency_symbol: 'ETH',
          block_explorer: '',
          is_mainnet: false,
          confirmations: 1,
        },
        Date.now(),
      );
      await waitForCursor(t, n.id);
      // The service did call the URL with its key (the proxy answers at any path).
      expect([...keyed.paths]).toContain('/v3/SECRETKEY123?x=1');
      const secrets = /SECRETKEY123|OTHERKEY456|QUERYKEY789|\/v3\/|\/v2\/|apikey|\?x=1/;

      const metrics = await (await fetch(`${t.url}/metrics`)).text();
      const calls = (p: RpcProxy) =>
        new RegExp(`^rpc_calls_total\\{network_id="${n.id}",host="${new URL(p.url).host.replace(/\./g, '\\.')}"\\} (\\d+)$`, 'm').exec(
          metrics,
        );
      expect(Number(calls(keyed)?.[1])).toBeGreaterThan(0);
      expect(Number(calls(second)?.[1])).toBeGreaterThan(0);
      expect(metrics).not.toMatch(secrets);

      const nets = await t.request('GET', '/api/networks', { token: user.token });
      const net = nets.body.data.find((x: { id: number }) => x.id === n.id);
      expect({ rpc_url: net.rpc_url, urls: net.rpc_endpoints.map((e: { url: string }) => e.url) }).toEqual({
        rpc_url: keyed.url,
        urls: [keyed.url, second.url],
      });
      expect(nets.text).not.toMatch(secrets);
      const sup = await t.request('GET', '/api/supervisor', { token: user.token });
      expect(sup.body.data.networks.find((x: { id: number }) => x.id === n.id).endpoints.map((e: { url: string }) => e.url)).toEqual([
        keyed.url,
        second.url,
      ]);
      expect(sup.text).not.toMatch(secrets);
    } finally {
      await keyed.down();
    }
  });
});
