/**
 * The checkout page tells the truth at every moment, in Debian's Chromium (playwright-core, no
 * download), on a real anvil chain whose network needs 2 confirmations, with the service's
 * workers running and its clock in the test's hand (ManualClock):
 *
 * - a payment seen but not confirmed shows "Confirming" (no QR code), then paid once confirmed;
 * - when `expires_at` passes by the service's clock and no block has been mined since (the
 *   charge still `pending` on the chain), the open page stops taking payment without a reload: no
 *   QR code, no wallet link, no deposit address, no devnet button (its route answers 400), and
 *   says the request expired; with a part paid, what arrived and what is missing. The device's
 *   own clock, an hour off, changes nothing;
 * - a payment made after that is shown as late, with its transaction hash and what the payer
 *   should expect, never as "no payment arrived"; the merchant's refund of it is shown on its
 *   way, then arrived, with its transaction.
 *
 * Each state is screenshotted at 390 and 1280 px wide into test/artifacts/checkout-states/.
 */
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chromium, type Browser, type Page } from 'playwright-core';
import { parseEther } from 'viem';
import { ManualClock, startTestApp, type TestApp, type TestUser } from '../helpers/app.js';
import { startTestChain, type TestChain } from '../helpers/chain.js';
import { ROOT } from '../helpers/process.js';
import { watchPage } from '../helpers/browser.js';
import { chargeApi, clockToChain, latestTimestampS, pay, PAYER, stampNextBlock } from '../charges/support.js';

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const SHOTS = join(ROOT, 'test/artifacts/checkout-states');
const PHONE = { width: 390, height: 844 };
const DESKTOP = { width: 1280, height: 800 };
const EXPLORER = 'https://explorer.example';
const HOUR_MS = 3_600_000;

