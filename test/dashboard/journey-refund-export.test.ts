/**
 * A refund and the books from the dashboard, in Chromium at 390 px and at 1280 px: a charge paid
 * (from the devnet) is refunded from its page after the confirm dialog, whose button names the
 * amount and the address (Cancel sends nothing); then each list's `Export CSV` saves exactly the
 * file the API sends. Each step is checked through the API; axe-core on each page state.
 */
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseEther } from 'viem';
import { RECIPIENT } from '../helpers/transfers.js';
import { waitFor } from '../helpers/wait.js';
import { accessible, expectNoTroubles, shot, startJourney, VIEWPORTS, type Journey } from './journey.js';

describe('journey: a refund and the books from the dashboard', () => {
  let j: Journey;
  let wallet: { id: number; name: string; address: string };

  beforeAll(async () => {
    j = await startJourney();
    wallet = (await j.api('POST', '/api/wallet/create', { name: 'Shop', network_id: j.networkId })).body.data;
    await j.chain.setBalance(wallet.address, parseEther('1'));
  }, 90_000);

  afterAll(async () => {
    await j?.close();
  });

  /** A charge of `amount` ETH, paid from the devnet and swept. */
  async function paidCharge(amount: string): Promise<{ id: number; uuid: string }> {
    const charge = (await j.api('POST', `/api/wallet/${wallet.id}/charge/create`, { amount, token: 'ETH', expires: 900 })).body.data;
    expect((await j.t.request('POST', `/api/pay/${charge.uuid}/devnet`)).status).toBe(200);
    await waitFor(
      async () => {
        const c = (await j.api('GET', `/api/wallet/${wallet.id}/charge/show/${charge.id}`)).body.data;
        return c.status === 'paid' && c.sweeps.length > 0 && c.sweeps.every((x: { status: string }) => x.status === 'confirmed');
      },
      { message: 'the charge paid and swept', timeoutMs: 30_000 },
    );
    return charge;
  }

  for (const [size, viewport] of VIEWPORTS) {
    it(`${size}: refunds a paid charge after asking, then downloads each list as CSV (checked through the API)`, async () => {
      const charge = await paidCharge('0.2');
      const { context, page } = await j.signedIn(viewport);
      await page.evaluate((hash) => (window.location.hash = hash), `#/wallet/${wallet.id}/charge/${charge.id}`);
      await page.getByRole('heading', { name: `Charge ${charge.id}` }).waitFor();
      await page.getByLabel(/Refund amount/).fill('0.05');
      await page.getByLabel(/Refund address/).fill(RECIPIENT);

      // Cancel in the dialog sends nothing.
      await page.getByRole('button', { name: 'Refund', exact: true }).click();
      const confirm = page
        .getByRole('dialog')
        .getByRole('button', { name: `Refund 0.05 ETH to ${RECIPIENT.slice(0, 10)}…${RECIPIENT.slice(-8)}` });
      await confirm.waitFor();
      await accessible(page, 'refund dialog');
      await shot(page, `refund-dialog-${size}`);
      await page.getByRole('dialog').getByRole('button', { name: 'Cancel' }).click();
      expect((await j.api('GET', `/api/wallet/${wallet.id}/charge/show/${charge.id}`)).body.data.refunds).toEqual([]);

      await page.getByRole('button', { name: 'Refund', exact: true }).click();
      await confirm.click();
      await page.getByRole('status').filter({ hasText: 'Refund of 0.05 ETH sent' }).waitFor();
      await page.locator('li[data-refund]').first().waitFor();
      const refunds = (await j.api('GET', `/api/wallet/${wallet.id}/charge/show/${charge.id}`)).body.data.refunds;
      expect(refunds.map((r: { amount: string; address: string }) => [r.amount, r.address])).toEqual([['0.050000000000000000', RECIPIENT]]);
      await accessible(page, 'refunded charge');
      await shot(page, `refunded-${size}`);

      // The books: each list's Export CSV saves the file the API sends.
      await page.evaluate((hash) => (window.location.hash = hash), `#/wallet/${wallet.id}`);
      await page.locator('tr[data-charge]').first().waitFor();
      for (const [kind, heading] of [
        ['transactions', 'tx-title'],
        ['charges', 'charges-title'],
        ['payouts', 'payouts-title'],
      ] as const) {
        const button = page.locator(`section[aria-labelledby="${heading}"]`).getByRole('button', { name: 'Export CSV' });
        const [download] = await Promise.all([page.waitForEvent('download'), button.click()]);
        expect(download.suggestedFilename(), kind).toBe(`wallet-${wallet.id}-${kind}.csv`);
        const saved = readFileSync((await download.path())!, 'utf8');
        expect(saved, kind).toBe((await j.api('GET', `/api/wallet/${wallet.id}/export/${kind}.csv`)).text);
        if (kind === 'charges') expect(saved).toContain(`,${charge.uuid},`);
      }
      await accessible(page, 'wallet with its exports');
      expectNoTroubles(j, []);
      await context.close();
    }, 120_000);
  }
});
