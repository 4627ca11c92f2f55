/**
 * Transient node faults during a create, a speed-up or a cancel (docs/operating.md, "Several RPC
 * providers"), through a real JSON-RPC proxy in front of anvil: a time-out, a cut connection, HTTP 5xx,
 * HTTP 429, JSON-RPC -32005 and an error that says "rate limit" answer 503 `The blockchain node is
 * unavailable` with `Retry-After`, never a 4xx, and are never stored against the create's
 * Idempotency-Key (the retry runs). A speed-up or cancel that races the block (the original mined
 * meanwhile; the node, which the service saw a block behind, says "nonce too low") answers 400
 * `Transaction cannot be replaced` and leaves the original as it was.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ApiResponse } from '../helpers/app.js';
import {
  ETH,
  fundedWallet,
  RECIPIENT,
  startProxiedSuite,
  txRows,
  waitForStatus,
  type FundedWallet,
  type RpcRule,
} from '../helpers/transfers.js';

let s: Awaited<ReturnType<typeof startProxiedSuite>>;

beforeAll(async () => {
  s = await startProxiedSuite();
});
afterAll(async () => s?.close());

const BODY = { amount: '0.01', token: 'ETH', address: RECIPIENT };
const create = (w: FundedWallet, key?: string) =>
  s.t.request('POST', `/api/wallet/${w.id}/transaction/create`, {
    token: s.user.token,
    body: BODY,
    headers: key ? { 'idempotency-key': key } : {},
  });
const replace = (w: FundedWallet, id: number, kind: 'speed-up' | 'cancel') =>
  s.t.request('POST', `/api/wallet/${w.id}/transaction/${id}/${kind}`, { token: s.user.token, body: {} });

function expectUnavailable(res: ApiResponse, what: string): void {
  expect({ what, status: res.status, body: res.body }).toEqual({
    what,
    status: 503,
    body: { status: 'error', message: 'The blockchain node is unavailable', data: null },
  });
  expect(Number(res.headers.get('retry-after')), what).toBeGreaterThanOrEqual(1);
}

/** One fault: a rule on one method (or the connection to it cut). */
type Fault = { name: string; method: string; rule?: RpcRule };

const FAULTS: Fault[] = [
  { name: 'HTTP 502', method: 'eth_estimateGas', rule: { action: 'forward-error', status: 502, message: 'bad gateway' } },
  {
    name: 'HTTP 429',
    method: 'eth_estimateGas',
    rule: { action: 'forward-error', status: 429, code: -32005, message: 'Too Many Requests' },
  },
  { name: 'JSON-RPC -32005', method: 'eth_estimateGas', rule: { action: 'error', code: -32005, message: 'limit exceeded' } },
  {
    name: 'a rate limit message',
    method: 'eth_estimateGas',
    rule: { action: 'error', code: -32000, message: 'Rate limit reached: 25 requests per second' },
  },
  { name: 'a cut connection', method: 'eth_estimateGas' },
  {
    name: 'JSON-RPC -32005 on the balance read',
    method: 'eth_getBalance',
    rule: { action: 'error', code: -32005, message: 'limit exceeded' },
  },
  {
    name: 'a rate limit message on the nonce read',
    method: 'eth_getTransactionCount',
    rule: { action: 'error', code: -32000, message: 'rate limited' },
  },
];

function inject(f: Fault): void {
  if (f.rule) s.proxy.rule(f.method, { ...f.rule });
  else s.proxy.drop(f.method);
}

