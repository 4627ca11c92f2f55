/**
 * A permanent deposit address and a price charge in the dashboard, in Chromium at 390 px and at
 * 1280 px: `New deposit address` (a reference and a label) lists the address, checksummed, with
 * nothing received; paid 0.25 ETH on the chain, its row shows 0.25 ETH received. A price charge of
 * 10.00 USD quoted in ETH (3000 USD) and TUSD (1 USD) shows both quotes with their rates and
 * source, 0% paid; 4 TUSD paid on the chain makes it "40% paid", the payment listed in TUSD. A charge of an amount shows no
 * quotes. Each step is checked through the API; axe-core on each state; screenshots to
 * test/artifacts/dash-rest-*.png.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { getAddress, parseEther, type Address } from 'viem';
import { deployErc20, mintErc20 } from '../helpers/erc20.js';
import { sendFromOutsider } from '../helpers/transfers.js';
import { join } from 'node:path';
import { ARTIFACTS, state } from '../helpers/dashboard.js';
import { RateService } from '../../src/modules/rates/rates.service.js';
import { expectNoTroubles, fieldError, startJourney, VIEWPORTS, type Journey } from './journey.js';

describe('journey: deposit addresses and a price charge in the dashboard', () => {
  let j: Journey;
  let wallet: { id: number; name: string; address: Address };
  let tusd: Address;

  beforeAll(async () => {
    j = await startJourney();
    wallet = (await j.api('POST', '/api/wallet/create', { name: 'Shop', network_id: j.networkId })).body.data;
    await sendFromOutsider(j.chain.rpcUrl, wallet.address, parseEther('1')); // gas for the sweeps
    tusd = await deployErc20(j.chain.rpcUrl, { name: 'Test USD', symbol: 'TUSD', decimals: 6 });
    expect((await j.api('POST', `/api/wallet/${wallet.id}/token/add`, { contract: tusd })).status).toBe(200);
    const rates = new RateService(j.t.ctx);
    await rates.setManual({ symbol: 'ETH', currency: 'USD', value: '3000', networkId: j.networkId });
    await rates.setManual({ symbol: 'TUSD', currency: 'USD', value: '1', networkId: j.networkId });
  }, 90_000);

  afterAll(async () => {
    await j?.close();
  });

  for (const [size, viewport] of VIEWPORTS) {
    it(`${size}: creates a deposit address with the form and sees what it received (checked through the API)`, async () => {
      const { context, page } = await j.signedIn(viewport);
      await page.getByRole('link', { name: wallet.name }).click();
      await page.getByRole('heading', { name: 'Deposit addresses' }).waitFor();
      await page.getByRole('button', { name: 'New deposit address' }).click();
      const form = page.getByRole('form', { name: 'New deposit address' });
      await expect.poll(() => page.evaluate(() => document.activeElement?.id)).toBe('new-deposit-address-reference');

      // Without a reference: told next to it, nothing sent.
      await form.getByRole('button', { name: 'Create deposit address' }).click();
      expect(await fieldError(page, 'new-deposit-address-reference')).toBe('Reference is required.');
      await form.getByLabel('Reference').fill(`customer-${size}`);
      await form.getByLabel('Label (optional)').fill(`Customer on the ${size}`);
      await form.getByRole('button', { name: 'Create deposit address' }).click();
      await page
        .getByRole('status')
        .filter({ hasText: `created for customer-${size}` })
        .waitFor();

      const listed = (await j.api('GET', `/api/wallet/${wallet.id}/deposit-address`)).body.data;
      const made = listed.find((d: any) => d.reference === `customer-${size}`);
      expect([made.label, made.deposit_kind === 'keyless' || made.deposit_kind === 'keyed']).toEqual([`Customer on the ${size}`, true]);
      const row = page.locator(`tr[data-deposit-address="${made.id}"]`);
      expect(await row.locator('[data-recipient]').textContent()).toBe(getAddress(made.address));
      expect(await row.locator('[data-received]').textContent()).toBe('nothing yet');

      // Paid on the chain: received, in the API and in the row (followed by the wallet's events).
      await sendFromOutsider(j.chain.rpcUrl, made.address, parseEther('0.25'));
      await expect
        .poll(async () => (await j.api('GET', `/api/wallet/${wallet.id}/deposit-address/${made.id}`)).body.data.received, {
          timeout: 20_000,
        })
        .toEqual([{ token: 'ETH', amount: '0.250000000000000000' }]);
      await expect.poll(() => row.locator('[data-received]').textContent(), { timeout: 15_000 }).toBe('0.25 ETH');
      await row.scrollIntoViewIfNeeded();
      await state(page, `dash-rest-deposit-${size}`);
      const section = page.locator('section[aria-labelledby="deposit-addresses-title"]');
      await section.screenshot({ path: join(ARTIFACTS, `dash-rest-deposit-section-${size}.png`) });
      await context.close();
    }, 90_000);

    it(`${size}: a price charge's page shows its quotes and the share paid (checked through the API)`, async () => {
      const created = await j.api('POST', `/api/wallet/${wallet.id}/charge/create`, {
        price: { amount: '10.00', currency: 'USD' },
        tokens: ['ETH', 'TUSD'],
        expires: 900,
      });
      expect(created.status, created.text).toBe(200);
      const charge = created.body.data;
      expect(charge.quotes.map((q: any) => [q.token, q.amount, q.rate_source])).toEqual([
        ['ETH', '0.003333333333333334', 'manual'],
        ['TUSD', '10.000000000000000000', 'manual'],
      ]);
      const plain = (await j.api('POST', `/api/wallet/${wallet.id}/charge/create`, { amount: '0.01', token: 'ETH', expires: 900 })).body
        .data;

      const { context, page } = await j.signedIn(viewport);
      // A charge of an amount: no quotes, no share.
      await page.evaluate((h) => (window.location.hash = h), `#/wallet/${wallet.id}/charge/${plain.id}`);
      await page.getByRole('heading', { name: `Charge ${plain.id}` }).waitFor();
      expect(await page.getByRole('heading', { name: 'Quotes' }).count()).toBe(0);
      expect(await page.getByText('% paid').count()).toBe(0);

      await page.evaluate((h) => (window.location.hash = h), `#/wallet/${wallet.id}/charge/${charge.id}`);
      await page.getByRole('heading', { name: 'Quotes' }).waitFor();
      expect(await page.locator('li[data-quote="ETH"]').textContent()).toMatch(
        /^0\.003333333333333334 ETH due · 1 ETH = 3000 USD · set by hand, /,
      );
      expect(await page.locator('li[data-quote="TUSD"]').textContent()).toMatch(/^10 TUSD due · 1 TUSD = 1 USD · set by hand, /);
      expect(await page.locator('[data-paid-fraction] strong').textContent()).toBe('0% paid');

      // 4 of the 10 TUSD paid on the chain: 40% paid, in the API and on the page.
      await mintErc20(j.chain.rpcUrl, tusd, charge.address, 4_000_000n);
      await expect
        .poll(async () => (await j.api('GET', `/api/wallet/${wallet.id}/charge/show/${charge.id}`)).body.data.paid_fraction, {
          timeout: 20_000,
        })
        .toBe('0.400000000000000000');
      await expect.poll(() => page.locator('[data-paid-fraction] strong').textContent(), { timeout: 15_000 }).toBe('40% paid');
      // The payment in the token it was paid in.
      const paid = (await j.api('GET', `/api/wallet/${wallet.id}/charge/show/${charge.id}`)).body.data;
      expect(paid.payments.map((p: any) => [p.token, p.amount])).toEqual([['TUSD', '4.000000000000000000']]);
      await expect.poll(() => page.locator(`li[data-payment="${paid.payments[0].tx_hash}"] .amount`).textContent()).toBe('4 TUSD');
      await state(page, `dash-rest-quotes-${size}`);
      await page
        .locator('section[aria-labelledby="quotes-title"]')
        .screenshot({ path: join(ARTIFACTS, `dash-rest-quotes-section-${size}.png`) });
      await context.close();
    }, 90_000);
  }

  it('made no request to another host, and none failed', () => {
    expectNoTroubles(j, []);
  });
});
