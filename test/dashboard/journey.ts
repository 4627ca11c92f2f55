/**
 * What the dashboard journey tests share: a service on a real anvil chain with a signed-up user
 * and a Chromium (Debian's, playwright-core, no download); a page signed in with the form at a
 * phone's or a desktop's size; axe-core on a page state (no serious or critical violation);
 * screenshots to test/artifacts/dash-create-*.png. Every page is watched for requests to another
 * host, failed requests and console errors (`troubles`, asserted empty at the end of a file).
 */
import { mkdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { expect } from 'vitest';
import { chromium, type Browser, type BrowserContext, type Locator, type Page } from 'playwright-core';
import { findFreePort } from '../../src/chain/devnet.js';
import { startTestApp, type TestApp, type TestUser } from '../helpers/app.js';
import { startTestChain, type TestChain } from '../helpers/chain.js';
import { ROOT } from '../helpers/process.js';
import { watchPage, type PageTroubles } from '../helpers/browser.js';

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
export const ARTIFACTS = join(ROOT, 'test/artifacts');
export const PHONE = { width: 390, height: 844 };
export const DESKTOP = { width: 1280, height: 800 };
export const VIEWPORTS = [
  ['phone', PHONE],
  ['desktop', DESKTOP],
] as const;
const AXE = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

export interface Journey {
  chain: TestChain;
  t: TestApp;
  user: TestUser;
  networkId: number;
  browser: Browser;
  troubles: PageTroubles;
  /** A fresh page at `viewport`, signed in with the form, on the wallets. */
  signedIn(viewport: { width: number; height: number }): Promise<{ context: BrowserContext; page: Page }>;
  /** An API call as the signed-up user. */
  api(method: string, path: string, body?: unknown): Promise<{ status: number; text: string; body: any }>;
  close(): Promise<void>;
}

export async function startJourney(): Promise<Journey> {
  mkdirSync(ARTIFACTS, { recursive: true });
  const chain = await startTestChain();
  // The service's own origin as PUBLIC_URL, so that a charge's checkout link opens on it.
  const port = await findFreePort();
  const t = await startTestApp({
    workers: true,
    port,
    env: { WATCHER_POLL_MS: '50', CHARGES_POLL_MS: '50', PUBLIC_URL: `http://127.0.0.1:${port}` },
  });
  const networkId = await chain.register(t, { name: 'Local devnet' });
  const user = await t.createUser();
  const browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox', '--disable-dev-shm-usage'] });
  const troubles: PageTroubles = { foreign: [], failed: [] };
  const signedIn = async (viewport: { width: number; height: number }) => {
    const phone = viewport.width === PHONE.width;
    // bypassCSP only so that axe-core can be injected.
    const context = await browser.newContext({
      viewport,
      deviceScaleFactor: phone ? 2 : 1,
      isMobile: phone,
      hasTouch: phone,
      bypassCSP: true,
    });
    const page = await context.newPage();
    watchPage(context, page, t.url, troubles);
    // A page it opens (a charge's checkout link) is watched too.
    context.on('page', (opened) => watchPage(context, opened, t.url, troubles));
    await page.goto(`${t.url}/dashboard`, { waitUntil: 'networkidle' });
    await page.getByLabel('Email').fill(user.email);
    await page.getByLabel('Password').fill(user.password);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('heading', { name: 'Wallets' }).waitFor();
    return { context, page };
  };
  return {
    chain,
    t,
    user,
    networkId,
    browser,
    troubles,
    signedIn,
    api: (method, path, body) => t.request(method, path, { token: user.token, ...(body === undefined ? {} : { body }) }),
    async close() {
      await browser.close();
      await t.close();
      await chain.stop();
    },
  };
}

/** axe-core in the page: no serious or critical violation; nothing wider than the viewport. */
export async function accessible(page: Page, state: string): Promise<void> {
  await page.addScriptTag({ content: AXE });
  const violations = await page.evaluate(async () => {
    const r = await (
      window as unknown as { axe: { run: () => Promise<{ violations: { id: string; impact: string; nodes: unknown[] }[] }> } }
    ).axe.run();
    return r.violations
      .filter((v) => v.impact === 'serious' || v.impact === 'critical')
      .map((v) => `${v.id} (${v.impact}, ${v.nodes.length} nodes)`);
  });
  expect(violations, state).toEqual([]);
  const width = page.viewportSize()!.width;
  expect(await page.evaluate(() => document.documentElement.scrollWidth), `${state} at ${width} px`).toBeLessThanOrEqual(width);
}

/** test/artifacts/dash-create-{name}.png: the whole page, or one part of it. */
export async function shot(page: Page, name: string, part?: Locator): Promise<void> {
  const path = join(ARTIFACTS, `dash-create-${name}.png`);
  await (part ? part.screenshot({ path }) : page.screenshot({ path, fullPage: true }));
}

/** The field's error shown next to it (`{form}-{field}-error`), the control marked invalid and focused. */
export async function fieldError(page: Page, id: string): Promise<string> {
  const error = page.locator(`#${id}-error`);
  await error.waitFor();
  expect(await page.locator(`#${id}`).getAttribute('aria-invalid')).toBe('true');
  expect((await page.locator(`#${id}`).getAttribute('aria-describedby'))?.split(' ')).toContain(`${id}-error`);
  await expect.poll(() => page.evaluate(() => document.activeElement?.id)).toBe(id);
  return (await error.textContent())!;
}

/** No request to another host, and none failed but the refusals (`422 (Unprocessable Entity)`…) the journey caused on purpose, in order. */
export function expectNoTroubles(j: Journey, refusals: string[]): void {
  expect(j.troubles.foreign).toEqual([]);
  expect(j.troubles.failed).toEqual(refusals.map((r) => `console: Failed to load resource: the server responded with a status of ${r}`));
}
