/**
 * What a page did wrong in the browser tests: requests to another origin, requests that failed and
 * console errors. A request still in flight when the test itself reloads the page or closes its
 * context is cut by that (net::ERR_ABORTED), not by the page: those are not counted.
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import type { BrowserContext, Page } from 'playwright-core';

export interface PageTroubles {
  foreign: string[];
  failed: string[];
}

export function watchPage(
  context: BrowserContext,
  page: Page,
  origin: string,
  into: PageTroubles,
  countConsole: (text: string) => boolean = () => true,
): void {
  let cutting = 0;
  const close = context.close.bind(context);
  context.close = (options) => {
    cutting += 1;
    return close(options);
  };
  const reload = page.reload.bind(page);
  page.reload = async (options) => {
    cutting += 1;
    try {
      return await reload(options);
    } finally {
      cutting -= 1;
    }
  };
  page.on('request', (r) => {
    const u = new URL(r.url());
    if (u.protocol !== 'data:' && u.origin !== origin) into.foreign.push(r.url());
  });
  page.on('requestfailed', (r) => {
    const error = r.failure()?.errorText;
    if (cutting === 0 || error !== 'net::ERR_ABORTED') into.failed.push(`${r.url()} ${error}`);
  });
  page.on('console', (m) => {
    if (m.type() === 'error' && countConsole(m.text())) into.failed.push(`console: ${m.text()}`);
  });
}

const AXE = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

/** axe-core run in the page: its serious and critical violations, as `id (impact, n nodes)`. */
export async function seriousViolations(page: Page): Promise<string[]> {
  await page.addScriptTag({ content: AXE });
  return page.evaluate(async () => {
    const r = await (
      window as unknown as { axe: { run: () => Promise<{ violations: { id: string; impact: string; nodes: unknown[] }[] }> } }
    ).axe.run();
    return r.violations
      .filter((v) => v.impact === 'serious' || v.impact === 'critical')
      .map((v) => `${v.id} (${v.impact}, ${v.nodes.length} nodes)`);
  });
}

/** Signs in through the dashboard's form (the page showing it). */
export async function signIn(page: Page, user: { email: string; password: string }): Promise<void> {
  await page.getByLabel('Email').fill(user.email);
  await page.getByLabel('Password').fill(user.password);
  await page.getByRole('button', { name: 'Sign in' }).click();
}
