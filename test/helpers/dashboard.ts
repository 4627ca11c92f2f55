/**
 * The dashboard in a real browser for the journey tests: Debian's Chromium through playwright-core
 * (no download), a context at a phone's or a desktop's width, signed in with the form, axe-core
 * run in the page, screenshots of each state in test/artifacts/.
 */
import { mkdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { expect } from 'vitest';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import type { TestApp, TestUser } from './app.js';
import { watchPage, type PageTroubles } from './browser.js';
import { ROOT } from './process.js';

export const ARTIFACTS = join(ROOT, 'test/artifacts');
export const PHONE = { width: 390, height: 844 };
export const DESKTOP = { width: 1280, height: 800 };
export const VIEWPORTS = [
  ['phone', PHONE],
  ['desktop', DESKTOP],
] as const;
const AXE = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

export function launchChromium(): Promise<Browser> {
  mkdirSync(ARTIFACTS, { recursive: true });
  return chromium.launch({
    executablePath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium',
    args: ['--no-sandbox', '--disable-dev-shm-usage'],
  });
}

/** A fresh context at `viewport` (a phone: scale 2, touch), signed in as `user` (its `Sign out` shown). */
export async function signedIn(
  browser: Browser,
  t: TestApp,
  user: TestUser,
  viewport: { width: number; height: number },
  troubles: PageTroubles,
  permissions: string[] = [],
): Promise<{ context: BrowserContext; page: Page }> {
  const phone = viewport.width === PHONE.width;
  // bypassCSP only so the test can inject axe-core.
  const context = await browser.newContext({
    viewport,
    deviceScaleFactor: phone ? 2 : 1,
    isMobile: phone,
    hasTouch: phone,
    bypassCSP: true,
  });
  if (permissions.length > 0) await context.grantPermissions(permissions, { origin: t.url });
  const page = await context.newPage();
  watchPage(context, page, t.url, troubles);
  expect((await page.goto(`${t.url}/dashboard`, { waitUntil: 'networkidle' }))?.status()).toBe(200);
  await page.getByLabel('Email').fill(user.email);
  await page.getByLabel('Password').fill(user.password);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('button', { name: 'Sign out' }).waitFor();
  return { context, page };
}

/** axe-core in the page: no serious or critical violation. */
export async function accessible(page: Page, view: string): Promise<void> {
  await page.addScriptTag({ content: AXE });
  const violations = await page.evaluate(async () => {
    const r = await (
      window as unknown as { axe: { run: () => Promise<{ violations: { id: string; impact: string; nodes: unknown[] }[] }> } }
    ).axe.run();
    return r.violations
      .filter((v) => v.impact === 'serious' || v.impact === 'critical')
      .map((v) => `${v.id} (${v.impact}, ${v.nodes.length} nodes)`);
  });
  expect(violations, view).toEqual([]);
}

/** The state as it is: accessible, no sideways scroll, saved as test/artifacts/{name}.png (the whole page, or what a dialog covers). */
export async function state(page: Page, name: string, fullPage = true): Promise<void> {
  await accessible(page, name);
  const width = page.viewportSize()!.width;
  expect(await page.evaluate(() => document.documentElement.scrollWidth), `${name}: no sideways scroll`).toBeLessThanOrEqual(width);
  await page.screenshot({ path: join(ARTIFACTS, `${name}.png`), fullPage });
}
