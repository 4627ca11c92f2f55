/**
 * The service's own movements are not policed (docs/money-out.md, "The policy"):
 * with a tiny daily and per-transaction limit and `allowlist_only` on an empty list, an ERC-20
 * charge is still paid, its deposit address gets its gas top-up from the main wallet, and the
 * token is swept back; meanwhile a transfer started through the API is refused.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseEther, type Address } from 'viem';
import { ManualClock, startTestApp, type TestApp, type TestUser } from '../helpers/app.js';
import { startTestChain, type TestChain } from '../helpers/chain.js';
import { deployErc20, erc20BalanceOf, mintErc20 } from '../helpers/erc20.js';
import { waitFor } from '../helpers/wait.js';
import { chargeApi, clockToChain, pay } from '../charges/support.js';
import { RECIPIENT } from '../helpers/transfers.js';
import { policyApi, refusal } from './support.js';

const TINY = '0.000000000000000001';

describe('charges under a strict policy', () => {
  const clock = new ManualClock();
  let chain: TestChain;
  let t: TestApp;
  let user: TestUser;
  let wallet: { id: number; address: string };

  beforeAll(async () => {
    chain = await startTestChain();
    t = await startTestApp({ clock, env: { CHARGES_POLL_MS: '50', WATCHER_POLL_MS: '50' } });
    const networkId = await chain.register(t);
    user = await t.createUser();
    wallet = (await t.request('POST', '/api/wallet/create', { token: user.token, body: { name: 'Shop', network_id: networkId } })).body
      .data;
    t.startWorkers();
    await waitFor(
      () => t.store.db.selectFrom('chain_cursors').select('block_number').where('network_id', '=', networkId).executeTakeFirst(),
      { message: 'watcher cursor' },
    );
  });
  afterAll(async () => {
    await t?.close();
    await chain?.stop();
  });

  it('sweeps and gas top-ups go through a tiny daily limit and allowlist_only; an API transfer does not', async () => {
    const eur = await deployErc20(chain.rpcUrl, { name: 'Euro Coin', symbol: 'EURC', decimals: 6 });
    expect((await t.request('POST', `/api/wallet/${wallet.id}/token/add`, { token: user.token, body: { contract: eur } })).status).toBe(
      200,
    );
    await chain.setBalance(wallet.address, parseEther('1'));
    const policy = policyApi(t, wallet.id, user.token);
    const set = await policy.setPolicy({
      per_transaction: { ETH: TINY, EURC: '0.000001' },
      daily: { ETH: TINY, EURC: '0.000001' },
      allowlist_only: true,
    });
    expect(set.status, set.text).toBe(200);
    const api = chargeApi(t, wallet.id, user.token);

    // A native charge: paid and swept to the main wallet.
    await clockToChain(clock, chain);
    const native = await api.create({ amount: '0.05', token: 'ETH', expires: 600 });
    await pay(chain.rpcUrl, native.address, parseEther('0.05'));
    await api.until(native.id, (x) => x.status === 'paid' && x.sweeps[0]?.status === 'confirmed', 'ETH charge paid and swept', 20_000);

    // A token charge: its sweep needs gas, sent from the main wallet (a top-up, type transfer).
    await clockToChain(clock, chain);
    const c = await api.create({ amount: '3', token: 'EURC', expires: 600 });
    await mintErc20(chain.rpcUrl, eur, c.address, 3_000_000n);
    const done = await api.until(
      c.id,
      (x) => x.status === 'paid' && x.sweeps.some((w: { token: string; status: string }) => w.token === 'EURC' && w.status === 'confirmed'),
      'EURC paid and swept',
      30_000,
    );
    expect(done.payments).toHaveLength(1);
    expect(await erc20BalanceOf(chain.rpcUrl, eur, c.address as Address)).toBe(0n);
    expect(await erc20BalanceOf(chain.rpcUrl, eur, wallet.address as Address)).toBe(3_000_000n);
    const topUps = await t.store.db
      .selectFrom('transactions')
      .select(['type', 'status'])
      .where('wallet_id', '=', wallet.id)
      .where('to_address', '=', c.address)
      .execute();
    expect(topUps.map((r) => r.type)).toEqual(['transfer']);
    expect(topUps[0]!.status).not.toBe('failed');

    // The same policy refuses what the API starts.
    const refused = await t.request('POST', `/api/wallet/${wallet.id}/transaction/create`, {
      token: user.token,
      body: { amount: TINY, token: 'ETH', address: RECIPIENT },
    });
    expect([refused.status, refused.body]).toEqual([400, refusal('Policy: over the daily limit')]);
  });
});
