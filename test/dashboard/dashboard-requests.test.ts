/**
 * The dashboard's requests in a real browser (Chromium, playwright-core), with the service's own
 * rate limits (60 a minute for the user's API keys and login tokens, 600 for the dashboard's
 * sessions; docs/operating.md "Rate limits"):
 * a user with 30 wallets signs in through the form and visits every page (the wallets, a wallet,
 * a charge, the API keys, the events). No answer is 429, and each page's API requests, counted
 * here, stay within concrete bounds. The same user's API key, used by a server meanwhile, is
 * answered 200 throughout. With the dashboard session's minute used up, a page says so in the section
 * that failed (the rest of the dashboard stays), and `Sign out` still ends the token (401 after).
 * axe-core at 390 and 1280 px on the wallets; screenshots in test/artifacts/dash-live-*.png.
 */
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { parseEther } from 'viem';
import { startTestApp, type TestApp, type TestUser } from '../helpers/app.js';
import { startTestChain, type TestChain } from '../helpers/chain.js';
import { createWalletRow } from '../helpers/factories.js';
import { watchPage } from '../helpers/browser.js';
import { accessible, ARTIFACTS, DESKTOP, launchChromium, PHONE } from '../helpers/dashboard.js';

const WALLETS = 30;

/** The poller's reads of GET /api/events (where to start, then what came after): counted apart from a page's reads. */
const isPoll = (u: URL) => u.pathname === '/api/events' && (u.searchParams.has('after') || u.searchParams.get('limit') === '1');

/** Windows are whole minutes: start early in one, so what the test counts cannot straddle two. */
async function startOfAMinute(before = 20_000): Promise<void> {
  const intoMinuteMs = Date.now() % 60_000;
  if (intoMinuteMs > 60_000 - before) await new Promise((r) => setTimeout(r, 60_000 - intoMinuteMs + 50));
}

