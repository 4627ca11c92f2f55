/**
 * The checkout page in a real browser: Debian's Chromium (/usr/bin/chromium, or CHROMIUM_PATH)
 * driven by playwright-core, no browser download. A real charge on anvil, the service's
 * workers running: the page shows the amount, the address (copied by its button) and the QR
 * code; the payer pays on the chain and the page turns paid without a reload. An underpaid
 * charge turns partially paid, then underpaid with what is missing; an unpaid one expires. No
 * request leaves the service's host. Screenshots at phone and desktop width go to
 * test/artifacts/ (docs/images/ holds a copy of two of them).
 */
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import { createWalletClient, http, parseEther, type Address, type Hex } from 'viem';
import { privateKeyToAccount } from 'viem/accounts';
import { foundry } from 'viem/chains';
import { ManualClock, startTestApp, type TestApp, type TestUser } from '../helpers/app.js';
import { startTestChain, type TestChain } from '../helpers/chain.js';
import { waitFor } from '../helpers/wait.js';
import { ROOT } from '../helpers/process.js';
import { watchPage } from '../helpers/browser.js';

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const ARTIFACTS = join(ROOT, 'test/artifacts');
const PHONE = { width: 390, height: 844 };
const DESKTOP = { width: 1280, height: 800 };
const EXPLORER = 'https://explorer.example';

/** anvil's dev account #2: the payer, outside the service. */
const PAYER = privateKeyToAccount('0x5de4111afa1a4b94908f83103eb1f1706367c2e68ca870fc3fb9a804cdab365a');

async function pay(rpcUrl: string, to: string, wei: bigint): Promise<Hex> {
  const client = createWalletClient({ account: PAYER, chain: foundry, transport: http(rpcUrl) });
  return client.sendTransaction({ to: to as Address, value: wei });
}

