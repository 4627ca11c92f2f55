/**
 * A sweep mined at or below the height but not yet marked final by the sweeper (its row still in
 * flight) is counted exactly once: its receipt is on the main address (a recorded receipt) and,
 * read from the node, out of the deposit address. The charge worker is stopped after the sweep
 * was sent, so its row stays in flight while the reconciliation runs.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseEther, type Address } from 'viem';
import { ManualClock, type TestApp, type TestUser } from '../helpers/app.js';
import type { TestChain } from '../helpers/chain.js';
import { waitFor } from '../helpers/wait.js';
import { chargeApi, clockToChain, pay, startSweepingService } from '../charges/support.js';
import { waitForCursor } from '../helpers/transfers.js';

const ZERO = '0.000000000000000000';

describe('reconciliation with a sweep in flight', () => {
  const clock = new ManualClock();
  let chain: TestChain;
  let t: TestApp;
  let alice: TestUser;
  let networkId: number;

  beforeAll(async () => {
    ({ chain, t, alice, networkId } = await startSweepingService(clock));
  });
  afterAll(async () => {
    await chain?.rpc('evm_setAutomine', [true]).catch(() => undefined);
    await t?.close();
    await chain?.stop();
  });

  it('counts a mined sweep whose row is still in flight once on each side', async () => {
    const wallet = (await t.request('POST', '/api/wallet/create', { token: alice.token, body: { name: 'Shop', network_id: networkId } }))
      .body.data as { id: number; address: Address };
    const api = chargeApi(t, wallet.id, alice.token);
    await clockToChain(clock, chain);
    const c = await api.create({ amount: '0.4', token: 'ETH', expires: 600 });
    await chain.rpc('evm_setAutomine', [false]);
    await pay(chain.rpcUrl, c.address, parseEther('0.4'));
    await chain.mine(1);
    const paid = await api.until(c.id, (x) => x.status === 'paid' && x.sweeps.length === 1, 'paid, sweep recorded');
    const hash = paid.sweeps[0].tx_hash;
    await waitFor(() => chain.rpc('eth_getTransactionByHash', [hash]), { timeoutMs: 10_000, message: 'sweep in the pool' });

    // The sweeper stops: its row stays in flight while the sweep is mined and followed.
    await t.workers!.list.find((w) => w.name === 'charges')!.stop();
    await chain.mine(1);
    await chain.rpc('evm_setAutomine', [true]);
    const receipt = await chain.rpc<{ blockNumber: string }>('eth_getTransactionReceipt', [hash]);
    await waitForCursor(t, networkId, Number(BigInt(receipt.blockNumber)));
    const row = await t.store.db
      .selectFrom('charge_sweeps')
      .select(['status', 'block_number', 'amount'])
      .where('charge_id', '=', c.id)
      .executeTakeFirstOrThrow();
    expect([row.status, row.block_number]).toEqual(['pending', null]);

    const res = await t.request('GET', `/api/wallet/${wallet.id}/reconciliation`, { token: alice.token });
    expect(res.status, res.text).toBe(200);
    const r = res.body.data;
    expect(r.block_number).toBeGreaterThanOrEqual(Number(BigInt(receipt.blockNumber)));
    const eth = (kind: string) => r.addresses.find((a: { kind: string }) => a.kind === kind).tokens[0];
    const swept = BigInt(row.amount);
    expect(eth('main')).toMatchObject({ token: 'ETH', recorded_change: dec(swept), chain_balance: dec(swept), difference: ZERO });
    expect(eth('deposit')).toMatchObject({ token: 'ETH', recorded_change: ZERO, chain_balance: ZERO, difference: ZERO });
    expect(r.unswept).toEqual([]);
    expect(r.ok).toBe(true);
  });
});

function dec(wei: bigint): string {
  return `${wei / 10n ** 18n}.${(wei % 10n ** 18n).toString().padStart(18, '0')}`;
}