describe('the dashboard within the rate limits', () => {
  let chain: TestChain;
  let t: TestApp;
  let user: TestUser;
  let browser: Browser;
  let key: string;
  let first: { id: number; name: string };
  let chargeId: number;
  const foreign: string[] = [];
  const failed: string[] = [];
  /** Every API request the page made (path with query), and every answer's status. */
  const requests: URL[] = [];
  const answers: { url: URL; status: number }[] = [];
  let exhausted = false;

  beforeAll(async () => {
    chain = await startTestChain();
    t = await startTestApp({
      workers: true,
      env: { RATE_LIMIT_PER_MINUTE: '60', DASHBOARD_RATE_LIMIT_PER_MINUTE: '600', WATCHER_POLL_MS: '200' },
    });
    const networkId = await chain.register(t, { name: 'Local devnet' });
    user = await t.createUser();
    for (let i = 1; i <= WALLETS; i++) {
      const w = await createWalletRow(t, user.id, { name: `Till ${String(i).padStart(2, '0')}`, networkId });
      if (i === 1) first = { id: w.id, name: w.name };
    }
    const { address } = await t.store.db.selectFrom('wallets').select('address').where('id', '=', first.id).executeTakeFirstOrThrow();
    await chain.setBalance(address, parseEther('2'));
    // Each balance read once before: its first reading (and the event it makes) is not the dashboard's.
    for (const w of (await t.request('GET', '/api/wallets', { token: user.token })).body.data as { id: number }[])
      expect((await t.request('GET', `/api/wallet/${w.id}/balance`, { token: user.token })).status).toBe(200);
    const created = await t.request('POST', '/api/auth/key/create', {
      token: user.token,
      body: { name: 'Checkout server', scopes: ['read', 'charges:write'] },
    });
    expect(created.status, created.text).toBe(200);
    key = created.body.data.key;
    const charge = await t.request('POST', `/api/wallet/${first.id}/charge/create`, {
      token: key,
      body: { amount: '0.125', token: 'ETH', expires: 900 },
    });
    expect(charge.status, charge.text).toBe(200);
    chargeId = charge.body.data.id;
    browser = await launchChromium();
  }, 120_000);

  afterAll(async () => {
    await browser?.close();
    await t?.close();
    await chain?.stop();
  });

  async function open(viewport: { width: number; height: number }): Promise<{ context: BrowserContext; page: Page }> {
    const phone = viewport === PHONE;
    const context = await browser.newContext({
      viewport,
      deviceScaleFactor: phone ? 2 : 1,
      isMobile: phone,
      hasTouch: phone,
      bypassCSP: true,
    });
    const page = await context.newPage();
    // Once the test has used up the minute on purpose, the browser's own "status of 429" lines are expected.
    watchPage(context, page, t.url, { foreign, failed }, (text) => !(exhausted && text.includes('status of 429')));
    page.on('request', (r) => {
      const url = new URL(r.url());
      if (url.pathname.startsWith('/api/')) requests.push(url);
    });
    page.on('response', (r) => {
      const url = new URL(r.url());
      if (url.pathname.startsWith('/api/')) answers.push({ url, status: r.status() });
    });
    expect((await page.goto(`${t.url}/dashboard`))?.status()).toBe(200);
    return { context, page };
  }

  /** Signs in through the form. */
  async function signIn(page: Page): Promise<void> {
    await page.getByLabel('Email').fill(user.email);
    await page.getByLabel('Password').fill(user.password);
    await page.getByRole('button', { name: 'Sign in' }).click();
  }

  /** Nothing of the view is still loading, and no API request is out. */
  async function settled(page: Page): Promise<void> {
    await expect
      .poll(
        () =>
          page
            .getByRole('status')
            .filter({ hasText: /^Loading/ })
            .count(),
        { timeout: 20_000 },
      )
      .toBe(0);
    await page.waitForLoadState('networkidle');
  }

  /** The API requests (not the poller's) a view made from `from` on, by path. */
  function readsSince(from: number): string[] {
    return requests.slice(from).flatMap((u) => (isPoll(u) ? [] : [`${u.pathname}${u.search}`]));
  }

  it('visits every page of a user with 30 wallets with no 429, a bounded number of requests each, the API key answered meanwhile', async () => {
    await startOfAMinute(40_000);
    const { context, page } = await open(DESKTOP);
    const counts: Record<string, number> = {};
    let mark = requests.length;
    await signIn(page);
    // The merchant's server, busy at the same time with the same user's API key.
    const server = await Promise.all(
      Array.from({ length: 20 }, () => fetch(`${t.url}/api/wallets`, { headers: { authorization: `Bearer ${key}` } })),
    );
    expect(server.map((r) => r.status)).toEqual(Array(20).fill(200));
    expect(server[0]!.headers.get('x-ratelimit-limit')).toBe('60');
    await expect.poll(() => page.locator('dl.balances').count(), { timeout: 20_000 }).toBe(WALLETS);
    await settled(page);
    const shown = page.getByLabel(`Balances of ${first.name}`).locator('dd');
    expect(await shown.textContent()).toBe('2');
    // Signing in: the login, the list, and each wallet with its balances.
    counts.wallets = readsSince(mark).length;
    expect(readsSince(mark).filter((p) => p === '/api/wallets')).toHaveLength(1);

    mark = requests.length;
    await page.getByRole('link', { name: first.name }).click();
    await page.getByRole('heading', { name: 'Transactions' }).waitFor();
    await settled(page);
    counts.wallet = readsSince(mark).length;
    // The wallet is read once, and the chart reads 100 rows, not 1000.
    expect(readsSince(mark).filter((p) => p === `/api/wallet/${first.id}`)).toHaveLength(1);
    expect(readsSince(mark).filter((p) => p.includes('limit=1000'))).toEqual([]);

    mark = requests.length;
    await page.goto(`${t.url}/dashboard#/wallet/${first.id}/charge/${chargeId}`);
    await page.getByRole('heading', { name: 'Refunds' }).waitFor();
    await settled(page);
    counts.charge = readsSince(mark).length;

    mark = requests.length;
    await page.getByRole('link', { name: 'API keys' }).click();
    await page.locator('[data-key]').first().waitFor();
    await settled(page);
    counts.keys = readsSince(mark).length;

    mark = requests.length;
    await page.getByRole('link', { name: 'Events' }).click();
    await page.locator('[data-event]').first().waitFor();
    await settled(page);
    counts.events = readsSince(mark).length;

    const polls = requests.filter(isPoll).length;
    console.log(`API requests per page: ${JSON.stringify(counts)}; event polls meanwhile: ${polls}`);
    expect(answers.filter((a) => a.status === 429)).toEqual([]);
    // login, /api/wallets, and per wallet its read and its balances (the charge page: a page load)
    expect(counts.wallets).toBeLessThanOrEqual(2 + 2 * WALLETS);
    // the wallet, balances, chart, transactions, charges, deposit addresses, payouts, webhooks, policy, allowlist, reconciliation
    expect(counts.wallet).toBeLessThanOrEqual(11);
    expect(counts.charge).toBeLessThanOrEqual(2);
    expect(counts.keys).toBe(1);
    expect(counts.events).toBe(1);
    // Everything the dashboard did is far inside the dashboard session's minute (600).
    expect(requests.length).toBeLessThan(150);
    expect(foreign).toEqual([]);
    expect(failed).toEqual([]);
    await context.close();
  }, 120_000);

  it('is accessible at 390 and 1280 px with 30 wallets (axe-core), each card its own', async () => {
    for (const [name, viewport] of [
      ['phone', PHONE],
      ['desktop', DESKTOP],
    ] as const) {
      const { context, page } = await open(viewport);
      await signIn(page);
      await expect.poll(() => page.locator('dl.balances').count(), { timeout: 20_000 }).toBe(WALLETS);
      expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(viewport.width);
      await accessible(page, `wallets at ${viewport.width} px`);
      await page.screenshot({ path: join(ARTIFACTS, `dash-live-wallets-${name}.png`) });
      await page.getByRole('link', { name: first.name }).click();
      await page.getByRole('heading', { name: 'Transactions' }).waitFor();
      await settled(page);
      await accessible(page, `wallet at ${viewport.width} px`);
      await page.screenshot({ path: join(ARTIFACTS, `dash-live-wallet-${name}.png`), fullPage: true });
      await page.getByRole('link', { name: 'Events' }).click();
      await page.locator('[data-event]').first().waitFor();
      await accessible(page, `events at ${viewport.width} px`);
      await context.close();
    }
    expect(foreign).toEqual([]);
    expect(failed).toEqual([]);
  }, 120_000);
  it('says "Too many requests" where a read failed, and signs out with the minute used up (the token then refused)', async () => {
    await startOfAMinute(30_000);
    const { context, page } = await open(DESKTOP);
    await signIn(page);
    await expect.poll(() => page.locator('dl.balances').count(), { timeout: 20_000 }).toBe(WALLETS);
    const token = (await page.evaluate(() => sessionStorage.getItem('wallet-service.token')))!;
    expect(token.startsWith('ds.'), 'a dashboard session').toBe(true);
    // Use up the dashboard session's minute.
    exhausted = true;
    for (;;) {
      const batch = await Promise.all(
        Array.from({ length: 50 }, () => fetch(`${t.url}/api/auth/me`, { headers: { authorization: `Bearer ${token}` } })),
      );
      if (batch.some((r) => r.status === 429)) break;
    }
    // The API key (and the user's login tokens) count apart: still answered.
    expect((await fetch(`${t.url}/api/wallets`, { headers: { authorization: `Bearer ${key}` } })).status).toBe(200);

    await page.getByRole('link', { name: 'API keys' }).click();
    const problem = page.locator('section[aria-labelledby="keys-title"]').getByRole('alert');
    await expect.poll(() => problem.textContent()).toMatch(/^Too many requests: wait \d+ s, then try again\.$/);
    // In place: the page's heading, the navigation and the form stay.
    expect(await page.getByRole('heading', { name: 'API keys' }).count()).toBe(1);
    expect(await page.getByRole('navigation', { name: 'Main' }).count()).toBe(1);
    expect(await page.getByRole('button', { name: 'Create key' }).count()).toBe(1);
    await page.screenshot({ path: join(ARTIFACTS, 'dash-live-too-many-desktop.png'), fullPage: true });
    await accessible(page, 'keys, too many requests');

    const logout = page.waitForResponse((r) => new URL(r.url()).pathname === '/api/auth/logout');
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByLabel('Email').waitFor();
    expect(await page.evaluate(() => sessionStorage.getItem('wallet-service.token'))).toBeNull();
    await expect
      .poll(async () => (await fetch(`${t.url}/api/auth/me`, { headers: { authorization: `Bearer ${token}` } })).status)
      .toBe(401);
    // Answered 200 though the minute is used up: never refused.
    const ended = await logout;
    expect([ended.status(), ended.headers()['x-ratelimit-remaining']]).toEqual([200, '0']);
    expect(foreign).toEqual([]);
    expect(failed).toEqual([]);
    await context.close();
  }, 120_000);
});
