/**
 * Settlement decides against the confirmed height that holds when it commits (issue 18,
 * section 3): a reorg rollback that commits while a settlement tick is between reading the
 * cursor and writing its decision must not have a paid charge settled `expired` on the old
 * chain's time with its payment never counted.
 *
 * The tick is held inside (the balance read before an expiry, held by a real JSON-RPC proxy)
 * while the chain is reverted and the payment mined on the new chain; the follower rolls back
 * and, its receipts refused by the proxy for a while, cannot yet record the payment again. The
 * read is released once the rollback has committed, and the node clients' time-out is long
 * enough that it is not given up before: with a fixed 8 s delay and the default 5 s time-out, the
 * test relied on the rollback committing within 5 s, and under CI's load once it did not (the
 * tick then settled the charge expired on the old chain, as it should on the chain it knew, and
 * this test failed on a premise it had not met).
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { parseEther, type Hex } from 'viem';
import { ManualClock, type TestApp, type TestUser } from '../helpers/app.js';
import { type TestChain } from '../helpers/chain.js';
import { waitFor } from '../helpers/wait.js';
import { RpcProxy, waitForCursor } from '../helpers/transfers.js';
import { chargeApi, clockToChain, events, latestTimestampS, mineAt, pay, stampNextBlock, proxiedChargeSuite } from './support.js';

describe('settlement and a reorg committing meanwhile', () => {
  const clock = new ManualClock();
  let chain: TestChain;
  let proxy: RpcProxy;
  let t: TestApp;
  let user: TestUser;
  let networkId: number;
  let api: ReturnType<typeof chargeApi>;

  const suite = proxiedChargeSuite(clock, { chains: { timeoutMs: 60_000 } });
  beforeAll(async () => {
    ({ chain, proxy, t, user, networkId } = suite);
    const wallet = (await t.request('POST', '/api/wallet/create', { token: user.token, body: { name: 'Shop', network_id: networkId } }))
      .body.data;
    api = chargeApi(t, wallet.id, user.token);
    // The charge worker is driven by hand: the test holds one settlement tick in the middle.
    const workers = t.workers!;
    await workers.list.find((w) => w.name === 'charges')!.stop();
  });

  it('a paid charge is not settled expired on the old chain: the tick that read the cursor before the rollback decides nothing', async () => {
    await clockToChain(clock, chain);
    const c = await api.create({ amount: '0.3', token: 'ETH', expires: 60 });
    const expiresAtS = Math.floor(clock.nowMs() / 1000) + 60;
    const start = await latestTimestampS(chain);
    const snapshot = await chain.rpc<Hex>('evm_snapshot');
    const base = await chain.blockNumber();
    // The old chain: a block stamped after expiry, nothing paid. The follower records it.
    await mineAt(chain, expiresAtS + 5);
    await waitForCursor(t, networkId, base + 1);

    // The tick reads the cursor (expiry due) and is held on its balance read until released.
    let held = false;
    let release!: () => void;
    const released = new Promise<void>((r) => (release = r));
    const deposit = c.address.toLowerCase();
    proxy.rule('eth_getBalance', {
      action: 'other-node',
      url: chain.rpcUrl,
      until: released,
      times: 1,
      match: (p) => (held = held || String(p[0]).toLowerCase() === deposit),
    });
    const settling = t.services.charges.settle();
    await waitFor(() => held, { message: 'the tick holds on the balance read', timeoutMs: 10_000 });

    // Meanwhile: the new chain pays the charge before expiry. The follower rolls back (its
    // commit lands while the tick is held) and cannot record the payment yet.
    proxy.rule('eth_getTransactionReceipt', { action: 'error', code: -32000, message: 'header not found' });
    try {
      expect(await chain.rpc('evm_revert', [snapshot])).toBe(true);
      await stampNextBlock(chain, start + 2);
      await pay(chain.rpcUrl, c.address, parseEther('0.3'));
      await chain.mine(1);
      await waitFor(() => t.logs.some((l) => l.includes('reorg: rolled back to the common ancestor')), {
        message: 'the follower rolled back',
        timeoutMs: 30_000,
      });
      release();
      await settling;
      const held_ = await api.show(c.id);
      expect(held_.status).toBe('pending');
    } finally {
      release();
      proxy.allow('eth_getTransactionReceipt');
    }

    // The follower records the new chain; the next ticks count the payment.
    const paid = await waitFor(
      async () => {
        await t.services.charges.settle();
        const x = await api.show(c.id);
        return x.status === 'paid' ? x : null;
      },
      { message: 'paid on the new chain', timeoutMs: 20_000 },
    );
    expect(paid).toMatchObject({
      paid_amount: '0.300000000000000000',
      payments: [expect.objectContaining({ amount: '0.300000000000000000', late: false })],
    });
    expect((await events(t, 'charge.expired')).filter((e) => e.charge_id === c.id)).toEqual([]);
  });
});
