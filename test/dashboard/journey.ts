/**
 * What the merchant-action journeys share (journey-send, journey-charge, journey-webhook): a
 * service on a real anvil chain, whose PUBLIC_URL is its own origin (a charge's checkout link
 * opens on it), a signed-up user and Debian's Chromium (test/helpers/dashboard.ts); each page,
 * and each page it opens, watched for requests to another host, failed requests and console
 * errors; a field's error checked next to it; screenshots to test/artifacts/dash-create-*.png.
 */
import { join } from 'node:path';
import { expect } from 'vitest';
import type { Browser, BrowserContext, Locator, Page } from 'playwright-core';
import { findFreePort } from '../../src/chain/devnet.js';
import { startTestApp, type TestApp, type TestUser } from '../helpers/app.js';
import { startTestChain, type TestChain } from '../helpers/chain.js';
import { watchPage, type PageTroubles } from '../helpers/browser.js';
import { accessible as axe, ARTIFACTS, launchChromium, signedIn } from '../helpers/dashboard.js';

export { VIEWPORTS } from '../helpers/dashboard.js';

export interface Journey {
  chain: TestChain;
  t: TestApp;
  user: TestUser;
  networkId: number;
  browser: Browser;
  troubles: PageTroubles;
  /** A fresh page at `viewport`, signed in with the form, on the wallets. */
  signedIn(viewport: { width: number; height: number }, permissions?: string[]): Promise<{ context: BrowserContext; page: Page }>;
  /** An API call as the signed-up user. */
  api(method: string, path: string, body?: unknown): Promise<{ status: number; text: string; body: any }>;
  close(): Promise<void>;
}

export async function startJourney(): Promise<Journey> {
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
  const browser = await launchChromium();
  const troubles: PageTroubles = { foreign: [], failed: [] };
  return {
    chain,
    t,
    user,
    networkId,
    browser,
    troubles,
    async signedIn(viewport, permissions = []) {
      const opened = await signedIn(browser, t, user, viewport, troubles, permissions);
      // A page it opens (a charge's checkout link) is watched too.
      opened.context.on('page', (p) => watchPage(opened.context, p, t.url, troubles));
      await opened.page.getByRole('heading', { name: 'Wallets' }).waitFor();
      return opened;
    },
    api: (method, path, body) => t.request(method, path, { token: user.token, ...(body === undefined ? {} : { body }) }),
    async close() {
      await browser.close();
      await t.close();
      await chain.stop();
    },
  };
}

/** axe-core in the page (no serious or critical violation), and nothing wider than the viewport. */
export async function accessible(page: Page, state: string): Promise<void> {
  await axe(page, state);
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
