/**
 * What a refusal, an absence and a glitch mean on several endpoints (docs/transactions.md, "Several
 * providers: the finality rule"), through two real JSON-RPC proxies in front of ONE anvil, the
 * network registered with both:
 * - a definite refusal from one endpoint (a backend blocks behind: "insufficient funds" for a
 *   wallet funded since) while the other forwarded the transaction and timed out, and timed out
 *   again on the follow-up lookup: the create answers 200 `pending` and the transfer confirms once,
 *   never 400 with the money sent anyway (a retry with the same key is the same transaction);
 * - "nonce too low" from one endpoint about a nonce the chain has not used, the other failing
 *   (HTTP 502, nothing forwarded): pending, sent again, confirmed; the next transfer takes the next
 *   nonce (no nonce skipped, no wallet stalled behind a gap);
 * - a speed-up refused "replacement transaction underpriced" by one endpoint while the other
 *   forwarded it and timed out: the replacement is kept, and the transfer confirms with its hash;
 * - a node glitch (HTTP 200 carrying -32603 "internal error", or -32000 "header not found") on
 *   one endpoint is asked of the other; on every endpoint it is 503 with Retry-After, never a 400
 *   stored under the Idempotency-Key (the retry after the glitch runs and succeeds).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Hex } from 'viem';
import { startTestApp, type TestApp, type TestUser } from '../helpers/app.js';
import { startTestChain, type TestChain } from '../helpers/chain.js';
import { upsertNetwork } from '../../src/modules/networks/networks.repository.js';
import { ETH, fundedWallet, RECIPIENT, RpcProxy, txRows, waitForCursor, waitForStatus, type FundedWallet } from '../helpers/transfers.js';

let t: TestApp;
let chain: TestChain;
let a: RpcProxy;
let b: RpcProxy;
let user: TestUser;
let networkId: number;

beforeAll(async () => {
  // A node call times out after 1 s here (5 s by default), so a hung endpoint costs the test little.
  t = await startTestApp({ workers: true, env: { WATCHER_POLL_MS: '100', WATCHER_RECHECK_MS: '300' }, chains: { timeoutMs: 1_000 } });
  chain = await startTestChain();
  a = await RpcProxy.start(chain.rpcUrl);
  b = await RpcProxy.start(chain.rpcUrl);
  const n = await upsertNetwork(
    t.store.db,
    {
      name: 'Two providers',
      rpc_url: a.url,
      rpc_urls: [a.url, b.url],
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
});

afterAll(async () => {
  await t?.close();
  await a?.down();
  await b?.down();
  await chain?.stop();
});

const BODY = { amount: '0.01', token: 'ETH', address: RECIPIENT };
const create = (w: FundedWallet, key: string) =>
  t.request('POST', `/api/wallet/${w.id}/transaction/create`, { token: user.token, body: BODY, headers: { 'idempotency-key': key } });

/** Every row of the wallet as the chain shows it: none failed, each confirmed one mined at its block. */
async function nothingFalse(w: FundedWallet): Promise<void> {
  for (const r of await txRows(t, w.id)) {
    expect({ id: r.id, status: r.status, error: r.error }).toMatchObject({ status: 'confirmed' });
    const receipt = await chain.rpc<{ blockHash: string; status: string } | null>('eth_getTransactionReceipt', [r.tx_hash]);
    expect({ id: r.id, block: receipt?.blockHash, ok: receipt?.status }).toEqual({ id: r.id, block: r.block_hash, ok: '0x1' });
  }
}

