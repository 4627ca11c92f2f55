/**
 * The dashboard follows what happens without a reload (Chromium, playwright-core): with a
 * wallet's page open, ETH sent to the wallet on the chain shows as its new balance, and a
 * transfer created, then approved, through the API shows as awaiting approval, then confirmed,
 * each within 5 seconds of the service knowing it (dashboard/src/data.ts follows GET /api/events);
 * the webhook delivery of the ETH received shows as delivered within 5 s of being delivered.
 * Each change is checked through the API too; the page is never reloaded. Screenshot in
 * test/artifacts/dash-live-live-desktop.png.
 */
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser } from 'playwright-core';
import { parseEther, type Address } from 'viem';
import { startTestApp, type TestApp, type TestUser } from '../helpers/app.js';
import { startTestChain, type TestChain } from '../helpers/chain.js';
import { waitFor } from '../helpers/wait.js';
import { accessible, ARTIFACTS, DESKTOP, launchChromium, signedIn } from '../helpers/dashboard.js';
import { startReceiver, type Receiver } from '../helpers/receiver.js';
import { RECIPIENT, sendFromOutsider, waitForStatus } from '../helpers/transfers.js';

/** What "live" promises: shown within this long of the service knowing it. */
const LIVE_MS = 5000;

describe('the dashboard, live', () => {
  let chain: TestChain;
  let t: TestApp;
  let user: TestUser;
  let browser: Browser;
  let wallet: { id: number; name: string; address: string };
  let receiver: Receiver;
  let webhook: number;
  const foreign: string[] = [];
  const failed: string[] = [];

  beforeAll(async () => {
    chain = await startTestChain();
    t = await startTestApp({ workers: true, env: { WATCHER_POLL_MS: '50', CHARGES_POLL_MS: '50' } });
    const networkId = await chain.register(t, { name: 'Local devnet' });
    user = await t.createUser();
    wallet = (await t.request('POST', '/api/wallet/create', { token: user.token, body: { name: 'Shop till', network_id: networkId } })).body
      .data;
    await chain.setBalance(wallet.address, parseEther('3'));
    const policy = await t.request('POST', `/api/wallet/${wallet.id}/policy`, {
      token: user.token,
      body: { approval_above: { ETH: '0.5' } },
    });
    expect(policy.status, policy.text).toBe(200);
    // Answered after a while: the delivery is still being sent when the last event has come.
    receiver = await startReceiver(() => ({ status: 200, body: 'ok', delayMs: 3000 }));
    const hook = await t.request('POST', `/api/wallet/${wallet.id}/webhook/create`, {
      token: user.token,
      body: { url: `${receiver.url}/hooks`, type: 'transaction', events: ['transaction.confirmed'] },
    });
    expect(hook.status, hook.text).toBe(200);
    webhook = hook.body.data.id;
    browser = await launchChromium();
  }, 90_000);

  afterAll(async () => {
    await browser?.close();
    await receiver?.close();
    await t?.close();
    await chain?.stop();
  });

  it('shows ETH received as the new balance, and a transfer awaiting approval then confirmed, each within 5 s, without a reload', async () => {
    const { context, page } = await signedIn(browser, t, user, DESKTOP, { foreign, failed });
    await page.getByRole('link', { name: wallet.name }).click();
    await page.getByRole('heading', { name: 'Transactions' }).waitFor();
    const eth = page.getByLabel(`Balances of ${wallet.name}`).locator('div', { hasText: 'ETH' }).locator('dd');
    await expect.poll(() => eth.textContent()).toBe('3');
    let navigations = 0;
    page.on('framenavigated', () => (navigations += 1));
    await page.evaluate(() => ((window as unknown as { kept: boolean }).kept = true));

    // 2 ETH sent to the wallet by someone outside the service, in a real transfer.
    const hash = await sendFromOutsider(chain.rpcUrl, wallet.address as Address, parseEther('2'));
    await waitFor(
      async () =>
        (await t.request('GET', `/api/wallet/${wallet.id}/transaction`, { token: user.token })).body.data.find(
          (x: { tx_hash: string | null; status: string }) => x.tx_hash === hash && x.status === 'confirmed',
        ),
      { timeoutMs: 20_000 },
    );
    await expect.poll(() => eth.textContent(), { timeout: LIVE_MS }).toBe('5');
    const balance = await t.request('GET', `/api/wallet/${wallet.id}/balance`, { token: user.token });
    expect(balance.body.data.balance).toBe('5.000000000000000000');
    await page.locator('tr', { has: page.locator(`[title="${hash}"]`) }).waitFor({ timeout: LIVE_MS });
    // Its webhook delivery: delivered (checked through the API), then shown so.
    const delivery = await waitFor(
      async () =>
        (
          (await t.request('GET', `/api/wallet/${wallet.id}/webhook/${webhook}/deliveries`, { token: user.token })).body.data as {
            id: number;
            status: string;
          }[]
        ).find((d) => d.status === 'delivered'),
      { timeoutMs: 20_000 },
    );
    await expect
      .poll(() => page.locator(`li[data-delivery="${delivery.id}"] .badge`).textContent(), { timeout: LIVE_MS })
      .toBe('delivered');

    // A transfer above the approval threshold, then approved, both through the API.
    const held = await t.request('POST', `/api/wallet/${wallet.id}/transaction/create`, {
      token: user.token,
      body: { amount: '0.75', token: 'ETH', address: RECIPIENT },
    });
    expect([held.status, held.body.data?.status], held.text).toEqual([200, 'awaiting_approval']);
    const row = page.locator(`tr[data-transaction="${held.body.data.id}"]`);
    await expect.poll(() => row.locator('.badge').textContent(), { timeout: LIVE_MS }).toBe('awaiting approval');
    const approved = await t.request('POST', `/api/wallet/${wallet.id}/transaction/${held.body.data.id}/approve`, { token: user.token });
    expect(approved.status, approved.text).toBe(200);
    await waitForStatus(t, user, wallet.id, held.body.data.id, 'confirmed');
    await expect.poll(() => row.locator('.badge').textContent(), { timeout: LIVE_MS }).toBe('confirmed');
    // The balance follows the transfer out too (less the 0.75 sent and its fee).
    const after = (await t.request('GET', `/api/wallet/${wallet.id}/balance`, { token: user.token })).body.data.balance as string;
    expect(after.startsWith('4.24')).toBe(true);
    await expect.poll(() => eth.locator('span').getAttribute('title'), { timeout: LIVE_MS }).toBe(after);

    expect(navigations).toBe(0);
    expect(await page.evaluate(() => (window as unknown as { kept?: boolean }).kept)).toBe(true);
    await accessible(page, 'the wallet, after the changes');
    await page.screenshot({ path: join(ARTIFACTS, 'dash-live-live-desktop.png'), fullPage: true });
    expect(foreign).toEqual([]);
    expect(failed).toEqual([]);
    await context.close();
  }, 90_000);
});
