/**
 * A price charge's checkout page (docs/prices.md, "Price charges"; docs/charges.md, "The page")
 * in Debian's Chromium (playwright-core, no browser download), on a real anvil chain with the
 * service's workers running and its clock in the test's hand:
 *
 * - the page shows the price and a token picker (radio buttons named by token and amount) with
 *   each quote; picking the other token shows its amount, QR code and wallet link (its own EIP-681
 *   URI), and the choice stays when the page updates itself;
 * - paid part in one token, the page says what share of the price arrived ("40% paid") and asks
 *   the rest in each token; paid the rest in the other, it turns paid without a reload and says
 *   what arrived in each token;
 * - partly paid and expired by the clock, it says what share arrived and what is missing of the
 *   price, takes no payment, then shows the charge underpaid once the chain decides it.
 *
 * axe-core finds no serious or critical violation on the page. Screenshots at 390 and 1280 px go
 * to test/artifacts/checkout-price/.
 */
import { mkdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chromium, type Browser, type Page } from 'playwright-core';
import { parseEther, type Address } from 'viem';
import { ManualClock, startTestApp, type TestApp, type TestUser } from '../helpers/app.js';
import { startTestChain, type TestChain } from '../helpers/chain.js';
import { deployErc20, mintErc20 } from '../helpers/erc20.js';
import { ROOT } from '../helpers/process.js';
import { watchPage } from '../helpers/browser.js';
import { chargeApi, clockToChain, pay } from '../charges/support.js';
import { RateService } from '../../src/modules/rates/rates.service.js';
import { qrDataUrl } from '../../src/modules/checkout/checkout.views.js';

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const SHOTS = join(ROOT, 'test/artifacts/checkout-price');
const PHONE = { width: 390, height: 844 };
const DESKTOP = { width: 1280, height: 800 };
const EXPLORER = 'https://explorer.example';
const AXE = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

