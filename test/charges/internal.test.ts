/**
 * Internal payments (docs/charges.md, "Internal transfers"; issue 19): native coin that reaches a
 * charge's deposit address through a contract (a `Forwarder` calling on with the value: no
 * transaction addressed to the deposit address) is found in the node's call traces of the block:
 * - the charge is `paid`, its payment `internal: true` with `tx_hash` the forwarder call's hash
 *   and `from` the forwarder, the address is swept, and the wallet's reconciliation is ok;
 * - only value that really moved counts: an inner call that sends more and then reverts adds
 *   nothing;
 * - a reorg that removes the forwarder's block un-counts it: the charge is pending again.
 * Fails without the detection (the charge never sees a payment).
 *
 * Behind a real JSON-RPC proxy: a trace call that fails for a fault ("header not found") is
 * read again later, so the payment is still found; a node whose trace API goes away (-32601)
 * after it answered leaves its blocks in `trace_pending` (read again when it is back; not the
 * warning of a network without traces), direct payments are still found, a charge past its
 * expiry is not decided across such a block, and when the API is back the forwarded money is
 * its payment and is swept. A network that never had traces: test/charges/internal-traces-endpoints.test.ts.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { getAddress, parseEther, type Address, type Hex } from 'viem';
import { ManualClock, startTestApp, type TestApp, type TestUser } from '../helpers/app.js';
import { startTestChain, type TestChain } from '../helpers/chain.js';
import { deployForwarder, forwardValue } from '../helpers/erc20.js';
import { waitFor } from '../helpers/wait.js';
import { proxiedNetwork, RpcProxy, waitForCursor } from '../helpers/transfers.js';
import { balanceOf, chargeApi, clockToChain, DATETIME, events, mineAt, pay } from './support.js';

const ZERO = '0.000000000000000000';

describe('a charge paid through a contract (an internal transfer)', () => {
  const clock = new ManualClock();
  let chain: TestChain;
  let t: TestApp;
  let user: TestUser;
  let wallet: { id: number; address: string };
  let api: ReturnType<typeof chargeApi>;
  let networkId: number;
  let forwarder: Address;

  beforeAll(async () => {
    chain = await startTestChain();
    t = await startTestApp({ clock, env: { CHARGES_POLL_MS: '50', WATCHER_POLL_MS: '50' } });
    networkId = await chain.register(t, { confirmations: 1 });
    user = await t.createUser();
    wallet = (await t.request('POST', '/api/wallet/create', { token: user.token, body: { name: 'Shop', network_id: networkId } })).body
      .data;
    api = chargeApi(t, wallet.id, user.token);
    forwarder = await deployForwarder(chain.rpcUrl);
    t.startWorkers();
    await waitForCursor(t, networkId);
  });
  afterAll(async () => {
    await t?.close();
    await chain?.stop();
  });

  it('is paid, lists the payment as internal with the forwarder call’s hash, is swept, and reconciles', async () => {
    await clockToChain(clock, chain);
    const c = await api.create({ amount: '0.3', token: 'ETH', expires: 600 });
    const hash = await forwardValue(chain.rpcUrl, forwarder, c.address, parseEther('0.3'));

    const paid = await api.until(c.id, (x) => x.status === 'paid', 'paid through the forwarder');
    expect(paid.paid_amount).toBe('0.300000000000000000');
    expect(paid.payments).toEqual([
      {
        tx_hash: hash,
        from: getAddress(forwarder),
        token: 'ETH',
        amount: '0.300000000000000000',
        block_number: expect.any(Number),
        block_timestamp: expect.stringMatching(DATETIME),
        late: false,
        internal: true,
        screened: false,
      },
    ]);
    expect((await events(t, 'charge.paid')).filter((e) => e.charge_id === c.id)).toHaveLength(1);

    const swept = await api.until(c.id, (x) => x.sweeps.length === 1 && x.sweeps[0].status === 'confirmed', 'swept', 20_000);
    expect(swept.sweeps[0]).toMatchObject({ token: 'ETH', status: 'confirmed' });
    expect(await balanceOf(chain, c.address)).toBe(0n);

    await chain.mine(1);
    await waitForCursor(t, networkId, await chain.blockNumber());
    const res = await t.request('GET', `/api/wallet/${wallet.id}/reconciliation`, { token: user.token });
    expect(res.status, res.text).toBe(200);
    const r = res.body.data;
    const deposit = r.addresses.find((a: any) => a.charge_id === c.id);
    expect(
      deposit.tokens.map((x: any) => ({
        token: x.token,
        recorded_change: x.recorded_change,
        chain_balance: x.chain_balance,
        difference: x.difference,
      })),
    ).toEqual([{ token: 'ETH', recorded_change: ZERO, chain_balance: ZERO, difference: ZERO }]);
    expect(r.addresses.flatMap((a: any) => a.tokens).filter((x: any) => x.difference !== ZERO)).toEqual([]);
    expect(r.ok).toBe(true);
  });

  it('counts only value that moved: an inner call that sends the rest and reverts adds nothing', async () => {
    await clockToChain(clock, chain);
    const c = await api.create({ amount: '0.25', token: 'ETH', expires: 600 });
    // 0.5 sent to the forwarder: 0.25 reaches the address, the other 0.25 is sent by a call that reverts.
    const hash = await forwardValue(chain.rpcUrl, forwarder, c.address, parseEther('0.5'), { half: true });
    const paid = await api.until(c.id, (x) => x.status === 'paid', 'paid through the forwarder');
    expect(paid.paid_amount).toBe('0.250000000000000000');
    expect(paid.payments).toEqual([expect.objectContaining({ tx_hash: hash, amount: '0.250000000000000000', internal: true })]);
  });

  it('a reorg that removes the forwarder’s block un-counts the payment: pending again, charge.reopened', async () => {
    await clockToChain(clock, chain);
    const c = await api.create({ amount: '0.2', token: 'ETH', expires: 600 });
    const snapshot = await chain.rpc<Hex>('evm_snapshot');
    await forwardValue(chain.rpcUrl, forwarder, c.address, parseEther('0.2'));
    await api.until(c.id, (x) => x.status === 'paid', 'paid through the forwarder');

    expect(await chain.rpc('evm_revert', [snapshot])).toBe(true);
    await chain.mine(3);
    const back = await api.until(c.id, (x) => x.status === 'pending', 'pending again after the reorg');
    expect(back).toMatchObject({ paid_amount: ZERO, paid_at: null, payments: [] });
    expect(await t.store.db.selectFrom('charge_payments').select('id').where('charge_id', '=', c.id).execute()).toEqual([]);
    expect((await events(t, 'charge.reopened')).filter((e) => e.charge_id === c.id)).toHaveLength(1);
  });
});

describe('a node whose trace API fails or is missing', () => {
  const clock = new ManualClock();
  let chain: TestChain;
  let proxy: RpcProxy;
  let t: TestApp;
  let api: ReturnType<typeof chargeApi>;
  let forwarder: Address;
  const NO_TRACES = 'the node has no trace API';

  beforeAll(async () => {
    chain = await startTestChain();
    proxy = await RpcProxy.start(chain.rpcUrl);
    t = await startTestApp({ clock, workers: true, env: { CHARGES_POLL_MS: '50', WATCHER_POLL_MS: '50' } });
    await proxiedNetwork(t, proxy);
    const user = await t.createUser();
    const networkId = (await t.store.db.selectFrom('networks').select('id').executeTakeFirstOrThrow()).id;
    const wallet = (await t.request('POST', '/api/wallet/create', { token: user.token, body: { name: 'Shop', network_id: networkId } }))
      .body.data;
    api = chargeApi(t, wallet.id, user.token);
    forwarder = await deployForwarder(chain.rpcUrl);
  });
  afterAll(async () => {
    await t?.close();
    await proxy?.down();
    await chain?.stop();
  });

  it('a trace call that fails for a fault is retried: the internal payment is still found', async () => {
    await clockToChain(clock, chain);
    const c = await api.create({ amount: '0.15', token: 'ETH', expires: 600 });
    let refused = 0;
    proxy.rule('debug_traceBlockByHash', {
      action: 'error',
      code: -32000,
      message: 'header not found',
      times: 3,
      match: () => (refused += 1) > 0,
    });
    const hash = await forwardValue(chain.rpcUrl, forwarder, c.address, parseEther('0.15'));
    const paid = await api.until(c.id, (x) => x.status === 'paid', 'paid after the trace faults');
    expect(refused).toBe(3);
    expect(paid.payments).toEqual([expect.objectContaining({ tx_hash: hash, amount: '0.150000000000000000', internal: true })]);
    expect(t.logs.some((l) => l.includes(NO_TRACES))).toBe(false);
  });

  it('its trace API gone: blocks pending, direct payments found, no expiry across them; back, the payment found and swept', async () => {
    await clockToChain(clock, chain);
    proxy.rule('debug_traceBlockByHash', {
      action: 'error',
      code: -32601,
      message: 'the method debug_traceBlockByHash does not exist/is not available',
    });
    let forwarded: any;
    let hash: Hex;
    try {
      forwarded = await api.create({ amount: '0.1', token: 'ETH', expires: 60 });
      const direct = await api.create({ amount: '0.1', token: 'ETH', expires: 600 });
      hash = await forwardValue(chain.rpcUrl, forwarder, forwarded.address, parseEther('0.1'));
      await pay(chain.rpcUrl, direct.address, parseEther('0.1'));
      await api.until(direct.id, (x) => x.status === 'paid', 'the direct payment is found');
      expect((await api.show(forwarded.id)).payments).toEqual([]);
      expect((await t.store.db.selectFrom('trace_pending').select('block_number').execute()).length).toBeGreaterThan(0);

      // Past its expiry on the chain's time: not decided while a block before it has unknown traces.
      clock.advance(70_000);
      await mineAt(chain, Math.floor(clock.nowMs() / 1000) + 5);
      await new Promise((r) => setTimeout(r, 1_000)); // twenty charge-worker ticks
      expect(await api.show(forwarded.id)).toMatchObject({ status: 'pending', payments: [] });
      expect(t.logs.some((l) => l.includes(NO_TRACES))).toBe(false);
    } finally {
      proxy.allow('debug_traceBlockByHash');
    }
    const paid = await api.until(
      forwarded.id,
      (x) => x.status === 'paid' && x.sweeps.some((w: any) => w.status === 'confirmed'),
      'paid and swept once traces are back',
      20_000,
    );
    expect(paid.payments).toEqual([
      expect.objectContaining({ tx_hash: hash!, amount: '0.100000000000000000', internal: true, late: false }),
    ]);
    await waitFor(async () => (await balanceOf(chain, forwarded.address)) === 0n, { message: 'deposit address emptied' });
  });
});
