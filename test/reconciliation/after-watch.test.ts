/**
 * Money sent to a settled charge's deposit address after its watch ended (CHARGE_WATCH_AFTER_S
 * after expiry; the chain follower records no payment in a later block): the reconciliation
 * reads every settled charge's address, also one it last saw empty and reconciled, and lists it
 * in `unswept` as `after_watch` with its amount. `POST .../charge/{charge}/sweep` (login token
 * only) records it as a late payment (found by the balance: no transaction hash), sweeps it and
 * answers the charge; the daily run does the same for every wallet. `charge.delayed` once, the
 * chain shows the address emptied, and the reconciliation is ok again. Native and ERC-20 (the
 * token's gas topped up from the main address first). Through HTTP, on anvil.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseEther, type Address } from 'viem';
import { ManualClock, startTestApp, type TestApp, type TestUser } from '../helpers/app.js';
import { startTestChain, type TestChain } from '../helpers/chain.js';
import { waitFor } from '../helpers/wait.js';
import { balanceOf, chargeApi, clockToChain, events, pay, stampNextBlock, tokenChargePaid } from '../charges/support.js';
import { erc20BalanceOf, mintErc20 } from '../helpers/erc20.js';
import { waitForCursor } from '../helpers/transfers.js';
import { reconcileDaily } from '../../src/workers/housekeeping.js';

const WATCH_AFTER_S = 100;
const LATE = parseEther('0.3');
const DAY_MS = 24 * 60 * 60 * 1000;

describe('reconciliation: money sent after a charge’s watch ended', () => {
  const clock = new ManualClock();
  let chain: TestChain;
  let t: TestApp;
  let alice: TestUser;
  let bob: TestUser;
  let networkId: number;

  beforeAll(async () => {
    chain = await startTestChain();
    t = await startTestApp({ clock, env: { CHARGES_POLL_MS: '50', WATCHER_POLL_MS: '50', CHARGE_WATCH_AFTER_S: String(WATCH_AFTER_S) } });
    networkId = await chain.register(t);
    alice = await t.createUser();
    bob = await t.createUser();
    t.startWorkers();
    await waitForCursor(t, networkId);
  });
  afterAll(async () => {
    await t?.close();
    await chain?.stop();
  });

  async function settleHead(): Promise<number> {
    await chain.mine(1);
    return waitForCursor(t, networkId, await chain.blockNumber());
  }

  /** The sweeper has nothing more to do for the charge (a look due after its last sweep is done). */
  const nothingDue = (chargeId: number) =>
    waitFor(
      async () =>
        (await t.store.db.selectFrom('charges').select('sweep_due_at').where('id', '=', chargeId).executeTakeFirstOrThrow())
          .sweep_due_at === null
          ? true
          : null,
      { message: 'nothing due' },
    );

  const reconciliation = async (walletId: number) => {
    const res = await t.request('GET', `/api/wallet/${walletId}/reconciliation`, { token: alice.token });
    expect(res.status, res.text).toBe(200);
    return res.body.data;
  };

  /**
   * A wallet with a 1 ETH charge paid and swept, reconciled ok (its address read empty), then
   * 0.3 ETH sent to the address in a block stamped after the watch, the service's clock past
   * it too, and the follower past that block.
   */
  async function paidThenLate(name: string) {
    const wallet = (await t.request('POST', '/api/wallet/create', { token: alice.token, body: { name, network_id: networkId } })).body
      .data as { id: number; address: Address };
    const api = chargeApi(t, wallet.id, alice.token);
    await clockToChain(clock, chain);
    const c = await api.create({ amount: '1', token: 'ETH', expires: 60 });
    await pay(chain.rpcUrl, c.address, parseEther('1'));
    await api.until(c.id, (x) => x.status === 'paid' && x.sweeps[0]?.status === 'confirmed', 'paid and swept');
    await nothingDue(c.id);
    await settleHead();
    const before = await reconciliation(wallet.id);
    expect([before.ok, before.unswept]).toEqual([true, []]);

    const expiresS = Math.floor(new Date(`${c.expires_at}Z`).getTime() / 1000);
    await stampNextBlock(chain, expiresS + WATCH_AFTER_S + 100);
    const lateHash = await pay(chain.rpcUrl, c.address, LATE);
    clock.advance(Math.max(0, (expiresS + WATCH_AFTER_S + 200) * 1000 - clock.nowMs()));
    await settleHead();
    expect((await api.show(c.id)).payments).toHaveLength(1); // the follower does not see it
    return { wallet, api, c, lateHash };
  }

  it('lists it as after_watch; POST .../sweep records and sweeps it; ok again; charge.delayed once', async () => {
    const { wallet, api, c } = await paidThenLate('Shop');
    const listed = await reconciliation(wallet.id);
    const unswept = [{ address: c.address, charge_id: c.id, token: 'ETH', amount: '0.300000000000000000', reason: 'after_watch' }];
    expect(listed.unswept).toEqual(unswept);
    expect(listed.ok).toBe(false);
    const deposit = listed.addresses.find((a: { charge_id: number | null }) => a.charge_id === c.id);
    expect(deposit.tokens[0]).toMatchObject({ token: 'ETH', chain_balance: '0.300000000000000000', difference: '0.300000000000000000' });
    expect((await reconciliation(wallet.id)).unswept).toEqual(unswept); // listed until swept; an answer moves nothing
    expect(await balanceOf(chain, c.address)).toBe(LATE);

    const sweep = (token: string | null, walletId = wallet.id, charge: number | string = c.id) =>
      t.request('POST', `/api/wallet/${walletId}/charge/${charge}/sweep`, { token });
    const key = (await t.request('POST', '/api/auth/key/create', { token: alice.token, body: { name: 'ops', scopes: ['*'] } })).body.data
      .key;
    const byKey = await sweep(key);
    expect([byKey.status, byKey.body.message]).toEqual([403, 'Insufficient scope']);
    expect((await sweep(null)).status).toBe(401);
    const other = await sweep(bob.token);
    expect([other.status, other.body.message]).toEqual([404, 'Wallet not found']);
    const bobWallet = (await t.request('POST', '/api/wallet/create', { token: bob.token, body: { name: 'Bob', network_id: networkId } }))
      .body.data as { id: number };
    const notHis = await sweep(bob.token, bobWallet.id);
    expect([notHis.status, notHis.body.message]).toEqual([404, 'Charge not found']);
    expect(await balanceOf(chain, c.address)).toBe(LATE);

    const swept = await sweep(alice.token);
    expect(swept.status, swept.text).toBe(200);
    expect(swept.body.data.id).toBe(c.id);
    expect(swept.body.data.payments).toHaveLength(2);
    expect(swept.body.data.payments[1]).toMatchObject({ tx_hash: null, from: null, amount: '0.300000000000000000', late: true });
    expect(swept.body.data.sweeps).toHaveLength(2);
    expect(swept.body.data.sweeps[1]).toMatchObject({ token: 'ETH', status: 'pending' });

    await api.until(c.id, (x) => x.sweeps.length === 2 && x.sweeps[1].status === 'confirmed', 'the late money swept');
    expect(await balanceOf(chain, c.address)).toBe(0n);
    await waitFor(async () => (await events(t, 'charge.delayed')).some((e) => e.charge_id === c.id), { message: 'charge.delayed' });
    await settleHead();
    const after = await reconciliation(wallet.id);
    expect([after.ok, after.unswept]).toEqual([true, []]);
    const delayed = (await events(t, 'charge.delayed')).filter((e) => e.charge_id === c.id);
    expect(delayed).toHaveLength(1);
    expect(delayed[0].payment).toMatchObject({ tx_hash: null, amount: '0.300000000000000000', late: true });
  });

  it('an ERC-20 charge: the token found after the watch is recorded and swept (its gas sent first); ok again', async () => {
    const { wallet, usd, api, c } = await tokenChargePaid(t, chain, alice, {
      networkId,
      clock,
      name: 'Tokens',
      fund: (a) => pay(chain.rpcUrl, a, parseEther('1')),
    });
    await api.until(
      c.id,
      (x) => x.sweeps.some((s: { token: string; status: string }) => s.token === 'TUSD' && s.status === 'confirmed'),
      'the payment swept',
    );
    await waitFor(async () => ((await api.show(c.id)).sweeps.every((s: { status: string }) => s.status !== 'pending') ? true : null), {
      message: 'every sweep final',
    });
    await nothingDue(c.id);
    await settleHead();
    const before = await reconciliation(wallet.id);
    expect([before.ok, before.unswept]).toEqual([true, []]);

    const expiresS = Math.floor(new Date(`${c.expires_at}Z`).getTime() / 1000);
    await stampNextBlock(chain, expiresS + WATCH_AFTER_S + 100);
    await mintErc20(chain.rpcUrl, usd, c.address as Address, 2_000_000n);
    clock.advance(Math.max(0, (expiresS + WATCH_AFTER_S + 200) * 1000 - clock.nowMs()));
    await settleHead();
    expect((await reconciliation(wallet.id)).unswept).toEqual([
      { address: c.address, charge_id: c.id, token: 'TUSD', amount: '2.000000000000000000', reason: 'after_watch' },
    ]);

    const swept = await t.request('POST', `/api/wallet/${wallet.id}/charge/${c.uuid}/sweep`, { token: alice.token });
    expect(swept.status, swept.text).toBe(200);
    expect(swept.body.data.payments.at(-1)).toMatchObject({ tx_hash: null, amount: '2.000000000000000000', late: true });
    await waitFor(async () => ((await erc20BalanceOf(chain.rpcUrl, usd, c.address as Address)) === 0n ? true : null), {
      message: 'the tokens swept',
      timeoutMs: 30_000,
    });
    await waitFor(async () => ((await api.show(c.id)).sweeps.every((s: { status: string }) => s.status !== 'pending') ? true : null), {
      message: 'every sweep final',
    });
    await waitFor(async () => ((await events(t, 'charge.delayed')).some((e) => e.charge_id === c.id) ? true : null), {
      message: 'charge.delayed',
    });
    await settleHead();
    const after = await reconciliation(wallet.id);
    expect([after.ok, after.unswept]).toEqual([true, []]);
    expect((await events(t, 'charge.delayed')).filter((e) => e.charge_id === c.id)).toHaveLength(1);
  });

  it('housekeeping’s daily run records and sweeps it', async () => {
    const { wallet, c } = await paidThenLate('Daily');
    expect((await reconciliation(wallet.id)).unswept).toEqual([
      expect.objectContaining({ charge_id: c.id, reason: 'after_watch', amount: '0.300000000000000000' }),
    ]);

    // Housekeeping's daily run: scheduled a day after the service first started, then due.
    expect(await reconcileDaily(t.ctx, t.ctx.log)).toBe(false);
    clock.advance(DAY_MS);
    expect(await reconcileDaily(t.ctx, t.ctx.log)).toBe(true);
    alice.token = (await t.request('POST', '/api/auth/login', { body: { email: alice.email, password: alice.password } })).body.data.token; // a day later
    const api = chargeApi(t, wallet.id, alice.token);
    const warned = t.logs.filter((l) => l.includes('"reconciliation: funds left unswept"')).map((l) => JSON.parse(l));
    expect(warned).toContainEqual(
      expect.objectContaining({ wallet_id: wallet.id, charge_id: c.id, reason: 'after_watch', amount: '0.300000000000000000' }),
    );
    await api.until(c.id, (x) => x.sweeps.length === 2 && x.sweeps[1].status === 'confirmed', 'the late money swept by the daily run');
    expect(await balanceOf(chain, c.address)).toBe(0n);
    await waitFor(async () => (await events(t, 'charge.delayed')).some((e) => e.charge_id === c.id), { message: 'charge.delayed' });
    await settleHead();
    const after = await reconciliation(wallet.id);
    expect([after.ok, after.unswept]).toEqual([true, []]);
    expect((await events(t, 'charge.delayed')).filter((e) => e.charge_id === c.id)).toHaveLength(1);
  });
});