describe('a refusal is final only when no endpoint may hold the transaction', () => {
  it('one endpoint refuses ("insufficient funds"), the other forwards and times out twice: 200 pending, confirmed once', async () => {
    const w = await fundedWallet(t, chain, user, networkId, 10n * ETH);
    a.rule('eth_sendRawTransaction', {
      action: 'error',
      code: -32000,
      message: 'insufficient funds for gas * price + value: have 0 want 10000000000000000',
      times: 1,
    });
    b.rule('eth_sendRawTransaction', { action: 'forward-timeout', ms: 3_000, times: 1 });
    // The follow-up lookup: the first endpoint never saw it, the second (which has it) times out.
    a.rule('eth_getTransactionByHash', { action: 'null', times: 1 });
    b.rule('eth_getTransactionByHash', { action: 'forward-timeout', ms: 3_000, times: 1 });
    const res = await create(w, `paid-once-${w.id}`);
    expect({ status: res.status, message: res.body.message, tx: res.body.data?.status }).toEqual({
      status: 200,
      message: expect.any(String),
      tx: 'pending',
    });
    const done = await waitForStatus(t, user, w.id, res.body.data.id, 'confirmed', 30_000);
    expect(done.tx_hash).toBe(res.body.data.tx_hash);
    // The retry a client makes after a failure it did not see is the same transaction, not a second payment.
    const again = await create(w, `paid-once-${w.id}`);
    expect({ status: again.status, id: again.body.data.id }).toEqual({ status: 200, id: res.body.data.id });
    expect(await txRows(t, w.id)).toHaveLength(1);
    await nothingFalse(w);
  });

  it('a retry of the send asks only the endpoint that refused (the other, which forwarded it, is down now): still not final', async () => {
    const w = await fundedWallet(t, chain, user, networkId, 10n * ETH);
    // The first round: A refuses, B forwards and times out (B is then down). The client's retry of
    // the same bytes asks A alone, which refuses again; B holds it.
    a.rule('eth_sendRawTransaction', {
      action: 'error',
      code: -32000,
      message: 'insufficient funds for gas * price + value: have 0 want 10000000000000000',
      times: 2,
    });
    b.rule('eth_sendRawTransaction', { action: 'forward-timeout', ms: 3_000, times: 1 });
    a.rule('eth_getTransactionByHash', { action: 'null', times: 2 });
    b.rule('eth_getTransactionByHash', { action: 'forward-timeout', ms: 3_000, times: 2 });
    const res = await create(w, `retry-fewer-${w.id}`);
    expect({ status: res.status, message: res.body.message, tx: res.body.data?.status }).toEqual({
      status: 200,
      message: expect.any(String),
      tx: 'pending',
    });
    expect(a.calls.filter((m) => m === 'eth_sendRawTransaction').length).toBeGreaterThanOrEqual(2);
    await waitForStatus(t, user, w.id, res.body.data.id, 'confirmed', 30_000);
    await nothingFalse(w);
  });

  it('"nonce too low" from one endpoint about an unused nonce, the other down: pending, re-sent, confirmed; no nonce skipped', async () => {
    const w = await fundedWallet(t, chain, user, networkId, 10n * ETH);
    a.rule('eth_sendRawTransaction', { action: 'error', code: -32000, message: 'nonce too low: next nonce 1, tx nonce 0', times: 1 });
    b.rule('eth_sendRawTransaction', { action: 'error', status: 502, message: 'bad gateway', times: 1 });
    const first = await create(w, `nonce-${w.id}-1`);
    expect({ status: first.status, message: first.body.message, tx: first.body.data?.status, nonce: first.body.data?.nonce }).toMatchObject(
      { status: 200, tx: 'pending', nonce: 0 },
    );
    await waitForStatus(t, user, w.id, first.body.data.id, 'confirmed', 30_000);
    const second = await create(w, `nonce-${w.id}-2`);
    expect({ status: second.status, nonce: second.body.data?.nonce }).toEqual({ status: 200, nonce: 1 });
    await waitForStatus(t, user, w.id, second.body.data.id, 'confirmed', 30_000);
    await nothingFalse(w);
  });

  it('a speed-up refused "underpriced" by one endpoint while the other forwarded it and timed out is kept; its version confirms', async () => {
    const w = await fundedWallet(t, chain, user, networkId, 10n * ETH);
    let newHash: Hex;
    await chain.rpc('evm_setAutomine', [false]);
    try {
      const res = await create(w, `speed-${w.id}`);
      expect({ status: res.status, tx: res.body.data?.status }).toEqual({ status: 200, tx: 'pending' });
      a.rule('eth_sendRawTransaction', { action: 'error', code: -32000, message: 'replacement transaction underpriced', times: 1 });
      b.rule('eth_sendRawTransaction', { action: 'forward-timeout', ms: 3_000, times: 1 });
      a.rule('eth_getTransactionByHash', { action: 'null', times: 1 });
      b.rule('eth_getTransactionByHash', { action: 'forward-timeout', ms: 3_000, times: 1 });
      const sped = await t.request('POST', `/api/wallet/${w.id}/transaction/${res.body.data.id}/speed-up`, { token: user.token, body: {} });
      expect({ status: sped.status, message: sped.body.message }).toMatchObject({ status: 200 });
      newHash = sped.body.data.tx_hash as Hex;
      expect(newHash).not.toBe(res.body.data.tx_hash);
      // The node holds the new version (the second endpoint forwarded it): it is the one that mines.
      const pooled = await chain.rpc<{ hash: string } | null>('eth_getTransactionByHash', [newHash]);
      expect(pooled?.hash).toBe(newHash);
    } finally {
      await chain.rpc('evm_setAutomine', [true]);
    }
    await chain.mine(1);
    const row = await waitForStatus(t, user, w.id, (await txRows(t, w.id))[0]!.id, 'confirmed', 30_000);
    expect(row.tx_hash).toBe(newHash);
    await nothingFalse(w);
  });
});

describe('a node glitch is not an answer', () => {
  for (const glitch of [
    { name: '-32603 internal error', code: -32603, message: 'internal error' },
    { name: '-32000 header not found', code: -32000, message: 'header not found' },
  ]) {
    it(`${glitch.name} on one endpoint: asked of the other, 200`, async () => {
      const w = await fundedWallet(t, chain, user, networkId, 10n * ETH);
      // Three times: the client's own retry meets it too.
      a.rule('eth_estimateGas', { action: 'error', code: glitch.code, message: glitch.message, times: 3 });
      const res = await create(w, `glitch-one-${glitch.code}-${w.id}`);
      expect({ status: res.status, message: res.body.message }).toMatchObject({ status: 200 });
      await waitForStatus(t, user, w.id, res.body.data.id, 'confirmed', 30_000);
    });

    it(`${glitch.name} on every endpoint: 503 with Retry-After, not stored under the key; the retry succeeds`, async () => {
      const w = await fundedWallet(t, chain, user, networkId, 10n * ETH);
      for (const p of [a, b]) p.rule('eth_estimateGas', { action: 'error', code: glitch.code, message: glitch.message, times: 4 });
      const key = `glitch-all-${glitch.code}-${w.id}`;
      const res = await create(w, key);
      expect({ status: res.status, body: res.body }).toEqual({
        status: 503,
        body: { status: 'error', message: 'The blockchain node is unavailable', data: null },
      });
      expect(Number(res.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
      for (const p of [a, b]) p.allow('eth_estimateGas');
      const retry = await create(w, key);
      expect({ status: retry.status, tx: retry.body.data?.status }).toEqual({ status: 200, tx: 'pending' });
      await waitForStatus(t, user, w.id, retry.body.data.id, 'confirmed', 30_000);
      await nothingFalse(w);
    });
  }
});