describe('the checkout page says what is true, in Chromium', () => {
  let chain: TestChain;
  let t: TestApp;
  let user: TestUser;
  let api: ReturnType<typeof chargeApi>;
  let wallet: { id: number; address: string };
  let browser: Browser;
  const clock = new ManualClock();
  const foreign: string[] = [];
  const failed: string[] = [];

  beforeAll(async () => {
    mkdirSync(SHOTS, { recursive: true });
    chain = await startTestChain();
    t = await startTestApp({ clock, env: { CHARGES_POLL_MS: '100', WATCHER_POLL_MS: '100' }, workers: true });
    const networkId = await chain.register(t, { name: 'Local devnet', confirmations: 2 });
    await t.store.db.updateTable('networks').set({ block_explorer: EXPLORER }).where('id', '=', networkId).execute();
    user = await t.createUser();
    wallet = (await t.request('POST', '/api/wallet/create', { token: user.token, body: { name: 'Shop', network_id: networkId } })).body
      .data;
    await chain.setBalance(wallet.address, parseEther('1'));
    api = chargeApi(t, wallet.id, user.token);
    browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox', '--disable-dev-shm-usage'] });
  }, 60_000);
  afterAll(async () => {
    await browser?.close();
    await t?.close();
    await chain?.stop();
  });

  /** The charge's page at both widths; `skewMs` sets the device's clock that far off. */
  async function open(uuid: string, skewMs = 0): Promise<{ phone: Page; desktop: Page }> {
    const pages: Page[] = [];
    for (const viewport of [PHONE, DESKTOP]) {
      const phone = viewport === PHONE;
      const context = await browser.newContext({ viewport, deviceScaleFactor: phone ? 2 : 1, isMobile: phone, hasTouch: phone });
      if (skewMs !== 0)
        await context.addInitScript((skew) => {
          const now = Date.now;
          Date.now = () => now() + skew;
        }, skewMs);
      const page = await context.newPage();
      watchPage(context, page, t.url, { foreign, failed });
      const res = await page.goto(`${t.url}/pay/${uuid}`, { waitUntil: 'networkidle' });
      expect(res?.status()).toBe(200);
      pages.push(page);
    }
    return { phone: pages[0]!, desktop: pages[1]! };
  }

  const stateIs = (page: Page, state: string) =>
    page.waitForFunction((s) => document.getElementById('checkout')?.dataset.state === s, state, { timeout: 20_000 });

  async function shoot(pages: { phone: Page; desktop: Page }, name: string): Promise<void> {
    for (const [width, page] of [
      ['390', pages.phone],
      ['1280', pages.desktop],
    ] as const) {
      expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(Number(width));
      await page.screenshot({ path: join(SHOTS, `${name}-${width}.png`), fullPage: true });
    }
  }

  /** Nothing on the page offers to take money. */
  async function takesNoPayment(page: Page): Promise<void> {
    for (const sel of ['#panel-pay', '#qr', '#open-wallet', '#address', '#amount-copy', '#devnet-pay'])
      expect(await page.$(sel), sel).toBeNull();
    expect(await page.content()).not.toContain('ethereum:');
    expect(await page.isVisible('#countdown-row')).toBe(false);
  }

  it('a payment seen and not yet confirmed says "Confirming", then paid once confirmed', async () => {
    await clockToChain(clock, chain);
    const c = await api.create({ amount: '0.25', token: 'ETH', expires: 900, content: { title: 'Order #2001' } });
    const pages = await open(c.uuid);
    expect(await pages.phone.textContent('#status-badge')).toBe('Awaiting payment');
    expect(await pages.phone.isVisible('#qr')).toBe(true);

    const hash = await pay(chain.rpcUrl, c.address, parseEther('0.25'));
    for (const page of [pages.phone, pages.desktop]) {
      await stateIs(page, 'confirming');
      expect(await page.textContent('#status-badge')).toBe('Confirming');
      expect(await page.textContent('#panel-confirming h2')).toBe('Payment seen, confirming');
      expect(await page.textContent('#confirming-text')).toBe(
        '0.25 ETH reached the address and is waiting for the network’s confirmations.',
      );
      expect(await page.textContent('#confirming-tx-0')).toBe(hash);
      await takesNoPayment(page);
    }
    expect((await api.show(c.id)).status).toBe('pending');
    await shoot(pages, 'confirming');

    await chain.mine(1);
    for (const page of [pages.phone, pages.desktop]) {
      await stateIs(page, 'paid');
      expect(await page.textContent('#status-badge')).toBe('Paid');
      expect(await page.textContent('#paid-text')).toBe('0.25 ETH received.');
      expect(await page.$('#panel-confirming')).toBeNull();
    }
    await shoot(pages, 'paid');
    await pages.phone.context().close();
    await pages.desktop.context().close();
  }, 90_000);

  it('stops taking payment when expires_at passes by the clock with no new block; a payment after that is shown late', async () => {
    await clockToChain(clock, chain);
    const unpaid = await api.create({ amount: '0.25', token: 'ETH', expires: 60, content: { title: 'Order #2002' } });
    const part = await api.create({ amount: '1', token: 'ETH', expires: 60, content: { title: 'Order #2003' } });
    // The device's clock an hour behind on one, an hour ahead on the other: the countdown is the service's.
    const a = await open(unpaid.uuid, -HOUR_MS);
    const b = await open(part.uuid, HOUR_MS);
    for (const page of [a.phone, b.desktop]) expect(await page.textContent('#countdown')).toMatch(/^0[01]:\d\d$/);
    expect(await a.phone.isVisible('#qr')).toBe(true);
    expect(await a.phone.isVisible('#devnet-pay')).toBe(true);
    await shoot(a, 'awaiting');

    await pay(chain.rpcUrl, part.address, parseEther('0.4'));
    await chain.mine(1);
    await stateIs(b.phone, 'partial');
    expect(await b.phone.textContent('#partial-note')).toBe('Received 0.4 ETH. Send the remaining 0.6 ETH.');

    // The service's clock passes the expiry; the idle chain mines nothing, so nothing is decided on it.
    const blocks = await chain.blockNumber();
    clock.advance(61_000);
    for (const page of [a.phone, a.desktop, b.phone, b.desktop]) {
      await stateIs(page, 'closed');
      expect(await page.textContent('#status-badge')).toBe('Expired');
      expect(await page.isVisible('#panel-closed')).toBe(true);
      expect(await page.textContent('#panel-closed h2')).toBe('This payment request has expired');
      await takesNoPayment(page);
    }
    expect(await a.phone.textContent('#closed-text')).toBe(
      'Please do not send funds to this address; ask the merchant for a new payment link.',
    );
    expect(await b.phone.textContent('#closed-text')).toBe('Received 0.4 of 1 ETH before the request expired.');
    expect(await b.phone.textContent('#panel-closed .missing')).toBe('0.6 ETH missing');
    expect(await chain.blockNumber()).toBe(blocks);
    expect([(await api.show(unpaid.id)).status, (await api.show(part.id)).status]).toEqual(['pending', 'pending']);
    const json = (await t.request('GET', `/api/pay/${unpaid.uuid}`)).body.data;
    expect([json.status, json.state]).toEqual(['pending', 'closed']);
    // The devnet's payer button is gone, and its route makes no late payment.
    const late = await t.request('POST', `/api/pay/${unpaid.uuid}/devnet`);
    expect([late.status, late.body.message]).toEqual([400, 'The payment request has expired; nothing was sent']);
    await shoot(a, 'expired-by-clock');
    await shoot(b, 'expired-by-clock-partial');
    // Loaded now, the page is rendered expired by the server: no QR code, no payment URI in it.
    const html = await (await fetch(`${t.url}/pay/${unpaid.uuid}`)).text();
    expect(html).toContain('This payment request has expired');
    expect(html).not.toMatch(/id="qr"|ethereum:|id="open-wallet"/);

    // The payer pays all the same, in a block stamped after the expiry: a late payment.
    await stampNextBlock(chain, Math.max((await latestTimestampS(chain)) + 1, Math.ceil(clock.nowMs() / 1000)));
    const hash = await pay(chain.rpcUrl, unpaid.address, parseEther('0.25'));
    await chain.mine(1);
    for (const page of [a.phone, a.desktop]) {
      await stateIs(page, 'late');
      expect(await page.textContent('#status-badge')).toBe('Late payment');
      expect(await page.textContent('#panel-late h2')).toBe('Your payment arrived late');
      expect(await page.textContent('#late-text')).toBe(
        '0.25 ETH reached the address after this payment request expired, so it did not pay it.',
      );
      expect(await page.textContent('#late-next')).toBe(
        'The merchant has it and will either refund it or honour your order. Please contact the merchant and keep the transaction hash below.',
      );
      expect(await page.textContent('#late-tx-0')).toBe(hash);
      expect(await page.getAttribute('#late-tx .explorer-link', 'href')).toBe(`${EXPLORER}/tx/${hash}`);
      expect(await page.textContent('#card')).not.toContain('No payment arrived');
      await takesNoPayment(page);
    }
    const shown = await api.until(unpaid.id, (x) => x.status === 'expired', 'expired');
    expect(shown.payments.map((p: { tx_hash: string; late: boolean }) => [p.tx_hash, p.late])).toEqual([[hash, true]]);
    await shoot(a, 'late');

    // The merchant refunds it: the page shows the refund on its way, then arrived, with its transaction.
    const refund = await t.request('POST', `/api/wallet/${wallet.id}/charge/${unpaid.id}/refund`, {
      token: user.token,
      body: { address: PAYER.address, reason: 'Paid after the expiry' },
    });
    expect(refund.status, refund.text).toBe(200);
    await a.phone.waitForFunction(() => document.getElementById('refund-note')?.textContent?.includes('being refunded'), null, {
      timeout: 20_000,
    });
    await chain.mine(1);
    const refundHash = (await api.until(unpaid.id, (x) => x.refunds[0]?.status === 'confirmed', 'refund confirmed')).refunds[0].tx_hash;
    for (const page of [a.phone, a.desktop]) {
      await page.waitForFunction(() => document.getElementById('refund-note')?.textContent?.includes('0.25 ETH refunded to you'), null, {
        timeout: 20_000,
      });
      expect(await page.textContent('#refund-tx-0')).toBe(refundHash);
      expect(await page.textContent('#late-tx-0')).toBe(hash);
      expect(await page.textContent('#late-next')).toBe('The merchant has sent a refund (below). Please keep the transaction hashes.');
      await takesNoPayment(page);
    }
    await shoot(a, 'late-refunded');
    for (const page of [a.phone, a.desktop, b.phone, b.desktop]) await page.context().close();
  }, 120_000);

  it('made no request to another host, and none failed', () => {
    expect(foreign).toEqual([]);
    expect(failed).toEqual([]);
  });
});
