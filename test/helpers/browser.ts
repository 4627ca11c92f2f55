/**
 * What a page did wrong in the browser tests: requests to another origin, requests that failed and
 * console errors. A request still in flight when the test itself reloads the page or closes its
 * context is cut by that (net::ERR_ABORTED), not by the page: those are not counted.
 */
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
