/**
 * The refund claim page in a real browser (Debian's Chromium, playwright-core, no download): a
 * real charge paid on anvil, a refund claim, the service's workers running. At phone (390 px)
 * and desktop (1280 px) width the page names the network and the merchant's reason; the payer
 * types an address, sends it, and sees the refund sent, then confirmed, with that address and
 * the transaction's hash and explorer link, without a reload; the chain holds the exact amount
 * at that address. A bad
 * address is refused in the page. No request leaves the service's host. Screenshots go to
 * test/artifacts/ (docs/images/ holds copies).
 */
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chromium, type Browser, type Page } from 'playwright-core';
import { parseEther } from 'viem';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { ManualClock, startTestApp, type TestApp, type TestUser } from '../helpers/app.js';
import { startTestChain, type TestChain } from '../helpers/chain.js';
import { ROOT } from '../helpers/process.js';
import { balanceOf, chargeApi, clockToChain, pay } from '../charges/support.js';
import { watchPage } from '../helpers/browser.js';

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const ARTIFACTS = join(ROOT, 'test/artifacts');
const PHONE = { width: 390, height: 844 };
const DESKTOP = { width: 1280, height: 800 };
const EXPLORER = 'https://explorer.example';

describe('the refund claim page in Chromium', () => {
  let chain: TestChain;
  let t: TestApp;
  let user: TestUser;
  let browser: Browser;
  let wallet: { id: number; address: string };
  const clock = new ManualClock();
  const foreign: string[] = [];
  const failed: string[] = [];

  beforeAll(async () => {
    mkdirSync(ARTIFACTS, { recursive: true });
    chain = await startTestChain();
    t = await startTestApp({ clock, env: { CHARGES_POLL_MS: '100', WATCHER_POLL_MS: '100' }, workers: true });
    const networkId = await chain.register(t, { name: 'Local devnet' });
    await t.store.db.updateTable('networks').set({ block_explorer: EXPLORER }).where('id', '=', networkId).execute();
    user = await t.createUser();
    wallet = (await t.request('POST', '/api/wallet/create', { token: user.token, body: { name: 'Shop', network_id: networkId } })).body
      .data;
    await chain.setBalance(wallet.address, parseEther('1'));
    browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox', '--disable-dev-shm-usage'] });
  }, 60_000);
  afterAll(async () => {
    await browser?.close();
    await t?.close();
    await chain?.stop();
  });

  /** A paid charge and a claim of `amount` of it; the claim's uuid. */
  async function claim(amount: string): Promise<string> {
    const api = chargeApi(t, wallet.id, user.token);
    await clockToChain(clock, chain);
    const c = await api.create({ amount: '0.5', token: 'ETH', expires: 900 });
    await pay(chain.rpcUrl, c.address, parseEther('0.5'));
    await api.until(c.id, (x) => x.status === 'paid', 'charge paid', 20_000);
    const res = await t.request('POST', `/api/wallet/${wallet.id}/charge/${c.id}/refund`, {
      token: user.token,
      body: { amount, reason: 'Order cancelled' },
    });
    expect(res.status, res.text).toBe(200);
    return res.body.data.uuid;
  }

  async function open(viewport: { width: number; height: number }, uuid: string): Promise<Page> {
    const phone = viewport === PHONE;
    const context = await browser.newContext({ viewport, deviceScaleFactor: phone ? 2 : 1, isMobile: phone, hasTouch: phone });
    const page = await context.newPage();
    watchPage(context, page, t.url, { foreign, failed }, (text) => !text.includes('status of 422'));
    const res = await page.goto(`${t.url}/refund/${uuid}`, { waitUntil: 'networkidle' });
    expect(res?.status()).toBe(200);
    return page;
  }

  const badge = (page: Page) => page.textContent('#badge');

  for (const [name, viewport, amount] of [
    ['phone', PHONE, '0.125'],
    ['desktop', DESKTOP, '0.2'],
  ] as const) {
    it(`${name}: the payer types an address and sees the refund sent, then confirmed, without a reload`, async () => {
      const uuid = await claim(amount);
      const page = await open(viewport, uuid);
      expect(await page.textContent('h1')).toBe(`Your refund of ${amount} ETH`);
      expect(await badge(page)).toBe('Ready to claim');
      expect(await page.textContent('#network')).toBe('Local devnet');
      expect(await page.textContent('#reason')).toBe('Order cancelled');
      expect(await page.textContent('label[for=address]')).toBe('Your ETH address on Local devnet');
      expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(viewport.width);

      await page.fill('#address', '0x1234');
      await page.click('#send');
      expect(await page.textContent('#error')).toBe('Enter an address: 0x followed by 40 hexadecimal characters.');
      await page.fill('#address', `0x${'g'.repeat(40)}`);
      await page.click('#send');
      expect(await page.textContent('#error')).toBe('Enter an address: 0x followed by 40 hexadecimal characters.');
      const to = privateKeyToAccount(generatePrivateKey()).address;
      await page.fill('#address', to.toLowerCase());
      await page.screenshot({ path: join(ARTIFACTS, `refund-${name}.png`), fullPage: true });

      await page.evaluate(() => ((window as unknown as { marker: number }).marker = 7));
      let navigations = 0;
      page.on('framenavigated', () => navigations++);
      // Mining held back: the page must show the refund sent before it shows it confirmed.
      await chain.rpc('evm_setAutomine', [false]);
      try {
        await page.click('#send');
        await page.waitForFunction(() => document.getElementById('badge')?.textContent === 'Sent', null, { timeout: 10_000 });
        expect(await page.isVisible('#panel-pending')).toBe(true);
        expect(await page.isVisible('#panel-claimable')).toBe(false);
        // Where it went and its transaction, without a reload.
        await page.waitForFunction(() => /^0x[0-9a-f]{64}$/.test(document.getElementById('tx-hash')?.textContent ?? ''), null, {
          timeout: 10_000,
        });
        const hash = await page.textContent('#tx-hash');
        expect((await page.textContent('#panel-pending #sent-address'))?.toLowerCase()).toBe(to.toLowerCase());
        expect(await page.getAttribute('#panel-pending #tx-link', 'href')).toBe(`${EXPLORER}/tx/${hash}`);
        expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(viewport.width);
        expect((await t.request('GET', `/api/refund/${uuid}`)).body.data).toMatchObject({
          network: 'Local devnet',
          reason: 'Order cancelled',
          tx_hash: hash,
          tx_url: `${EXPLORER}/tx/${hash}`,
        });
        await page.screenshot({ path: join(ARTIFACTS, `refund-${name}-sent.png`), fullPage: true });
        expect(await balanceOf(chain, to)).toBe(0n);
        await chain.mine(2);
      } finally {
        await chain.rpc('evm_setAutomine', [true]);
      }
      await page.waitForFunction(() => document.getElementById('badge')?.textContent === 'Confirmed', null, { timeout: 20_000 });
      expect(navigations).toBe(0);
      expect(await page.evaluate(() => (window as unknown as { marker?: number }).marker)).toBe(7);
      expect(await page.isVisible('#panel-confirmed')).toBe(true);
      expect(await page.textContent('#panel-confirmed > p')).toBe(`${amount} ETH has arrived at your address on Local devnet.`);
      expect((await page.textContent('#panel-confirmed #sent-address'))?.toLowerCase()).toBe(to.toLowerCase());
      expect(await page.getAttribute('#panel-confirmed #tx-link', 'href')).toMatch(new RegExp(`^${EXPLORER}/tx/0x[0-9a-f]{64}$`));
      expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(viewport.width);
      expect(await balanceOf(chain, to)).toBe(parseEther(amount));
      await page.screenshot({ path: join(ARTIFACTS, `refund-${name}-confirmed.png`), fullPage: true });
      // Claimed once: another address is refused, in the page's words.
      const again = await t.request('POST', `/api/refund/${uuid}`, {
        body: { address: privateKeyToAccount(generatePrivateKey()).address },
      });
      expect([again.status, again.body.message]).toEqual([400, 'Refund already claimed']);
      await page.context().close();
      expect(foreign).toEqual([]);
      expect(failed).toEqual([]);
    }, 90_000);
  }
});
