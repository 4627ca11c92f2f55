/**
 * The checkout page's payer button on the local devnet (README "Start"): a pending native charge
 * on the devnet shows `Pay from the devnet`; `POST /api/pay/{uuid}/devnet` pays what it asks from
 * anvil's dev account in a real transfer, and the charge turns paid with that one payment. A
 * price charge with a native quote is paid the rest of its price in the native coin. A token
 * charge (or a price charge quoted only in tokens), a paid charge, or a charge on any other
 * network gets no button and a 400, with nothing sent.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock, startTestApp, type TestApp, type TestUser } from '../helpers/app.js';
import { startTestChain, type TestChain } from '../helpers/chain.js';
import { upsertNetwork } from '../../src/modules/networks/networks.repository.js';
import { balanceOf, chargeApi, clockToChain } from '../charges/support.js';
import { deployErc20, mintErc20 } from '../helpers/erc20.js';
import { RateService } from '../../src/modules/rates/rates.service.js';

const clock = new ManualClock();
let chain: TestChain;
let t: TestApp;
let user: TestUser;
let wallet: { id: number; address: string };
let networkId: number;

beforeAll(async () => {
  chain = await startTestChain();
  t = await startTestApp({ clock, env: { CHARGES_POLL_MS: '50', WATCHER_POLL_MS: '50' }, workers: true });
  networkId = await chain.register(t);
  user = await t.createUser();
  wallet = (await t.request('POST', '/api/wallet/create', { token: user.token, body: { name: 'Shop', network_id: networkId } })).body.data;
});

afterAll(async () => {
  await t?.close();
  await chain?.stop();
});

const BUTTON = 'id="devnet-pay"';
const refused = { status: 'error', message: 'Only a pending native charge on the local devnet can be paid from the devnet', data: null };

describe('the devnet payer button', () => {
  it('pays a pending native devnet charge exactly, once; then it is paid and the button is gone', async () => {
    const api = chargeApi(t, wallet.id, user.token);
    await clockToChain(clock, chain);
    const c = await api.create({ amount: '0.42', token: 'ETH', expires: 900 });
    expect((await t.request('GET', `/pay/${c.uuid}`)).text).toContain(BUTTON);
    const res = await t.request('POST', `/api/pay/${c.uuid}/devnet`);
    expect([res.status, res.body.message], res.text).toEqual([200, 'Paid from the devnet']);
    const paid = await api.until(c.id, (x) => x.status === 'paid', 'charge paid');
    expect(paid.payments.map((p: any) => [p.tx_hash, p.amount])).toEqual([[res.body.data.tx_hash, '0.420000000000000000']]);
    expect((await t.request('GET', `/pay/${c.uuid}`)).text).not.toContain(BUTTON);
    const again = await t.request('POST', `/api/pay/${c.uuid}/devnet`);
    expect([again.status, again.body]).toEqual([400, refused]);
  });

  it('is refused for a token charge and on another network, with nothing sent', async () => {
    const token = await deployErc20(chain.rpcUrl, { name: 'Dev USD', symbol: 'DUSD', decimals: 6 });
    expect((await t.request('POST', `/api/wallet/${wallet.id}/token/add`, { token: user.token, body: { contract: token } })).status).toBe(
      200,
    );
    await clockToChain(clock, chain);
    const tc = await chargeApi(t, wallet.id, user.token).create({ amount: '5', token: 'DUSD', expires: 900 });
    expect((await t.request('GET', `/pay/${tc.uuid}`)).text).not.toContain(BUTTON);
    expect((await t.request('POST', `/api/pay/${tc.uuid}/devnet`)).body).toEqual(refused);

    const other = await upsertNetwork(
      t.store.db,
      {
        name: 'Elsewhere',
        rpc_url: chain.rpcUrl,
        chain_id: 5,
        currency_symbol: 'ETH',
        block_explorer: '',
        is_mainnet: false,
        confirmations: 1,
      },
      Date.now(),
    );
    const w = (await t.request('POST', '/api/wallet/create', { token: user.token, body: { name: 'Away', network_id: other.id } })).body
      .data;
    const oc = await chargeApi(t, w.id, user.token).create({ amount: '0.1', token: 'ETH', expires: 900 });
    expect((await t.request('GET', `/pay/${oc.uuid}`)).text).not.toContain(BUTTON);
    const res = await t.request('POST', `/api/pay/${oc.uuid}/devnet`);
    expect([res.status, res.body]).toEqual([400, refused]);
    expect(await balanceOf(chain, oc.address)).toBe(0n);
    expect((await t.request('POST', '/api/pay/00000000-0000-4000-8000-000000000000/devnet')).body.message).toBe('Charge not found');
  });
  it('pays the rest of a price charge in its native quote; a price charge quoted only in tokens gets no button', async () => {
    const token = await deployErc20(chain.rpcUrl, { name: 'Price USD', symbol: 'PUSD', decimals: 6 });
    expect((await t.request('POST', `/api/wallet/${wallet.id}/token/add`, { token: user.token, body: { contract: token } })).status).toBe(
      200,
    );
    const rates = new RateService(t.ctx);
    await clockToChain(clock, chain);
    await rates.setManual({ symbol: 'PUSD', currency: 'USD', value: '1', networkId });
    await rates.setManual({ symbol: 'ETH', currency: 'USD', value: '2000', networkId });
    const api = chargeApi(t, wallet.id, user.token);
    const c = await api.create({ price: { amount: '20', currency: 'USD' }, tokens: ['PUSD', 'ETH'], expires: 900 });
    // 5 PUSD of 20 is a quarter of the price: the button sends the other three quarters of 0.01 ETH.
    await mintErc20(chain.rpcUrl, token, c.address, 5_000_000n);
    await api.until(c.id, (x) => x.paid_fraction === '0.250000000000000000', 'the PUSD part counted');
    expect((await t.request('GET', `/pay/${c.uuid}`)).text).toContain(BUTTON);
    const res = await t.request('POST', `/api/pay/${c.uuid}/devnet`);
    expect([res.status, res.body.message], res.text).toEqual([200, 'Paid from the devnet']);
    const paid = await api.until(c.id, (x) => x.status === 'paid', 'charge paid');
    expect(paid.paid_fraction).toBe('1.000000000000000000');
    expect(paid.payments.map((p: any) => [p.token, p.amount])).toEqual([
      ['PUSD', '5.000000000000000000'],
      ['ETH', '0.007500000000000000'],
    ]);

    const tokensOnly = await api.create({ price: { amount: '20', currency: 'USD' }, tokens: ['PUSD'], expires: 900 });
    expect((await t.request('GET', `/pay/${tokensOnly.uuid}`)).text).not.toContain(BUTTON);
    expect((await t.request('POST', `/api/pay/${tokensOnly.uuid}/devnet`)).body).toEqual(refused);
    expect(await balanceOf(chain, tokensOnly.address)).toBe(0n);
  });
});
