/**
 * `unswept`: a settled charge's address holding funds with no sweep under way. A native charge
 * paid with less than the fee of sweeping it is left there as dust: the answer lists it with its
 * reason and is not `ok`, although every difference is zero (there is nothing to accept: 400).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Address } from 'viem';
import { ManualClock, type TestApp, type TestUser } from '../helpers/app.js';
import type { TestChain } from '../helpers/chain.js';
import { waitFor } from '../helpers/wait.js';
import { chargeApi, clockToChain, pay, startSweepingService } from '../charges/support.js';
import { waitForCursor } from '../helpers/transfers.js';

const ZERO = '0.000000000000000000';
const DUST = 10n ** 13n; // 0.00001 ETH: below 21,000 gas × anvil's fee per gas

describe('reconciliation: unswept funds', () => {
  const clock = new ManualClock();
  let chain: TestChain;
  let t: TestApp;
  let alice: TestUser;
  let networkId: number;

  beforeAll(async () => {
    ({ chain, t, alice, networkId } = await startSweepingService(clock));
  });
  afterAll(async () => {
    await t?.close();
    await chain?.stop();
  });

  it('lists dust left on a paid charge’s address, with its reason; not ok', async () => {
    const wallet = (await t.request('POST', '/api/wallet/create', { token: alice.token, body: { name: 'Shop', network_id: networkId } }))
      .body.data as { id: number; address: Address };
    const api = chargeApi(t, wallet.id, alice.token);
    await clockToChain(clock, chain);
    const c = await api.create({ amount: '0.00001', token: 'ETH', expires: 600 });
    await pay(chain.rpcUrl, c.address, DUST);
    await api.until(c.id, (x) => x.status === 'paid', 'paid');
    await waitFor(() => t.logs.some((l) => l.includes('dust left on a charge deposit address')), {
      timeoutMs: 15_000,
      message: 'the sweeper left it as dust',
    });
    await waitFor(
      async () =>
        (await t.store.db.selectFrom('charges').select('sweep_due_at').where('id', '=', c.id).executeTakeFirstOrThrow()).sweep_due_at ===
        null,
      { message: 'nothing due' },
    );
    await chain.mine(1);
    await waitForCursor(t, networkId, await chain.blockNumber());

    const r = (await t.request('GET', `/api/wallet/${wallet.id}/reconciliation`, { token: alice.token })).body.data;
    expect(r.unswept).toEqual([
      { address: c.address, charge_id: c.id, token: 'ETH', amount: '0.000010000000000000', reason: 'dust: below the fee of sweeping it' },
    ]);
    const deposit = r.addresses.find((a: { kind: string }) => a.kind === 'deposit');
    expect(deposit.tokens[0]).toMatchObject({
      token: 'ETH',
      recorded_change: '0.000010000000000000',
      chain_balance: '0.000010000000000000',
      difference: ZERO,
    });
    expect(r.ok).toBe(false);
    const accept = await t.request('POST', `/api/wallet/${wallet.id}/reconciliation/accept`, {
      token: alice.token,
      body: { note: 'dust' },
    });
    expect([accept.status, accept.body.message]).toEqual([400, 'Nothing to accept: every difference is zero']);
  });
});