describe('create under transient node faults', () => {
  let w: FundedWallet;
  beforeAll(async () => {
    w = await fundedWallet(s.t, s.chain, s.user, s.networkId, 10n * ETH);
  });

  for (const f of FAULTS) {
    it(`${f.name}: 503 with Retry-After, the key not stored, and the retry with the same key runs`, async () => {
      const key = `transient-${f.name.replace(/\W+/g, '-')}`;
      const before = (await txRows(s.t, w.id)).filter((r) => r.type === 'transfer').length;
      inject(f);
      try {
        expectUnavailable(await create(w, key), f.name);
      } finally {
        s.proxy.allow(f.method);
      }
      expect(await s.t.store.db.selectFrom('idempotency_keys').select('id').where('key', '=', key).execute()).toEqual([]);
      expect((await txRows(s.t, w.id)).filter((r) => r.type === 'transfer')).toHaveLength(before);

      const retry = await create(w, key);
      expect(retry.status).toBe(200);
      expect(retry.headers.get('idempotent-replayed')).toBeNull();
      expect((await txRows(s.t, w.id)).filter((r) => r.type === 'transfer')).toHaveLength(before + 1);
    });
  }

  it('a node that times out: 503 with Retry-After', async () => {
    s.proxy.rule('eth_estimateGas', { action: 'forward-timeout', ms: 7_000 });
    try {
      expectUnavailable(await create(w), 'time-out');
    } finally {
      s.proxy.allow('eth_estimateGas');
    }
  });
});

describe('speed-up and cancel under transient node faults, and racing the block', () => {
  let w: FundedWallet;
  beforeAll(async () => {
    w = await fundedWallet(s.t, s.chain, s.user, s.networkId, 10n * ETH);
    await s.chain.rpc('evm_setAutomine', [false]);
  });
  afterAll(async () => {
    s.proxy.allow('eth_blockNumber');
    await s.chain.rpc('evm_setAutomine', [true]);
  });

  it('answers 503 with Retry-After, never a 4xx, and replaces nothing', async () => {
    const res = await create(w);
    expect(res.status).toBe(200);
    const faults: Array<[string, 'speed-up' | 'cancel', Fault]> = [
      [
        '-32005',
        'speed-up',
        { name: '-32005', method: 'eth_getBalance', rule: { action: 'error', code: -32005, message: 'limit exceeded' } },
      ],
      [
        'rate limit',
        'cancel',
        { name: 'rate limit', method: 'eth_getTransactionCount', rule: { action: 'error', code: -32000, message: 'rate limit exceeded' } },
      ],
      [
        'HTTP 429',
        'speed-up',
        { name: 'HTTP 429', method: 'eth_getBalance', rule: { action: 'forward-error', status: 429, message: 'Too Many Requests' } },
      ],
      [
        'HTTP 503',
        'cancel',
        { name: 'HTTP 503', method: 'eth_getBalance', rule: { action: 'forward-error', status: 503, message: 'unavailable' } },
      ],
    ];
    for (const [name, kind, f] of faults) {
      inject(f);
      try {
        expectUnavailable(await replace(w, res.body.data.id, kind), `${kind} under ${name}`);
      } finally {
        s.proxy.allow(f.method);
      }
    }
    const row = (await txRows(s.t, w.id)).find((r) => r.id === res.body.data.id)!;
    expect(row).toMatchObject({ status: 'pending', tx_hash: res.body.data.tx_hash });
    await s.chain.mine(1);
    await waitForStatus(s.t, s.user, w.id, res.body.data.id, 'confirmed');
  });

  for (const kind of ['speed-up', 'cancel'] as const) {
    it(`a ${kind} racing the block (the node says nonce too low): 400 Transaction cannot be replaced, the original stays`, async () => {
      const res = await create(w);
      expect(res.status).toBe(200);
      const original = res.body.data.tx_hash as string;
      // The service sees the node a block behind (its head, and so the count it checks against),
      // and the original is mined meanwhile: the replacement reaches a node whose nonce moved on.
      s.proxy.rule('eth_blockNumber', { action: 'lower', by: 1 });
      await s.chain.mine(1);
      expect(await s.chain.rpc('eth_getTransactionReceipt', [original])).not.toBeNull();

      const r = await replace(w, res.body.data.id, kind);
      expect({ status: r.status, body: r.body }).toEqual({
        status: 400,
        body: { status: 'error', message: 'Transaction cannot be replaced', data: null },
      });

      s.proxy.allow('eth_blockNumber');
      const done = await waitForStatus(s.t, s.user, w.id, res.body.data.id, 'confirmed');
      expect(done).toMatchObject({ tx_hash: original, replaced_hashes: [], failure_reason: null });
    });
  }
});