describe('the checkout page in Chromium', () => {
  let chain: TestChain;
  let t: TestApp;
  let alice: TestUser;
  let walletId: number;
  let browser: Browser;
  const clock = new ManualClock();
  /** Every URL any page asked for that is not this service (nor a data: URL). */
  const foreign: string[] = [];
  const failed: string[] = [];

  beforeAll(async () => {
    mkdirSync(ARTIFACTS, { recursive: true });
    chain = await startTestChain();
    t = await startTestApp({ clock, env: { CHARGES_POLL_MS: '100', WATCHER_POLL_MS: '100' }, workers: true });
    const networkId = await chain.register(t, { name: 'Local devnet' });
    await t.store.db.updateTable('networks').set({ block_explorer: EXPLORER }).where('id', '=', networkId).execute();
    alice = await t.createUser();
    walletId = (await t.request('POST', '/api/wallet/create', { token: alice.token, body: { name: 'Shop', network_id: networkId } })).body
      .data.id;
    browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox', '--disable-dev-shm-usage'] });
  }, 60_000);
  afterAll(async () => {
    await browser?.close();
    await t?.close();
    await chain?.stop();
  });

  const createCharge = async (body: Record<string, unknown>) => {
    const res = await t.request('POST', `/api/wallet/${walletId}/charge/create`, { token: alice.token, body });
    expect(res.status, res.text).toBe(200);
    return res.body.data as { uuid: string; address: string; hosted_url: string; payment_uri: string };
  };

  async function open(viewport: { width: number; height: number }, uuid: string): Promise<{ context: BrowserContext; page: Page }> {
    const context = await browser.newContext({
      viewport,
      deviceScaleFactor: viewport === PHONE ? 2 : 1,
      isMobile: viewport === PHONE,
      hasTouch: viewport === PHONE,
    });
    await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: t.url });
    const page = await context.newPage();
    watchPage(context, page, t.url, { foreign, failed });
    const res = await page.goto(`${t.url}/pay/${uuid}`, { waitUntil: 'networkidle' });
    expect(res?.status()).toBe(200);
    return { context, page };
  }

  const badge = (page: Page) => page.textContent('#status-badge');

  it('shows amount, address and QR code, copies the address, and turns paid without a reload', async () => {
    const c = await createCharge({
      amount: '0.25',
      token: 'ETH',
      expires: 900,
      content: { title: 'Order #1042', description: 'Ceramic mug, blue (2×)\nShipping included' },
    });
    const { context, page } = await open(PHONE, c.uuid);
    expect(await page.textContent('h1')).toBe('Order #1042');
    expect(await page.textContent('.description')).toBe('Ceramic mug, blue (2×)\nShipping included');
    expect(await page.textContent('#amount')).toBe('0.25ETH');
    expect(await page.textContent('#address')).toBe(c.address);
    expect(await page.getAttribute('#open-wallet', 'href')).toBe(c.payment_uri);
    expect(await badge(page)).toBe('Awaiting payment');
    // The QR code is there and drawn (not decoded here: its content is payment_uri, see checkout.test.ts).
    const qr = await page.$eval('#qr', (img) => ({
      src: (img as HTMLImageElement).src,
      w: (img as HTMLImageElement).naturalWidth,
      shown: (img as HTMLImageElement).getBoundingClientRect().width,
    }));
    expect(qr.src).toMatch(/^data:image\/svg\+xml;base64,/);
    expect(qr.w).toBeGreaterThan(0);
    expect(qr.shown).toBeGreaterThanOrEqual(150);
    // Nothing wider than the phone's screen.
    expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(PHONE.width);
    // The countdown runs in the page.
    const first = await page.textContent('#countdown');
    expect(first).toMatch(/^1[45]:\d\d$/);
    await waitFor(async () => (await page.textContent('#countdown')) !== first, { message: 'countdown ticks' });
    // Copy: the clipboard holds the address, the button says so.
    await page.click('#address + .copy');
    await page.waitForFunction(() => document.querySelector('#address + .copy .copy-label')?.textContent === 'Copied', null, {
      timeout: 5000,
    });
    expect(await page.evaluate(() => navigator.clipboard.readText())).toBe(c.address);
    await page.waitForFunction(() => document.querySelector('#address + .copy .copy-label')?.textContent === 'Copy');
    await page.screenshot({ path: join(ARTIFACTS, 'checkout-phone.png'), fullPage: true });

    const desktop = await open(DESKTOP, c.uuid);
    await desktop.page.screenshot({ path: join(ARTIFACTS, 'checkout-desktop.png') });

    // The same document throughout: a marker set now must still be there when it shows paid.
    await page.evaluate(() => ((window as unknown as { marker: number }).marker = 42));
    let navigations = 0;
    page.on('framenavigated', () => navigations++);
    const hash = await pay(chain.rpcUrl, c.address, parseEther('0.25'));
    await page.waitForFunction(() => document.getElementById('status-badge')?.textContent === 'Paid', null, { timeout: 20_000 });
    expect(navigations).toBe(0);
    expect(await page.evaluate(() => (window as unknown as { marker?: number }).marker)).toBe(42);
    expect(await page.isVisible('#panel-paid')).toBe(true);
    expect(await page.isVisible('#panel-pay')).toBe(false);
    expect(await page.isVisible('#countdown-row')).toBe(false);
    expect(await page.textContent('#paid-text')).toBe('0.25 ETH received.');
    // The explorer link of the paying transaction, taken from a fresh render once paid.
    await page.waitForFunction(
      (href) => document.querySelector('#panel-paid .explorer-link')?.getAttribute('href') === href,
      `${EXPLORER}/tx/${hash}`,
      { timeout: 10_000 },
    );
    expect(await page.textContent('#panel-paid .explorer-link')).toBe(`View transaction ${hash.slice(0, 8)}…${hash.slice(-6)}`);
    expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(PHONE.width);
    await page.screenshot({ path: join(ARTIFACTS, 'checkout-phone-paid.png'), fullPage: true });
    await desktop.page.waitForFunction(() => document.getElementById('status-badge')?.textContent === 'Paid', null, { timeout: 20_000 });
    await desktop.page.screenshot({ path: join(ARTIFACTS, 'checkout-desktop-paid.png') });
    await desktop.context.close();
    await context.close();
  }, 90_000);

  it('turns partially paid, then underpaid with what is missing; an unpaid one expires', async () => {
    const short = await createCharge({ amount: '2', token: 'ETH', expires: 60, content: { title: 'Invoice 2026-0117' } });
    const unpaid = await createCharge({ amount: '1', token: 'ETH', expires: 60 });
    const a = await open(PHONE, short.uuid);
    const b = await open(DESKTOP, unpaid.uuid);
    expect(await b.page.textContent('h1')).toBe('Pay 1 ETH');

    await pay(chain.rpcUrl, short.address, parseEther('0.5'));
    await a.page.waitForFunction(() => document.getElementById('status-badge')?.textContent === 'Partially paid', null, {
      timeout: 20_000,
    });
    expect(await a.page.textContent('#partial-note')).toBe('Received 0.5 ETH. Send the remaining 1.5 ETH.');
    // The QR code, the wallet link and the amount to copy now ask for what is still due.
    const rest = `ethereum:${short.address}@31337?value=${parseEther('1.5')}`;
    await a.page.waitForFunction((href) => document.getElementById('open-wallet')?.getAttribute('href') === href, rest, {
      timeout: 10_000,
    });
    expect(await a.page.textContent('#amount-copy')).toBe('1.5');
    expect(await a.page.$eval('#qr', (img) => (img as HTMLImageElement).naturalWidth)).toBeGreaterThan(0);
    await a.page.screenshot({ path: join(ARTIFACTS, 'checkout-phone-partial.png'), fullPage: true });

    // The service's clock passes the expiry, and so does the chain's: a block stamped after it is confirmed.
    clock.advance(61_000);
    await chain.rpc('evm_increaseTime', [62]);
    await chain.mine();
    await a.page.waitForFunction(() => document.getElementById('status-badge')?.textContent === 'Underpaid', null, { timeout: 20_000 });
    expect(await a.page.isVisible('#panel-failed')).toBe(true);
    expect(await a.page.textContent('#failed-text')).toBe('Received 0.5 of 2 ETH before the request expired.');
    expect(await a.page.textContent('#failed-missing')).toBe('1.5 ETH missing');
    await a.page.screenshot({ path: join(ARTIFACTS, 'checkout-phone-underpaid.png'), fullPage: true });

    // Expired by the clock first (payment no longer taken), then decided expired on the chain.
    await b.page.waitForFunction(() => document.getElementById('checkout')?.dataset.state === 'expired', null, { timeout: 20_000 });
    expect(await b.page.textContent('#status-badge')).toBe('Expired');
    expect(await b.page.isVisible('#panel-expired')).toBe(true);
    expect(await b.page.isVisible('#qr')).toBe(false);
    await b.page.screenshot({ path: join(ARTIFACTS, 'checkout-desktop-expired.png') });
    await a.context.close();
    await b.context.close();
  }, 90_000);

  it('on the local devnet, "Pay from the devnet" pays it and the page turns paid without a reload', async () => {
    const c = await createCharge({ amount: '0.05', token: 'ETH', expires: 900 });
    const { context, page } = await open(DESKTOP, c.uuid);
    expect(await page.textContent('#devnet-pay')).toBe('Pay from the devnet');
    await page.screenshot({ path: join(ARTIFACTS, 'checkout-desktop-devnet.png') });
    await page.click('#devnet-pay');
    await page.waitForFunction(() => document.getElementById('status-badge')?.textContent === 'Paid', null, { timeout: 20_000 });
    expect(await page.textContent('#paid-text')).toBe('0.05 ETH received.');
    const charge = await t.request('GET', `/api/wallet/${walletId}/charge/show/${c.uuid}`, { token: alice.token });
    expect(charge.body.data.payments.map((p: { amount: string }) => p.amount)).toEqual(['0.050000000000000000']);
    await context.close();
  }, 60_000);

  it('shows a plain 404 page for an unknown uuid', async () => {
    const context = await browser.newContext({ viewport: PHONE });
    const page = await context.newPage();
    const res = await page.goto(`${t.url}/pay/00000000-0000-4000-8000-000000000000`);
    expect(res?.status()).toBe(404);
    expect(await page.textContent('h1')).toBe('Payment not found');
    await page.screenshot({ path: join(ARTIFACTS, 'checkout-not-found.png') });
    await context.close();
  });

  it('made no request to another host, and none failed', () => {
    expect(foreign).toEqual([]);
    expect(failed).toEqual([]);
  });
});