describe('a price charge’s checkout page, in Chromium', () => {
  let chain: TestChain;
  let t: TestApp;
  let user: TestUser;
  let api: ReturnType<typeof chargeApi>;
  let tusd: Address;
  let tusdContract: string;
  let browser: Browser;
  const clock = new ManualClock();
  const foreign: string[] = [];
  const failed: string[] = [];

  beforeAll(async () => {
    mkdirSync(SHOTS, { recursive: true });
    chain = await startTestChain();
    t = await startTestApp({ clock, env: { CHARGES_POLL_MS: '100', WATCHER_POLL_MS: '100' }, workers: true });
    const networkId = await chain.register(t, { name: 'Local devnet' });
    await t.store.db.updateTable('networks').set({ block_explorer: EXPLORER }).where('id', '=', networkId).execute();
    user = await t.createUser();
    const wallet = (await t.request('POST', '/api/wallet/create', { token: user.token, body: { name: 'Shop', network_id: networkId } }))
      .body.data;
    await chain.setBalance(wallet.address, parseEther('1')); // gas for the sweeps after payment
    tusd = await deployErc20(chain.rpcUrl, { name: 'Test USD', symbol: 'TUSD', decimals: 6 });
    const added = await t.request('POST', `/api/wallet/${wallet.id}/token/add`, { token: user.token, body: { contract: tusd } });
    expect(added.status, added.text).toBe(200);
    tusdContract = (
      await t.store.db
        .selectFrom('wallet_tokens')
        .select('contract')
        .where('wallet_id', '=', wallet.id)
        .where('symbol', '=', 'TUSD')
        .executeTakeFirstOrThrow()
    ).contract;
    api = chargeApi(t, wallet.id, user.token);
    browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox', '--disable-dev-shm-usage'] });
    await clockToChain(clock, chain);
    const rates = new RateService(t.ctx);
    await rates.setManual({ symbol: 'TUSD', currency: 'USD', value: '1', networkId });
    await rates.setManual({ symbol: 'ETH', currency: 'USD', value: '2500', networkId });
  }, 90_000);
  afterAll(async () => {
    await browser?.close();
    await t?.close();
    await chain?.stop();
  });

  /** The charge's page at both widths. */
  async function open(uuid: string): Promise<{ phone: Page; desktop: Page }> {
    const pages: Page[] = [];
    for (const viewport of [PHONE, DESKTOP]) {
      const phone = viewport === PHONE;
      const context = await browser.newContext({ viewport, deviceScaleFactor: phone ? 2 : 1, isMobile: phone, hasTouch: phone });
      const page = await context.newPage();
      watchPage(context, page, t.url, { foreign, failed });
      const res = await page.goto(`${t.url}/pay/${uuid}`, { waitUntil: 'networkidle' });
      expect(res?.status()).toBe(200);
      pages.push(page);
    }
    return { phone: pages[0]!, desktop: pages[1]! };
  }

  const both = (p: { phone: Page; desktop: Page }) => [p.phone, p.desktop];
  const stateIs = (page: Page, state: string) =>
    page.waitForFunction((s) => document.getElementById('checkout')?.dataset.state === s, state, { timeout: 20_000 });

  async function shoot(pages: { phone: Page; desktop: Page }, name: string): Promise<void> {
    for (const [width, page] of [
      [PHONE.width, pages.phone],
      [DESKTOP.width, pages.desktop],
    ] as const) {
      expect(await page.evaluate(() => document.documentElement.scrollWidth), `${name} at ${width} px`).toBeLessThanOrEqual(width);
      await page.screenshot({ path: join(SHOTS, `${name}-${width}.png`), fullPage: true });
    }
  }

  const ethUri = (address: string, wei: bigint) => `ethereum:${address}@31337?value=${wei}`;
  const tusdUri = (address: string, units: bigint) => `ethereum:${tusdContract}@31337/transfer?address=${address}&uint256=${units}`;

  /** The quote shown: its hint, amount to copy, wallet link and QR code, all visible, the other quote's hidden. */
  async function shows(page: Page, n: number, o: { hint: string; amount: string; uri: string }): Promise<void> {
    const other = 1 - n;
    await page.waitForFunction((i) => document.querySelector<HTMLInputElement>(`input[name="quote"][value="${i}"]`)?.checked, n);
    expect(await page.isVisible(`#qr-${n}`)).toBe(true);
    expect(await page.isVisible(`#qr-${other}`)).toBe(false);
    expect(await page.isVisible(`#open-wallet-${other}`)).toBe(false);
    expect(await page.textContent(`.hint[data-quote="${n}"]`)).toBe(o.hint);
    expect(await page.isVisible(`.hint[data-quote="${other}"]`)).toBe(false);
    expect(await page.textContent(`#amount-copy-${n}`)).toBe(o.amount);
    expect(await page.isVisible(`#amount-copy-${n}`)).toBe(true);
    expect(await page.getAttribute(`#open-wallet-${n}`, 'href')).toBe(o.uri);
    const qr = await page.$eval(`#qr-${n}`, (img) => ({
      src: (img as HTMLImageElement).src,
      w: (img as HTMLImageElement).naturalWidth,
      shown: img.getBoundingClientRect().width,
    }));
    expect(qr.src).toBe(await qrDataUrl(o.uri)); // the QR code of that quote's URI, drawn by the server
    expect(qr.w).toBeGreaterThan(0);
    expect(qr.shown).toBeGreaterThanOrEqual(150);
  }

  it('picks a token, shows its amount, QR code and URI; paid part in each token, it turns paid without a reload', async () => {
    const c = await api.create({
      price: { amount: '25', currency: 'USD' },
      tokens: ['TUSD', 'ETH'],
      expires: 900,
      content: { title: 'Order #3001' },
    });
    expect(c.quotes.map((q: { token: string; amount: string }) => [q.token, q.amount])).toEqual([
      ['TUSD', '25.000000000000000000'],
      ['ETH', '0.010000000000000000'],
    ]);
    const pages = await open(c.uuid);
    for (const page of both(pages)) {
      expect(await page.textContent('#amount')).toBe('25.00USD');
      expect(await page.textContent('#amount-label')).toBe('Price');
      expect(await page.textContent('#status-badge')).toBe('Awaiting payment');
      const radios = page.getByRole('radio');
      expect(await radios.count()).toBe(2);
      expect(await page.getByRole('group', { name: 'Pay with' }).isVisible()).toBe(true);
      expect(await page.getByRole('radio', { name: 'TUSD 25' }).isChecked()).toBe(true);
      expect(await page.getByRole('radio', { name: 'ETH 0.01' }).isChecked()).toBe(false);
      expect(await page.textContent('#address')).toBe(c.address);
      await shows(page, 0, {
        hint: 'Send exactly 25 TUSD on Local devnet to this address.',
        amount: '25',
        uri: tusdUri(c.address, 25_000_000n),
      });
    }
    await shoot(pages, 'awaiting-tusd');

    // The payer picks ETH: its amount, QR code and link; by keyboard on the phone, by a click on the desktop.
    await pages.phone.getByRole('radio', { name: 'TUSD 25' }).focus();
    await pages.phone.keyboard.press('ArrowDown');
    await pages.desktop.locator('label.choice', { hasText: 'ETH' }).click();
    for (const page of both(pages)) {
      expect(await page.getByRole('radio', { name: 'ETH 0.01' }).isChecked()).toBe(true);
      await shows(page, 1, {
        hint: 'Send exactly 0.01 ETH on Local devnet to this address.',
        amount: '0.01',
        uri: ethUri(c.address, parseEther('0.01')),
      });
    }
    await shoot(pages, 'awaiting-eth');

    // The same document throughout: a marker set now must still be there when it shows paid.
    let navigations = 0;
    for (const page of both(pages)) {
      await page.evaluate(() => ((window as unknown as { marker: number }).marker = 42));
      page.on('framenavigated', () => navigations++);
    }
    // 10 TUSD of 25 is 0.4 of the price: the rest is 15 TUSD or 0.006 ETH, and ETH stays picked.
    await mintErc20(chain.rpcUrl, tusd, c.address, 10_000_000n);
    for (const page of both(pages)) {
      await stateIs(page, 'partial');
      expect(await page.textContent('#status-badge')).toBe('Partially paid');
      await expect
        .poll(() => page.textContent('#partial-note'), { timeout: 20_000 })
        .toBe('40% paid. Send the remaining 15.00 USD in the token you pick.');
      expect(await page.textContent('.choice:nth-child(1)')).toBe('TUSD 15');
      expect(await page.textContent('.choice:nth-child(2)')).toBe('ETH 0.006');
      await shows(page, 1, {
        hint: 'Send exactly 0.006 ETH on Local devnet to this address.',
        amount: '0.006',
        uri: ethUri(c.address, parseEther('0.006')),
      });
    }
    const partial = (await t.request('GET', `/api/pay/${c.uuid}`)).body.data;
    expect(partial).toMatchObject({ state: 'partial', paid_fraction: '0.400000000000000000', paid_amount: '10.000000000000000000' });
    expect(partial.payments.map((p: { token: string; amount: string }) => [p.token, p.amount])).toEqual([
      ['TUSD', '10.000000000000000000'],
    ]);
    await shoot(pages, 'partial');
    // Picking TUSD again shows what is left in it.
    await pages.desktop.getByRole('radio', { name: 'TUSD 15' }).check();
    await shows(pages.desktop, 0, {
      hint: 'Send exactly 15 TUSD on Local devnet to this address.',
      amount: '15',
      uri: tusdUri(c.address, 15_000_000n),
    });

    const hash = await pay(chain.rpcUrl, c.address, parseEther('0.006'));
    for (const page of both(pages)) {
      await stateIs(page, 'paid');
      expect(await page.textContent('#status-badge')).toBe('Paid');
      expect(await page.textContent('#paid-text')).toBe('10 TUSD and 0.006 ETH received for 25.00 USD.');
      expect(await page.isVisible('#panel-pay')).toBe(false);
      expect(await page.isVisible('#countdown-row')).toBe(false);
      expect(await page.textContent('#amount-label')).toBe('Price');
      await page.waitForFunction(
        (href) => [...document.querySelectorAll('#panel-paid .explorer-link')].some((a) => a.getAttribute('href') === href),
        `${EXPLORER}/tx/${hash}`,
        { timeout: 10_000 },
      );
      expect(await page.evaluate(() => (window as unknown as { marker?: number }).marker)).toBe(42);
    }
    expect(navigations).toBe(0);
    const paid = (await t.request('GET', `/api/pay/${c.uuid}`)).body.data;
    expect(paid).toMatchObject({ status: 'paid', state: 'paid', paid_fraction: '1.000000000000000000' });
    expect(paid.payments.map((p: { token: string; amount: string }) => [p.token, p.amount])).toEqual([
      ['TUSD', '10.000000000000000000'],
      ['ETH', '0.006000000000000000'],
    ]);
    await shoot(pages, 'paid');
    for (const page of both(pages)) await page.context().close();
  }, 120_000);

  it('partly paid and expired by the clock: what share arrived and what is missing of the price; then underpaid', async () => {
    await clockToChain(clock, chain);
    const c = await api.create({
      price: { amount: '10', currency: 'USD' },
      tokens: ['TUSD', 'ETH'],
      expires: 60,
      content: { title: 'Order #3002' },
    });
    const pages = await open(c.uuid);
    await mintErc20(chain.rpcUrl, tusd, c.address, 4_000_000n);
    for (const page of both(pages)) {
      await stateIs(page, 'partial');
      expect(await page.textContent('#partial-note')).toBe('40% paid. Send the remaining 6.00 USD in the token you pick.');
    }

    clock.advance(61_000);
    for (const page of both(pages)) {
      await stateIs(page, 'closed');
      expect(await page.textContent('#status-badge')).toBe('Expired');
      expect(await page.textContent('#closed-text')).toBe('Received 40% of 10.00 USD (4 TUSD) before the request expired.');
      expect(await page.textContent('#panel-closed .missing')).toBe('6.00 USD missing');
      for (const sel of ['#panel-pay', '#picker', '#qr-0', '#qr-1', '#open-wallet-0', '#open-wallet-1', '#address'])
        expect(await page.$(sel), sel).toBeNull();
      expect(await page.content()).not.toContain('ethereum:');
      expect(await page.textContent('#amount-label')).toBe('Price');
    }
    await shoot(pages, 'expired-by-clock-partial');

    // A block stamped after the expiry is confirmed: the chain decides it underpaid.
    await chain.rpc('evm_increaseTime', [62]);
    await chain.mine();
    for (const page of both(pages)) {
      await stateIs(page, 'failed');
      expect(await page.textContent('#status-badge')).toBe('Underpaid');
      expect(await page.textContent('#failed-text')).toBe('Received 40% of 10.00 USD (4 TUSD) before the request expired.');
      expect(await page.textContent('#failed-missing')).toBe('6.00 USD missing');
    }
    await shoot(pages, 'underpaid');
    for (const page of both(pages)) await page.context().close();
  }, 90_000);

  it('has no serious or critical accessibility violation (axe-core), and long quotes fit', async () => {
    // 10.00 GBP at 3 GBP an ETH and 0.3 GBP a TUSD: quotes as long as rounding makes them.
    const rates = new RateService(t.ctx);
    const networkId = (await t.store.db.selectFrom('networks').select('id').where('name', '=', 'Local devnet').executeTakeFirstOrThrow())
      .id;
    await rates.setManual({ symbol: 'ETH', currency: 'GBP', value: '3', networkId });
    await rates.setManual({ symbol: 'TUSD', currency: 'GBP', value: '0.3', networkId });
    const c = await api.create({ price: { amount: '10', currency: 'GBP' }, tokens: ['ETH', 'TUSD'], expires: 900 });
    const pages: Page[] = [];
    for (const viewport of [PHONE, DESKTOP]) {
      const phone = viewport === PHONE;
      // bypassCSP only so the test can inject axe-core; the page's own policy is kept by the tests above.
      const context = await browser.newContext({
        viewport,
        deviceScaleFactor: phone ? 2 : 1,
        isMobile: phone,
        hasTouch: phone,
        bypassCSP: true,
      });
      const page = await context.newPage();
      await page.goto(`${t.url}/pay/${c.uuid}`, { waitUntil: 'networkidle' });
      expect(await page.textContent('#heading')).toBe('Pay 10.00 GBP');
      expect(await page.getByRole('radio', { name: 'ETH 3.333333333333333334' }).isChecked()).toBe(true);
      expect(await page.getByRole('radio', { name: 'TUSD 33.333334' }).isChecked()).toBe(false);
      await page.addScriptTag({ content: AXE });
      const violations = await page.evaluate(async () => {
        const r = await (
          window as unknown as { axe: { run: () => Promise<{ violations: { id: string; impact: string; nodes: unknown[] }[] }> } }
        ).axe.run();
        return r.violations.filter((v) => v.impact === 'serious' || v.impact === 'critical').map((v) => `${v.id} (${v.nodes.length})`);
      });
      expect(violations, `${viewport.width} px`).toEqual([]);
      pages.push(page);
    }
    await shoot({ phone: pages[0]!, desktop: pages[1]! }, 'long-quotes');
    for (const page of pages) await page.context().close();
  });

  it('made no request to another host, and none failed', () => {
    expect(foreign).toEqual([]);
    expect(failed).toEqual([]);
  });
});
