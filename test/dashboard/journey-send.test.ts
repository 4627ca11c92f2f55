/**
 * A merchant's first steps in the dashboard, in Chromium at 390 px and at 1280 px: `New wallet`
 * (a name and a network from the service's list) opens the new wallet; `Fund from devnet` funds
 * it; `Send` with a recipient whose EIP-55 checksum is wrong says so next to the field (and sends
 * nothing), an amount with too many decimal places gets the API's message in the form's words,
 * and a good transfer is followed until `confirmed`, its from and to shown; `Add token` adds an
 * ERC-20 by its contract. Each step is checked
 * through the API; axe-core on each page state.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { getAddress } from 'viem';
import { RECIPIENT } from '../helpers/transfers.js';
import { deployErc20 } from '../helpers/erc20.js';
import { accessible, expectNoTroubles, fieldError, shot, startJourney, VIEWPORTS, type Journey } from './journey.js';

/** RECIPIENT with the case of its first letter flipped: a typo the checksum catches. */
function badChecksum(address: string): string {
  const i = [...address].findIndex((c, n) => n > 1 && /[a-fA-F]/.test(c));
  const c = address[i]!;
  return address.slice(0, i) + (c === c.toUpperCase() ? c.toLowerCase() : c.toUpperCase()) + address.slice(i + 1);
}

