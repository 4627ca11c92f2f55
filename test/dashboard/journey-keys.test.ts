/**
 * A merchant's API key journey in the dashboard (Chromium, at 390 px and at 1280 px): each scope
 * is explained next to its checkbox; no scope is refused in place; a key is created with
 * `transactions:write` and an expiry of 30 days, shown once and copied with `Copy` (the clipboard
 * holds exactly the key, and the key works against the API within its scopes); `Revoke` asks in
 * a confirm dialog ("Revoke key …"), Cancel changes nothing (focus back on `Revoke`), and once
 * revoked the key gets 401. Every step is checked through the API; axe-core on each state;
 * screenshots test/artifacts/dash-approve-keys-*.png.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser } from 'playwright-core';
import { startTestApp, type TestApp, type TestUser } from '../helpers/app.js';
import { launchChromium, signedIn, state, VIEWPORTS } from '../helpers/dashboard.js';

const THIRTY_DAYS_MS = 30 * 86_400_000;
const utcMs = (s: string) => Date.parse(`${s.replace(' ', 'T')}Z`);

describe('API keys in the dashboard', () => {
  let t: TestApp;
  let user: TestUser;
  let browser: Browser;
  const troubles = { foreign: [] as string[], failed: [] as string[] };

  beforeAll(async () => {
    t = await startTestApp();
    user = await t.createUser();
    browser = await launchChromium();
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    await t?.close();
  });

  for (const [size, viewport] of VIEWPORTS) {
    it(`${size}: creates a scoped key that expires, copies it, and revokes it after asking`, async () => {
      const { context, page } = await signedIn(browser, t, user, viewport, troubles, ['clipboard-read', 'clipboard-write']);
      await page.getByRole('link', { name: 'API keys' }).click();
      await page.getByRole('heading', { name: 'API keys' }).waitFor();
      const name = `ci-bot-${size}`;
      await page.getByLabel('Key name').fill(name);

      // Each scope says what it lets a key do; with none, the form says so next to them.
      const scope = (s: string) => page.getByRole('checkbox', { name: new RegExp(`^${s.replace('*', '\\*')} `) });
      expect(await page.locator('label.scope', { has: scope('transactions:write') }).textContent()).toBe(
        'transactions:write Send money: transfers and payouts, within the spending policy.',
      );
      await scope('read').uncheck();
      await page.getByRole('button', { name: 'Create key' }).click();
      await page.getByRole('alert').filter({ hasText: 'Choose at least one scope: what the key may do.' }).waitFor();
      expect((await t.request('GET', '/api/auth/key', { token: user.token })).body.data.some((k: any) => k.name === name)).toBe(false);
      await state(page, `dash-approve-keys-form-${size}`);

      await scope('read').check();
      await scope('transactions:write').check();
      await page.getByLabel('Expires').selectOption({ label: 'In 30 days' });
      await page.getByRole('button', { name: 'Create key' }).click();
      const shown = page.locator('[data-created-key]');
      await shown.waitFor();
      const key = (await shown.textContent())!.trim();
      expect(key).toMatch(/^wps_[A-Za-z0-9_-]{43}$/);
      await page.getByRole('button', { name: 'Copy' }).click();
      await page.getByRole('status').filter({ hasText: 'Copied to the clipboard.' }).waitFor();
      expect(await page.evaluate(() => navigator.clipboard.readText())).toBe(key);
      await state(page, `dash-approve-keys-created-${size}`);

      const listed = (await t.request('GET', '/api/auth/key', { token: user.token })).body.data.find((k: any) => k.name === name);
      expect(listed.scopes).toEqual(['read', 'transactions:write']);
      expect(utcMs(listed.expires_at) - utcMs(listed.created_at)).toBe(THIRTY_DAYS_MS);
      expect(await page.locator(`li[data-key="${listed.id}"] time`).getAttribute('datetime')).toBe(
        `${listed.expires_at.replace(' ', 'T')}Z`,
      );
      // The copied key works, within its scopes: it reads, and may not create a wallet.
      expect((await t.request('GET', '/api/wallets', { token: key })).status).toBe(200);
      expect((await t.request('POST', '/api/wallet/create', { token: key, body: { name: 'x', network_id: 1 } })).status).toBe(403);

      // Revoke asks first; Cancel leaves the key working.
      await page.getByRole('button', { name: `Revoke ${name}` }).click();
      const dialog = page.getByRole('dialog', { name: `Revoke key ${name}?` });
      await dialog.waitFor();
      expect(await page.evaluate(() => document.activeElement?.closest('dialog') !== null)).toBe(true);
      await state(page, `dash-approve-keys-revoke-${size}`, false);
      await dialog.getByRole('button', { name: 'Cancel' }).click();
      await dialog.waitFor({ state: 'detached' });
      // Focus is back on what opened the dialog.
      expect(await page.evaluate(() => document.activeElement?.getAttribute('aria-label'))).toBe(`Revoke ${name}`);
      expect((await t.request('GET', '/api/wallets', { token: key })).status).toBe(200);
      await page.getByRole('button', { name: `Revoke ${name}` }).click();
      await dialog.getByRole('button', { name: `Revoke key ${name}` }).click();
      await page
        .getByRole('status')
        .filter({ hasText: `Key ${listed.id} revoked.` })
        .waitFor();
      const revoked = (await t.request('GET', '/api/auth/key', { token: user.token })).body.data.find((k: any) => k.id === listed.id);
      expect(revoked.revoked_at).not.toBeNull();
      expect((await t.request('GET', '/api/wallets', { token: key })).status).toBe(401);
      await context.close();
    }, 60_000);
  }

  it('made no request to another host, and none failed', () => {
    expect(troubles).toEqual({ foreign: [], failed: [] });
  });
});
