/**
 * A webhook set up from the dashboard, in Chromium at 390 px and at 1280 px: `New webhook` (no
 * URL, then one the API refuses: each error next to the URL field, in the form's words; then a
 * local receiver's URL, the `transaction` type, one event), `Send test` (the receiver gets it; the
 * delivery is shown with "1 attempt" and no Retry, as it was delivered), and `Edit` (another URL,
 * one more event, turned off). Each step is checked through the API and at the receiver; axe-core
 * on each page state.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startReceiver, type Receiver } from '../helpers/receiver.js';
import { accessible, expectNoTroubles, fieldError, shot, startJourney, VIEWPORTS, type Journey } from './journey.js';

describe('journey: a webhook from the dashboard', () => {
  let j: Journey;
  let receiver: Receiver;
  let wallet: { id: number; name: string };

  beforeAll(async () => {
    j = await startJourney();
    receiver = await startReceiver();
    wallet = (await j.api('POST', '/api/wallet/create', { name: 'Shop', network_id: j.networkId })).body.data;
  }, 90_000);

  afterAll(async () => {
    await receiver?.close();
    await j?.close();
  });

  for (const [size, viewport] of VIEWPORTS) {
    it(`${size}: creates a webhook, sends a test, sees its delivery, edits it (checked through the API and at the receiver)`, async () => {
      const { context, page } = await j.signedIn(viewport);
      await page.getByRole('link', { name: wallet.name }).click();
      await page.getByRole('button', { name: 'New webhook' }).click();
      const form = page.getByRole('form', { name: 'New webhook' });
      await expect.poll(() => page.evaluate(() => document.activeElement?.id)).toBe('new-webhook-url');
      await form.getByRole('button', { name: 'Create webhook' }).click();
      expect(await fieldError(page, 'new-webhook-url')).toBe('URL is required.');
      await form.getByLabel('URL').fill('not a url');
      await form.getByRole('button', { name: 'Create webhook' }).click();
      await expect.poll(() => page.locator('#new-webhook-url-error').textContent()).toBe('URL must be a valid URL.');
      expect(await fieldError(page, 'new-webhook-url')).toBe('URL must be a valid URL.');
      await accessible(page, 'new webhook with an error');

      const path = `/hook-${size}`;
      await form.getByLabel('URL').fill(`${receiver.url}${path}`);
      // Changed, the field no longer shows the error its old value had.
      expect(await page.locator('#new-webhook-url-error').count()).toBe(0);
      expect(await form.getByLabel('URL').getAttribute('aria-invalid')).toBe('false');
      await form.getByLabel('Type').selectOption('transaction');
      await form.getByLabel('All transaction events').uncheck();
      await form.getByLabel('transaction.confirmed').check();
      await shot(page, `webhook-new-${size}`, form);
      await form.getByRole('button', { name: 'Create webhook' }).click();
      await page
        .getByRole('status')
        .filter({ hasText: /^Webhook \d+ created\.$/ })
        .waitFor();
      const hooks = (await j.api('GET', `/api/wallet/${wallet.id}/webhook`)).body.data;
      const hook = hooks.find((h: any) => h.url === `${receiver.url}${path}`);
      expect([hook.type, hook.events, hook.status]).toEqual(['transaction', ['transaction.confirmed'], 'active']);
      const shown = page.locator(`[data-webhook="${hook.id}"]`);
      await shown.waitFor();
      await accessible(page, 'webhook created');

      // Send test: the receiver gets it (answering after 1.5 s, so the page first reads it under
      // way); its delivery, delivered in 1 attempt, offers no Retry.
      receiver.on(path, () => ({ status: 200, body: 'ok', delayMs: 1500 }));
      await shown.getByRole('button', { name: `Send test to webhook ${hook.id}` }).click();
      await page
        .getByRole('status')
        .filter({ hasText: `Test sent to webhook ${hook.id}: done.` })
        .waitFor();
      await expect.poll(() => receiver.to(path).map((r) => JSON.parse(r.body).event)).toEqual(['webhook.test']);
      const delivered = await expectDelivered(hook.id);
      expect(delivered.attempts).toBe(1);
      // The page reads the deliveries again while the test is under way: delivered, without a reload.
      const delivery = page.locator(`li[data-delivery="${delivered.id}"]`);
      await delivery.locator('.badge', { hasText: 'delivered' }).waitFor({ timeout: 10_000 });
      expect(await delivery.locator('[data-attempt-count]').textContent()).toBe('1 attempt');
      expect(await delivery.textContent()).toContain('webhook.test');
      expect(await delivery.getByRole('button', { name: `Retry delivery ${delivered.id}` }).count()).toBe(0);
      await delivery.scrollIntoViewIfNeeded();
      await accessible(page, 'webhook delivered');
      await shot(page, `webhook-delivered-${size}`, page.locator('section[aria-labelledby="webhooks-title"]'));

      // Edit: another URL, one more event, turned off.
      await shown.getByRole('button', { name: `Edit webhook ${hook.id}` }).click();
      const edit = page.getByRole('form', { name: `Edit webhook ${hook.id}` });
      await edit.getByLabel('URL').fill(`${receiver.url}${path}/v2`);
      await edit.getByLabel('transaction.failed').check();
      await edit.getByLabel('Enabled').uncheck();
      await accessible(page, 'webhook edit form');
      await shot(page, `webhook-edit-${size}`, shown);
      await edit.getByRole('button', { name: 'Save webhook' }).click();
      await edit.waitFor({ state: 'detached' });
      const edited = (await j.api('GET', `/api/wallet/${wallet.id}/webhook`)).body.data.find((h: any) => h.id === hook.id);
      expect([edited.url, edited.events, edited.status]).toEqual([
        `${receiver.url}${path}/v2`,
        ['transaction.confirmed', 'transaction.failed'],
        'inactive',
      ]);
      await expect.poll(() => shown.locator('.badge').first().textContent()).toBe('inactive');
      expect(await shown.textContent()).toContain(`${receiver.url}${path}/v2`);
      await context.close();
    }, 90_000);
  }

  /** The webhook's one delivery, once delivered (through the API). */
  async function expectDelivered(hook: number): Promise<{ id: number; attempts: number }> {
    let found: { id: number; attempts: number; status: string } | undefined;
    await expect
      .poll(
        async () => {
          found = (await j.api('GET', `/api/wallet/${wallet.id}/webhook/${hook}/deliveries`)).body.data[0];
          return found?.status;
        },
        { timeout: 10_000 },
      )
      .toBe('delivered');
    return found!;
  }

  it('made no request to another host, and none failed but the 422s it caused', () => {
    expectNoTroubles(j, ['422 (Unprocessable Entity)', '422 (Unprocessable Entity)']); // the URL that is not one, once a viewport
  });
});
