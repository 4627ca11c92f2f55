/**
 * A charge made from the dashboard and paid, in Chromium at 390 px and at 1280 px: `New charge`
 * (a price with 3 decimal places gets the API's message next to the price field, in the form's
 * words), then an amount of ETH with an expiry of 15 minutes; the charge's page shows its checkout
 * link (opened, and copied with `Copy link`) and its expiry; paid on the chain to the charge's
 * address, the charge shows paid. Each step is checked through the API; axe-core on each page
 * state.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseEther } from 'viem';
import { sendFromOutsider } from '../helpers/transfers.js';
import { accessible, expectNoTroubles, fieldError, shot, startJourney, VIEWPORTS, type Journey } from './journey.js';

describe('journey: a charge from the dashboard, paid', () => {
  let j: Journey;
  let wallet: { id: number; name: string };

  beforeAll(async () => {
    j = await startJourney();
    wallet = (await j.api('POST', '/api/wallet/create', { name: 'Shop', network_id: j.networkId })).body.data;
  }, 90_000);

  afterAll(async () => {
    await j?.close();
  });

  for (const [size, viewport] of VIEWPORTS) {
    it(`${size}: creates a charge, opens and copies its checkout link, and sees it paid (checked through the API)`, async () => {
      const { context, page } = await j.signedIn(viewport, ['clipboard-read', 'clipboard-write']);
      await page.getByRole('link', { name: wallet.name }).click();
      await page.getByRole('button', { name: 'New charge' }).click();
      const form = page.getByRole('form', { name: 'New charge' });
      await expect.poll(() => page.evaluate(() => document.activeElement?.id)).toBe('new-charge-amount');
      const before = (await j.api('GET', `/api/wallet/${wallet.id}/charge`)).body.data.length;

      // A price with 3 decimal places: the API's 422 on price.amount, told next to Price.
      await form.getByLabel('A price in a currency').check();
      await form.getByLabel('Price', { exact: true }).fill('12.345');
      await form.getByLabel('Currency', { exact: true }).selectOption('EUR');
      await form.getByRole('button', { name: 'Create charge' }).click();
      expect(await fieldError(page, 'new-charge-price')).toBe('Price must not have more than 2 decimal places.');
      await accessible(page, 'new charge with an error');
      await shot(page, `charge-error-${size}`, form);

      await form.getByLabel('An amount of a token').check();
      await form.getByLabel('Amount', { exact: true }).fill('0.05');
      expect(await form.getByLabel('Token', { exact: true }).inputValue()).toBe('ETH');
      await form.getByLabel('Expires after').selectOption({ label: '15 minutes' });
      await form.getByRole('button', { name: 'Create charge' }).click();
      await page.getByRole('heading', { name: /^Charge \d+$/ }).waitFor();
      const listed = (await j.api('GET', `/api/wallet/${wallet.id}/charge`)).body.data;
      expect(listed.length).toBe(before + 1);
      const charge = (await j.api('GET', `/api/wallet/${wallet.id}/charge/show/${Math.max(...listed.map((c: any) => c.id))}`)).body.data;
      expect([charge.amount, charge.token, charge.expires, charge.status]).toEqual(['0.050000000000000000', 'ETH', 900, 'pending']);
      expect(page.url()).toContain(`#/wallet/${wallet.id}/charge/${charge.id}`);

      // Its checkout link and its expiry.
      const link = page.getByRole('link', { name: charge.hosted_url });
      expect(await link.getAttribute('href')).toBe(charge.hosted_url);
      expect(await page.locator('[data-expires]').getAttribute('data-expires')).toBe(charge.expires_at);
      expect(await page.locator('[data-expires]').textContent()).toMatch(/\(in 1[45] minutes\)$/);
      expect(await page.locator('[data-expires] time').getAttribute('datetime')).toBe(`${charge.expires_at.replace(' ', 'T')}Z`);
      await page.getByRole('button', { name: 'Copy link' }).click();
      await page.getByRole('status').filter({ hasText: 'Link copied.' }).waitFor();
      expect(await page.evaluate(() => navigator.clipboard.readText())).toBe(charge.hosted_url);
      await accessible(page, 'new charge');
      await shot(page, `charge-created-${size}`, page.locator('section[aria-labelledby="charge-title"]'));

      // The payer's page, from the link; paid on the chain to the charge's address.
      const [checkout] = await Promise.all([page.waitForEvent('popup'), link.click()]);
      await checkout.waitForLoadState();
      expect(checkout.url()).toBe(charge.hosted_url);
      await checkout.getByText(charge.address).first().waitFor();
      await sendFromOutsider(j.chain.rpcUrl, charge.address, parseEther('0.05'));
      await checkout.getByText('0.05 ETH received.').waitFor({ timeout: 20_000 });
      await checkout.close();
      await expect
        .poll(async () => (await j.api('GET', `/api/wallet/${wallet.id}/charge/show/${charge.id}`)).body.data.status, { timeout: 20_000 })
        .toBe('paid');
      // The charge's page follows its events: paid, without a reload.
      const badge = page.locator('section[aria-labelledby="charge-title"] .badge').first();
      await expect.poll(() => badge.textContent(), { timeout: 10_000 }).toBe('paid');
      const paid = (await j.api('GET', `/api/wallet/${wallet.id}/charge/show/${charge.id}`)).body.data;
      expect(paid.paid_amount).toBe('0.050000000000000000');
      await page.locator(`li[data-payment="${paid.payments[0].tx_hash}"]`).waitFor();
      await accessible(page, 'charge paid');
      await shot(page, `charge-paid-${size}`, page.locator('section[aria-labelledby="charge-title"]'));
      await context.close();
    }, 90_000);
  }

  it('made no request to another host, and none failed but the 422s it caused', () => {
    expectNoTroubles(j, ['422 (Unprocessable Entity)', '422 (Unprocessable Entity)']); // the price with 3 decimal places, once a viewport
  });
});