describe('journey: new wallet, fund, send', () => {
  let j: Journey;
  let token: string;

  beforeAll(async () => {
    j = await startJourney();
    token = await deployErc20(j.chain.rpcUrl, { name: 'Test Dollar', symbol: 'TUSD', decimals: 6 });
  }, 120_000);

  afterAll(async () => {
    await j?.close();
  });

  for (const [size, viewport] of VIEWPORTS) {
    it(`${size}: creates a wallet, funds it and sends from it (checked through the API)`, async () => {
      const { context, page } = await j.signedIn(viewport);
      const name = `Till ${size}`;
      // New wallet: a name and the network, from GET /api/networks.
      const open = page.getByRole('button', { name: 'New wallet' });
      // Open from the start while there is none; else opened by its button, which puts the focus in it.
      if ((await open.count()) > 0) {
        await open.click();
        await expect.poll(() => page.evaluate(() => document.activeElement?.id)).toBe('new-wallet-name');
      }
      await page.getByRole('button', { name: 'Create wallet' }).click();
      expect(await fieldError(page, 'new-wallet-name')).toBe('Wallet name is required.');
      await page.getByLabel('Wallet name').fill(name);
      expect(await page.getByLabel('Network').locator('option').allTextContents()).toEqual(['Local devnet (chain 31337, ETH)']);
      expect(await page.getByLabel('Network').inputValue()).toBe(String(j.networkId));
      await accessible(page, 'new wallet form');
      await shot(page, `new-wallet-${size}`);
      await page.getByRole('button', { name: 'Create wallet' }).click();
      await page.getByRole('heading', { name, level: 1 }).waitFor();
      const wallet = (await j.api('GET', '/api/wallets')).body.data.find((w: any) => w.name === name);
      expect(page.url()).toContain(`#/wallet/${wallet.id}`);
      expect((await j.api('GET', `/api/wallet/${wallet.id}`)).body.data.network.id).toBe(j.networkId);

      await page.getByLabel('ETH from the local devnet').fill('2');
      await page.getByRole('button', { name: 'Fund from devnet' }).click();
      await page.getByRole('status').filter({ hasText: 'Funded with 2 ETH from the devnet.' }).waitFor();
      await expect
        .poll(async () => (await j.api('GET', `/api/wallet/${wallet.id}/balance`)).body.data.balance)
        .toBe('2.000000000000000000');

      // A recipient with a wrong checksum: said next to the field, focused; nothing sent.
      const bad = badChecksum(RECIPIENT);
      await page.getByLabel('Amount', { exact: true }).fill('0.1');
      await page.getByLabel('Recipient address').fill(bad);
      await page.getByRole('button', { name: 'Send', exact: true }).click();
      expect(await fieldError(page, 'send-address')).toBe(
        'Recipient address has a wrong checksum: the case of its letters does not match (a typo?). Copy the address again from its source.',
      );
      await accessible(page, 'send with a checksum error');
      await shot(page, `send-checksum-${size}`, page.locator('section[aria-labelledby="send-title"]'));
      expect((await j.api('GET', `/api/wallet/${wallet.id}/transaction`)).body.data.filter((x: any) => x.type === 'transfer')).toEqual([]);
      // The API refuses it too, for the same address.
      const refused = await j.api('POST', `/api/wallet/${wallet.id}/transaction/create`, { amount: '0.1', token: 'ETH', address: bad });
      expect(refused.status).toBe(422);

      // The API's message about the amount, in the form's words, next to the amount.
      await page.getByLabel('Recipient address').fill(RECIPIENT);
      await page.getByLabel('Amount', { exact: true }).fill('0.0000000000000000001');
      await page.getByRole('button', { name: 'Send', exact: true }).click();
      expect(await fieldError(page, 'send-amount')).toBe('Amount must not have more than 18 decimal places.');
      expect(await page.locator('#send-address-error').count()).toBe(0);

      // More than the wallet holds: the API's refusal told next to the amount.
      await page.getByLabel('Amount', { exact: true }).fill('5');
      await page.getByRole('button', { name: 'Send', exact: true }).click();
      expect(await fieldError(page, 'send-amount')).toBe('Amount is more than the wallet holds, with the network fee.');
      await accessible(page, 'send over the balance');

      await page.getByLabel('Amount', { exact: true }).fill('0.25');
      await page.getByRole('button', { name: 'Send', exact: true }).click();
      const transfer = page.locator('[data-transfer]');
      await transfer.locator('.badge', { hasText: 'confirmed' }).waitFor({ timeout: 20_000 });
      const id = Number(await transfer.getAttribute('data-transfer'));
      const api = (await j.api('GET', `/api/wallet/${wallet.id}/transaction/show/${id}`)).body.data;
      expect([api.status, api.amount, api.from, api.to]).toEqual([
        'confirmed',
        '0.250000000000000000',
        getAddress(wallet.address),
        RECIPIENT,
      ]);
      expect(await transfer.locator('[data-from]').textContent()).toBe(api.from);
      expect(await transfer.locator('[data-to]').textContent()).toBe(RECIPIENT);
      expect(await transfer.locator('.amount').textContent()).toBe('0.25 ETH');
      expect(await transfer.locator('[data-hash]').getAttribute('data-hash')).toBe(api.tx_hash);
      await transfer.scrollIntoViewIfNeeded();
      await accessible(page, 'send confirmed');
      await shot(page, `send-confirmed-${size}`, page.locator('section[aria-labelledby="send-title"]'));

      // Add token: a contract address with a wrong checksum gets the same words.
      await page.getByLabel('Token contract address').fill(bad);
      await page.getByRole('button', { name: 'Add token' }).click();
      expect(await fieldError(page, 'add-token-contract')).toMatch(/^Token contract address has a wrong checksum/);
      await accessible(page, 'add token with a checksum error');
      // Added by its contract (in lower case: no checksum to match), its symbol and decimals read from the chain.
      await page.getByLabel('Token contract address').fill(token.toLowerCase());
      await page.getByRole('button', { name: 'Add token' }).click();
      await page.getByRole('status').filter({ hasText: 'TUSD (Test Dollar, 6 decimals) added.' }).waitFor();
      const tokens = (await j.api('GET', `/api/wallet/${wallet.id}/tokens`)).body.data;
      expect(tokens.map((x: any) => [x.symbol, x.decimals, x.contract])).toContainEqual(['TUSD', 6, getAddress(token)]);
      await page.locator('li[data-token="TUSD"]').waitFor();
      await expect.poll(() => page.getByLabel('Token', { exact: true }).locator('option').allTextContents()).toContain('TUSD (balance 0)');
      await accessible(page, 'token added');
      await shot(page, `tokens-${size}`, page.locator('section[aria-labelledby="tokens-title"]'));
      await context.close();
    }, 90_000);
  }

  it('made no request to another host, and none failed but the 422s it caused', () => {
    // Once a viewport: the amount with 19 decimal places (422), the amount over the balance (400).
    const refused = ['422 (Unprocessable Entity)', '400 (Bad Request)'];
    expectNoTroubles(j, [...refused, ...refused]);
  });
});
