/**
 * Internal payments on several endpoints (docs/charges.md, "Internal transfers"): a block's call
 * traces are asked of every endpoint that offers them, and a block whose traces no endpoint
 * could give is read again later, never taken as "nothing inside". Two RpcProxy in front of one
 * anvil, registered as one network's two endpoints:
 * - the first refuses debug_traceBlockByHash (-32601): the charge paid through a contract is
 *   still paid (asked of the second), its payment internal, swept; `rpc_endpoints` shows the
 *   first `traces: false`, the second `traces: true`;
 * - both refuse it for a while: the block is recorded and counted in the supervisor's
 *   `traces_pending`, the charge stays unpaid; the second heals: the payment appears and
 *   `traces_pending` is 0 again;
 * - both refuse while the charge's expiry passes: it is not decided expired across a block whose
 *   traces are unknown; when they come, the payment made before the expiry makes it `paid`
 *   (without the wait it expired unpaid and the payment came late).
 * Fail without the fix: one endpoint's -32601 switched trace reading off for the whole network
 * (the payment never seen), and a block whose traces could not be read was committed without them.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseEther, type Address } from 'viem';
import { ManualClock, startTestApp, type TestApp, type TestUser } from '../helpers/app.js';
import { startTestChain, type TestChain } from '../helpers/chain.js';
import { deployForwarder, forwardValue } from '../helpers/erc20.js';
import { waitFor } from '../helpers/wait.js';
import { upsertNetwork } from '../../src/modules/networks/networks.repository.js';
import { RpcProxy, waitForCursor } from '../helpers/transfers.js';
import { balanceOf, chargeApi, clockToChain, mineAt, pay } from './support.js';

const NO_METHOD = { action: 'error', code: -32601, message: 'the method debug_traceBlockByHash does not exist/is not available' } as const;

describe('internal payments on two endpoints, one or both refusing traces', () => {
  const clock = new ManualClock();
  let chain: TestChain;
  let first: RpcProxy;
  let second: RpcProxy;
  let t: TestApp;
  let user: TestUser;
  let networkId: number;
  let api: ReturnType<typeof chargeApi>;
  let forwarder: Address;

  const networkEntry = async () => {
    const res = await t.request('GET', '/api/supervisor', { token: user.token });
    expect(res.status, res.text).toBe(200);
    return res.body.data.networks.find((n: any) => n.id === networkId);
  };

  beforeAll(async () => {
    chain = await startTestChain();
    first = await RpcProxy.start(chain.rpcUrl);
    second = await RpcProxy.start(chain.rpcUrl);
    t = await startTestApp({ clock, workers: true, env: { CHARGES_POLL_MS: '50', WATCHER_POLL_MS: '50' } });
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
    const wallet = (await t.request('POST', '/api/wallet/create', { token: user.token, body: { name: 'Shop', network_id: networkId } }))
      .body.data;
    api = chargeApi(t, wallet.id, user.token);
    forwarder = await deployForwarder(chain.rpcUrl);
    await waitForCursor(t, networkId, await chain.blockNumber()); // its block traced: the network has traces
  });
  afterAll(async () => {
    await t?.close();
    await first?.down();
    await second?.down();
    await chain?.stop();
  });

  it('a trace refused by the first endpoint is asked of the second: paid, internal, swept', async () => {
    first.rule('debug_traceBlockByHash', NO_METHOD);
    await clockToChain(clock, chain);
    const c = await api.create({ amount: '0.2', token: 'ETH', expires: 600 });
    const hash = await forwardValue(chain.rpcUrl, forwarder, c.address, parseEther('0.2'));

    const paid = await api.until(c.id, (x) => x.status === 'paid', 'paid through the forwarder, its traces from the second endpoint');
    expect(paid.payments).toEqual([expect.objectContaining({ tx_hash: hash, amount: '0.200000000000000000', internal: true })]);
    await api.until(c.id, (x) => x.sweeps.some((w: any) => w.status === 'confirmed'), 'swept', 20_000);
    expect(await balanceOf(chain, c.address)).toBe(0n);
    expect(first.seen.filter((x) => x.method === 'debug_traceBlockByHash' && x.action === 'error').length).toBeGreaterThan(0);

    const networks = (await t.request('GET', '/api/networks', { token: user.token })).body.data;
    const endpoints = networks.find((x: any) => x.id === networkId).rpc_endpoints;
    expect(endpoints.map((e: any) => e.traces)).toEqual([false, true]);
    expect((await networkEntry()).traces_pending).toBe(0);
  });

  it('both refuse for a while: the block waits in traces_pending; one heals: the payment appears', async () => {
    first.rule('debug_traceBlockByHash', NO_METHOD);
    second.rule('debug_traceBlockByHash', NO_METHOD);
    await clockToChain(clock, chain);
    const c = await api.create({ amount: '0.1', token: 'ETH', expires: 600 });
    const hash = await forwardValue(chain.rpcUrl, forwarder, c.address, parseEther('0.1'));
    const forwardBlock = Number(BigInt((await chain.rpc<{ blockNumber: string }>('eth_getTransactionReceipt', [hash])).blockNumber));
    await waitForCursor(t, networkId, forwardBlock);

    await waitFor(async () => (await networkEntry()).traces_pending > 0, { message: 'the forwarder’s block counted in traces_pending' });
    expect((await api.show(c.id)).payments).toEqual([]);
    expect((await api.show(c.id)).status).toBe('pending');

    second.allow('debug_traceBlockByHash');
    const paid = await api.until(c.id, (x) => x.status === 'paid', 'paid once the second endpoint gives traces again', 30_000);
    expect(paid.payments).toEqual([
      expect.objectContaining({ tx_hash: hash, amount: '0.100000000000000000', internal: true, block_number: forwardBlock }),
    ]);
    await waitFor(async () => (await networkEntry()).traces_pending === 0, { message: 'traces_pending back to 0', timeoutMs: 30_000 });
  });
  it('no expiry is decided across a block whose traces are unknown: paid when they come', async () => {
    first.rule('debug_traceBlockByHash', NO_METHOD);
    second.rule('debug_traceBlockByHash', NO_METHOD);
    await clockToChain(clock, chain);
    const c = await api.create({ amount: '0.1', token: 'ETH', expires: 60 });
    const hash = await forwardValue(chain.rpcUrl, forwarder, c.address, parseEther('0.1'));
    await waitFor(async () => (await networkEntry()).traces_pending > 0, { message: 'the forwarder’s block pending' });

    // Expired on the chain's time, with a confirmed block after it.
    clock.advance(70_000);
    await mineAt(chain, Math.floor(clock.nowMs() / 1000) + 5);
    await chain.mine(1);
    await waitForCursor(t, networkId, await chain.blockNumber());
    await new Promise((r) => setTimeout(r, 1_500)); // thirty charge-worker ticks (CHARGES_POLL_MS 50)
    expect(await api.show(c.id)).toMatchObject({ status: 'pending', payments: [] });

    second.allow('debug_traceBlockByHash');
    const paid = await api.until(c.id, (x) => x.status === 'paid', 'paid once the traces come', 30_000);
    expect(paid.payments).toEqual([
      expect.objectContaining({ tx_hash: hash, amount: '0.100000000000000000', internal: true, late: false }),
    ]);
  });
});

describe('a network none of whose endpoints ever offered traces', () => {
  const clock = new ManualClock();
  let chain: TestChain;
  let proxy: RpcProxy;
  let t: TestApp;
  let user: TestUser;
  let networkId: number;

  beforeAll(async () => {
    chain = await startTestChain();
    proxy = await RpcProxy.start(chain.rpcUrl);
    proxy.rule('debug_traceBlockByHash', { action: 'error', code: -32601, message: 'Method not found', status: 200 });
    t = await startTestApp({ clock, workers: true, env: { CHARGES_POLL_MS: '50', WATCHER_POLL_MS: '50' } });
    networkId = (
      await upsertNetwork(
        t.store.db,
        {
          name: 'Plain provider',
          rpc_url: proxy.url,
          chain_id: 31337,
          currency_symbol: 'ETH',
          block_explorer: '',
          is_mainnet: false,
          confirmations: 1,
        },
        Date.now(),
      )
    ).id;
    await waitForCursor(t, networkId);
    user = await t.createUser();
  });
  afterAll(async () => {
    await t?.close();
    await proxy?.down();
    await chain?.stop();
  });

  it('keeps no block pending (nothing could ever read them): warned once, traces_pending 0, direct payments found', async () => {
    const wallet = (await t.request('POST', '/api/wallet/create', { token: user.token, body: { name: 'Shop', network_id: networkId } }))
      .body.data;
    const api = chargeApi(t, wallet.id, user.token);
    const forwarder = await deployForwarder(chain.rpcUrl);
    await clockToChain(clock, chain);
    const direct = await api.create({ amount: '0.1', token: 'ETH', expires: 600 });
    const forwarded = await api.create({ amount: '0.1', token: 'ETH', expires: 600 });
    await forwardValue(chain.rpcUrl, forwarder, forwarded.address, parseEther('0.1'));
    await pay(chain.rpcUrl, direct.address, parseEther('0.1'));
    await api.until(direct.id, (x) => x.status === 'paid', 'the direct payment is found');
    await waitForCursor(t, networkId, await chain.blockNumber());
    expect((await api.show(forwarded.id)).payments).toEqual([]);
    const entry = (await t.request('GET', '/api/supervisor', { token: user.token })).body.data.networks.find(
      (n: any) => n.id === networkId,
    );
    expect(entry.traces_pending).toBe(0);
    expect(entry.endpoints.map((e: any) => e.traces)).toEqual([false]);
    expect(t.logs.filter((l) => l.includes('the node has no trace API'))).toHaveLength(1);
  });
});
