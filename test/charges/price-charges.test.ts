/**
 * Price charges (docs/prices.md), through HTTP against a real anvil: a charge priced in USD,
 * quoted in two tokens at rates locked at creation, paid part in each: every payment counts at
 * its quote (`paid_fraction`), the charge is paid when the parts reach 1, both tokens are swept
 * and the books reconcile. Quotes are rounded up so that each covers the price; a token asked
 * for without a fresh rate refuses the charge (503 with Retry-After); the body's errors name
 * their fields.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseEther, type Address, type Hex } from 'viem';
import { startTestApp, type TestApp, type TestUser } from '../helpers/app.js';
import { startTestChain, type TestChain } from '../helpers/chain.js';
import { deployErc20, erc20BalanceOf, mintErc20 } from '../helpers/erc20.js';
import { waitFor } from '../helpers/wait.js';
import { waitForCursor } from '../helpers/transfers.js';
import { RateService } from '../../src/modules/rates/rates.service.js';
import { chargeApi, events, pay } from './support.js';

let chain: TestChain;
let t: TestApp;
let alice: TestUser;
let networkId: number;
let wallet: { id: number; address: Address };
let api: ReturnType<typeof chargeApi>;

beforeAll(async () => {
  chain = await startTestChain();
  t = await startTestApp({ env: { CHARGES_POLL_MS: '100', WATCHER_POLL_MS: '100' } });
  networkId = await chain.register(t);
  alice = await t.createUser();
  t.startWorkers();
  await waitForCursor(t, networkId);
  wallet = (await t.request('POST', '/api/wallet/create', { token: alice.token, body: { name: 'Shop', network_id: networkId } })).body.data;
  await pay(chain.rpcUrl, wallet.address, parseEther('1')); // gas for the sweeps
  const tusd = await deployErc20(chain.rpcUrl, { name: 'Test USD', symbol: 'TUSD', decimals: 6 });
  expect((await t.request('POST', `/api/wallet/${wallet.id}/token/add`, { token: alice.token, body: { contract: tusd } })).status).toBe(
    200,
  );
  const rates = new RateService(t.ctx);
  await rates.setManual({ symbol: 'ETH', currency: 'USD', value: '3000', networkId });
  await rates.setManual({ symbol: 'TUSD', currency: 'USD', value: '1', networkId });
  await rates.setManual({ symbol: 'ETH', currency: 'GBP', value: '3', networkId });
  await rates.setManual({ symbol: 'TUSD', currency: 'GBP', value: '0.3', networkId });
  api = chargeApi(t, wallet.id, alice.token);
  (wallet as { tusd?: Address }).tusd = tusd;
}, 60_000);

afterAll(async () => {
  await t?.close();
  await chain?.stop();
});

const create = (body: Record<string, unknown>) => t.request('POST', `/api/wallet/${wallet.id}/charge/create`, { token: alice.token, body });

describe('price charges', () => {
  it('quoted in two tokens, paid part in each: paid when the parts reach the price, both swept, the books reconcile', async () => {
    const tusd = (wallet as { tusd?: Address }).tusd!;
    const c = await api.create({ price: { amount: '30', currency: 'USD' }, tokens: ['TUSD', 'ETH'], expires: 600 });
    expect(c).toMatchObject({
      price: { amount: '30.00', currency: 'USD' },
      token: 'TUSD',
      amount: '30.000000000000000000',
      paid_amount: '0.000000000000000000',
      paid_fraction: '0.000000000000000000',
      status: 'pending',
    });
    expect(c.quotes).toMatchObject([
      { token: 'TUSD', amount: '30.000000000000000000', rate: '1.000000000000000000', rate_source: 'manual' },
      { token: 'ETH', amount: '0.010000000000000000', rate: '3000.000000000000000000', rate_source: 'manual' },
    ]);

    // 12 TUSD of 30 is 0.4 of the price; 0.006 ETH of 0.01 is the other 0.6.
    await mintErc20(chain.rpcUrl, tusd, c.address, 12_000_000n);
    const part = await api.until(c.id, (x) => x.paid_fraction === '0.400000000000000000', 'the TUSD part counted', 20_000);
    expect(part).toMatchObject({ status: 'pending', paid_amount: '12.000000000000000000' });
    await pay(chain.rpcUrl, c.address, parseEther('0.006'));
    const paid = await api.until(c.id, (x) => x.status === 'paid', 'paid', 20_000);
    expect(paid).toMatchObject({ paid_fraction: '1.000000000000000000', paid_amount: '30.000000000000000000' });
    expect(paid.payments.map((p: { token: string; amount: string }) => [p.token, p.amount])).toEqual([
      ['TUSD', '12.000000000000000000'],
      ['ETH', '0.006000000000000000'],
    ]);
    expect((await events(t, 'charge.paid')).filter((e) => e.charge_id === c.id)).toHaveLength(1);

    const swept = await api.until(
      c.id,
      (x) =>
        ['TUSD', 'ETH'].every((s) => x.sweeps.some((w: { token: string; status: string }) => w.token === s && w.status === 'confirmed')),
      'both tokens swept',
      30_000,
    );
    expect(swept.sweeps.find((w: { token: string }) => w.token === 'TUSD').amount).toBe('12.000000000000000000');
    const books = await waitFor(
      async () => {
        const r = await t.request('GET', `/api/wallet/${wallet.id}/reconciliation`, { token: alice.token });
        return r.status === 200 && r.body.data.ok === true ? r.body.data : null;
      },
      { message: 'the reconciliation ok', timeoutMs: 20_000 },
    );
    expect(books.ok).toBe(true);
  }, 90_000);

  it('a reorg removing the ETH part reopens the charge at the TUSD part; paid again, it settles and sweeps each token once', async () => {
    const tusd = (wallet as { tusd?: Address }).tusd!;
    const mainTusd = await erc20BalanceOf(chain.rpcUrl, tusd, wallet.address);
    const c = await api.create({ price: { amount: '30', currency: 'USD' }, tokens: ['TUSD', 'ETH'], expires: 600 });
    await mintErc20(chain.rpcUrl, tusd, c.address, 12_000_000n);
    await api.until(c.id, (x) => x.paid_fraction === '0.400000000000000000', 'the TUSD part counted', 20_000);

    // The ETH part is mined, counted and the charge paid; then a reorg deeper than the
    // confirmations removes its block (and whatever was mined after it, sweeps included).
    const snapshot = await chain.rpc<Hex>('evm_snapshot');
    const base = await chain.blockNumber();
    await pay(chain.rpcUrl, c.address, parseEther('0.006'));
    await api.until(c.id, (x) => x.status === 'paid', 'paid on the old chain', 20_000);
    const top = await chain.blockNumber();
    expect(await chain.rpc('evm_revert', [snapshot])).toBe(true);
    await chain.mine(top - base + 2);
    const reopened = await api.until(c.id, (x) => x.status === 'pending', 'reopened on the new chain', 30_000);
    expect(reopened).toMatchObject({ paid_fraction: '0.400000000000000000', paid_amount: '12.000000000000000000' });
    expect(reopened.payments.map((p: { token: string; amount: string }) => [p.token, p.amount])).toEqual([
      ['TUSD', '12.000000000000000000'],
    ]);
    expect((await events(t, 'charge.reopened')).filter((e) => e.charge_id === c.id)).toHaveLength(1);

    // Paid again in ETH on the new chain: settled once more, each token swept once, books ok.
    await pay(chain.rpcUrl, c.address, parseEther('0.006'));
    const paid = await api.until(c.id, (x) => x.status === 'paid', 'paid on the new chain', 30_000);
    expect(paid).toMatchObject({ paid_fraction: '1.000000000000000000', paid_amount: '30.000000000000000000' });
    expect(paid.payments.map((p: { token: string; amount: string }) => [p.token, p.amount])).toEqual([
      ['TUSD', '12.000000000000000000'],
      ['ETH', '0.006000000000000000'],
    ]);
    expect((await events(t, 'charge.paid')).filter((e) => e.charge_id === c.id)).toHaveLength(2);
    await waitFor(
      async () =>
        (await erc20BalanceOf(chain.rpcUrl, tusd, c.address)) === 0n &&
        (await chain.rpc<Hex>('eth_getBalance', [c.address, 'latest'])) === '0x0',
      {
        message: 'both tokens swept off the deposit address',
        timeoutMs: 45_000,
      },
    );
    expect(await erc20BalanceOf(chain.rpcUrl, tusd, wallet.address)).toBe(mainTusd + 12_000_000n);
    const books = await waitFor(
      async () => {
        const r = await t.request('GET', `/api/wallet/${wallet.id}/reconciliation`, { token: alice.token });
        return r.status === 200 && r.body.data.ok === true ? r.body.data : null;
      },
      { message: 'the reconciliation ok', timeoutMs: 30_000 },
    );
    expect(books.ok).toBe(true);
  }, 150_000);

  it('rounds each quote up to the token’s decimals, so that it always covers the price', async () => {
    const c = await api.create({ price: { amount: '10.00', currency: 'GBP' }, tokens: ['ETH', 'TUSD'] });
    // 10 / 3 ETH and 10 / 0.3 TUSD, rounded up in the last place.
    expect(c.quotes.map((q: { token: string; amount: string }) => [q.token, q.amount])).toEqual([
      ['ETH', '3.333333333333333334'],
      ['TUSD', '33.333334000000000000'],
    ]);
    expect(c).toMatchObject({ token: 'ETH', amount: '3.333333333333333334', price: { amount: '10.00', currency: 'GBP' } });
    // Without `tokens`: every active token with a rate, the native coin first.
    const all = await api.create({ price: { amount: '0.01', currency: 'USD' } });
    expect(all.quotes.map((q: { token: string; amount: string }) => [q.token, q.amount])).toEqual([
      ['ETH', '0.000003333333333334'],
      ['TUSD', '0.010000000000000000'],
    ]);
  });

  it('refuses a token without a fresh rate (503, Retry-After) and names each wrong field (422)', async () => {
    const none = await create({ price: { amount: '5', currency: 'EUR' }, tokens: ['TUSD'] });
    expect(none.status).toBe(503);
    expect(none.body.message).toBe('No fresh rate for TUSD/EUR');
    expect(none.headers.get('retry-after')).toBe('60');
    expect((await create({ price: { amount: '5', currency: 'EUR' } })).body.message).toBe('No fresh rate for ETH/EUR');

    const cases: Array<[Record<string, unknown>, string, string]> = [
      [
        { price: { amount: '5', currency: 'USD' }, amount: '1', token: 'ETH' },
        'price',
        'The price field cannot be given with amount or token.',
      ],
      [{ price: { amount: '1.234', currency: 'USD' } }, 'price.amount', 'The price.amount field must not have more than 2 decimal places.'],
      [{ price: { amount: '0', currency: 'USD' } }, 'price.amount', 'The price.amount field must be greater than 0.'],
      [{ price: { amount: 'ten', currency: 'USD' } }, 'price.amount', 'The price.amount field must be a number.'],
      [{ price: { amount: '5', currency: 'JPY' } }, 'price.currency', 'The selected price.currency is invalid (one of USD, EUR, GBP).'],
      [{ price: { amount: '5', currency: 'USD' }, tokens: ['ETH', 'NOPE'] }, 'tokens.1', 'The selected tokens.1 is invalid.'],
      [{ price: { amount: '5', currency: 'USD' }, tokens: [] }, 'tokens', 'The tokens field must have at least 1 item.'],
      [{ amount: '1', token: 'ETH', tokens: ['ETH'] }, 'tokens', 'The tokens field is only allowed with price.'],
    ];
    for (const [body, field, message] of cases) {
      const r = await create(body);
      expect(r.status, JSON.stringify(body)).toBe(422);
      expect(r.body.data[field], JSON.stringify(body)).toEqual([message]);
    }
    const missing = await create({ expires: 600 });
    expect(missing.status).toBe(422);
    expect(missing.body.data).toMatchObject({ amount: ['The amount field is required.'], token: ['The token field is required.'] });
  });
});
