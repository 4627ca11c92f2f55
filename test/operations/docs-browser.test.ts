/**
 * GET /api/docs in a real browser: Debian's Chromium (/usr/bin/chromium, or CHROMIUM_PATH)
 * driven by playwright-core, no browser download. The page renders every path of the OpenAPI
 * document, loads nothing from another host (it works offline), and a screenshot is saved
 * under test/artifacts/. A token given to "Authorize" is kept in memory only (issue 47, d).
 */
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chromium, type Browser } from 'playwright-core';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { ROOT } from '../helpers/process.js';

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

describe('/api/docs in Chromium', () => {
  let t: TestApp;
  let browser: Browser;
  beforeAll(async () => {
    t = await startTestApp();
    browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox', '--disable-dev-shm-usage'] });
  });
  afterAll(async () => {
    await browser?.close();
    await t?.close();
  });

  it('renders every path of the OpenAPI document from local assets only', async () => {
    const doc = (await (await fetch(`${t.url}/api/openapi.json`)).json()) as { paths: Record<string, unknown> };
    const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    const foreign: string[] = [];
    const failed: string[] = [];
    page.on('request', (r) => {
      const u = new URL(r.url());
      if (u.protocol !== 'data:' && u.origin !== t.url) foreign.push(r.url());
    });
    page.on('requestfailed', (r) => failed.push(r.url()));
    const res = await page.goto(`${t.url}/api/docs`, { waitUntil: 'networkidle' });
    expect(res?.status()).toBe(200);
    await page.waitForSelector('.opblock-summary-path', { timeout: 30_000 });
    const shown = await page.$$eval('.opblock-summary-path', (els) => els.map((e) => e.getAttribute('data-path') ?? e.textContent ?? ''));
    for (const path of Object.keys(doc.paths)) expect(shown, path).toContain(path);
    expect(await page.textContent('.info .title')).toContain('Wallet and Payment Service API');
    expect(foreign).toEqual([]);
    expect(failed).toEqual([]);

    const dir = join(ROOT, 'test/artifacts');
    mkdirSync(dir, { recursive: true });
    await page.screenshot({ path: join(dir, 'api-docs.png'), fullPage: false });
    await page.close();
  }, 90_000);

  it('serves a configuration that does not persist the authorization', async () => {
    const res = await fetch(`${t.url}/api/docs/static/swagger-initializer.js`);
    expect(res.status).toBe(200);
    const js = await res.text();
    expect(js).toContain('"persistAuthorization":false');
    expect(js).not.toContain('"persistAuthorization":true');
  });

  it('keeps an authorized bearer token in memory only: not in storage, gone after a reload', async () => {
    const token = 'docs-page-token-4747';
    const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    await page.goto(`${t.url}/api/docs`, { waitUntil: 'networkidle' });
    await page.click('.auth-wrapper .authorize');
    await page.fill('#auth-bearer-value', token);
    await page.click('button[aria-label="Apply credentials"]');
    // Authorized in this page: the dialog now offers to log out.
    await page.waitForSelector('button[aria-label="Remove authorization"]');
    await page.click('.auth-btn-wrapper .btn-done');
    const stored = await page.evaluate(() => JSON.stringify({ local: { ...localStorage }, session: { ...sessionStorage } }));
    expect(stored).not.toContain(token);
    expect(stored).not.toContain('authorized');
    await page.reload({ waitUntil: 'networkidle' });
    await page.click('.auth-wrapper .authorize');
    // After a reload the dialog asks for the token again (nothing was restored).
    await page.waitForSelector('#auth-bearer-value');
    expect(await page.$('button[aria-label="Remove authorization"]')).toBeNull();
    await page.close();
  }, 90_000);
});
