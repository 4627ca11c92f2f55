/**
 * The dashboard in a real browser (Debian's Chromium, playwright-core, no download), first views
 * (docs/architecture.md, "The dashboard: its stack, and why"): sign in with the form (`Email`,
 * `Password`, `Sign in`), find a wallet's balance, a confirmed transaction's hash (linked to the
 * network's explorer) and a charge — each checked against the API too. The token is only in the
 * tab's session storage (no cookie, nothing in local storage); no request leaves the service's
 * host; no console error; axe-core finds no serious or critical violation on any view; a 401 (token
 * revoked) returns to the sign-in form; each list's `Export CSV` button saves the file the API
 * sends. Screenshots at 390 px and 1280 px go to test/artifacts/ (copies in docs/images/).
 */
import { mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import { getAddress, parseEther } from 'viem';
import { startTestApp, type TestApp, type TestUser } from '../helpers/app.js';
import { startTestChain, type TestChain } from '../helpers/chain.js';
import { waitFor } from '../helpers/wait.js';
import { startReceiver } from '../helpers/receiver.js';
import { RECIPIENT, waitForStatus } from '../helpers/transfers.js';
import { watchPage } from '../helpers/browser.js';
import { accessible, ARTIFACTS, DESKTOP, PHONE } from '../helpers/dashboard.js';

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const EXPLORER = 'https://explorer.example';

describe('the dashboard in Chromium', () => {
  let chain: TestChain;
  let t: TestApp;
  let user: TestUser;
  let browser: Browser;
  let wallet: { id: number; name: string; address: string };
  let txHash: string;
  const foreign: string[] = [];
  const failed: string[] = [];

  beforeAll(async () => {
    mkdirSync(ARTIFACTS, { recursive: true });
    chain = await startTestChain();
    t = await startTestApp({ workers: true, env: { WATCHER_POLL_MS: '50', CHARGES_POLL_MS: '50' } });
    const networkId = await chain.register(t, { name: 'Local devnet' });
    await t.store.db.updateTable('networks').set({ block_explorer: EXPLORER }).where('id', '=', networkId).execute();
    user = await t.createUser();
    wallet = (await t.request('POST', '/api/wallet/create', { token: user.token, body: { name: 'Shop till', network_id: networkId } })).body
      .data;
    await chain.setBalance(wallet.address, parseEther('3'));
    const sent = await t.request('POST', `/api/wallet/${wallet.id}/transaction/create`, {
      token: user.token,
      body: { amount: '0.25', token: 'ETH', address: RECIPIENT },
    });
    expect(sent.status, sent.text).toBe(200);
    txHash = (await waitForStatus(t, user, wallet.id, sent.body.data.id, 'confirmed')).tx_hash;
    const charge = await t.request('POST', `/api/wallet/${wallet.id}/charge/create`, {
      token: user.token,
      body: { amount: '0.125', token: 'ETH', expires: 900 },
    });
    expect(charge.status, charge.text).toBe(200);
    browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox', '--disable-dev-shm-usage'] });
  }, 90_000);

  afterAll(async () => {
    await browser?.close();
    await t?.close();
    await chain?.stop();
  });

  async function open(viewport: { width: number; height: number }): Promise<{ context: BrowserContext; page: Page }> {
    const phone = viewport === PHONE;
    // bypassCSP only so the test can inject axe-core; the page's own CSP is checked on the response.
    const context = await browser.newContext({
      viewport,
      deviceScaleFactor: phone ? 2 : 1,
      isMobile: phone,
      hasTouch: phone,
      bypassCSP: true,
    });
    const page = await context.newPage();
    watchPage(context, page, t.url, { foreign, failed });
    const res = await page.goto(`${t.url}/dashboard`, { waitUntil: 'networkidle' });
    expect(res?.status()).toBe(200);
    expect(res?.headers()['content-security-policy']).toBe(
      "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'; object-src 'none'",
    );
    return { context, page };
  }

  /** The view as it is, at 390 px and at 1280 px (test/artifacts/dashboard-{name}-{phone,desktop}.png), then back to its width. */
  async function shots(page: Page, name: string, fullPage = true): Promise<void> {
    const was = page.viewportSize()!;
    for (const [size, vp] of [
      ['phone', PHONE],
      ['desktop', DESKTOP],
    ] as const) {
      await page.setViewportSize(vp);
      await page.evaluate(() => new Promise((r) => requestAnimationFrame(() => r(null)))); // one frame laid out at the new width
      expect(await page.evaluate(() => document.documentElement.scrollWidth), `${name} at ${vp.width} px`).toBeLessThanOrEqual(vp.width);
      await page.screenshot({ path: join(ARTIFACTS, `dashboard-${name}-${size}.png`), fullPage });
    }
    await page.setViewportSize(was);
  }

  for (const [name, viewport] of [
    ['phone', PHONE],
    ['desktop', DESKTOP],
  ] as const) {
    it(`${name}: signs in, shows the balance, a confirmed transaction's hash and a charge`, async () => {
      const { context, page } = await open(viewport);
      await page.getByLabel('Email').waitFor();
      await accessible(page, 'sign-in');
      await page.screenshot({ path: join(ARTIFACTS, `dashboard-signin-${name}.png`), fullPage: true });
      await page.getByLabel('Email').fill(user.email);
      await page.getByLabel('Password').fill('not the password');
      await page.getByRole('button', { name: 'Sign in' }).click();
      await page.getByRole('alert').filter({ hasText: 'Invalid credentials' }).waitFor();
      await page.getByLabel('Password').fill(user.password);
      await page.getByRole('button', { name: 'Sign in' }).click();

      await page.getByRole('heading', { name: 'Wallets' }).waitFor();
      const api = await t.request('GET', `/api/wallet/${wallet.id}/balance`, { token: user.token });
      const eth = api.body.data.tokens.find((x: { symbol: string }) => x.symbol === 'ETH').balance as string;
      const shown = page.getByLabel(`Balances of ${wallet.name}`).locator('div', { hasText: 'ETH' }).locator('dd');
      await expect.poll(() => shown.textContent()).toBe(eth.replace(/0+$/, '').replace(/\.$/, ''));
      expect(await shown.locator('span').getAttribute('title')).toBe(eth);
      expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(viewport.width);
      expect(await page.getByText('Loading the dashboard…').count()).toBe(0);
      await accessible(page, 'wallets');
      await page.screenshot({ path: join(ARTIFACTS, `dashboard-wallets-${name}.png`), fullPage: true });

      await page.getByRole('link', { name: wallet.name }).click();
      await page.getByRole('heading', { name: 'Transactions' }).waitFor();
      const link = page.getByRole('link', { name: `transaction ${txHash} on the explorer` });
      await link.waitFor();
      expect(await link.getAttribute('href')).toBe(`${EXPLORER}/tx/${txHash}`);
      const row = page.locator('tr', { has: link });
      expect(await row.locator('.badge').textContent()).toBe('confirmed');
      expect(await row.locator('.amount').textContent()).toBe('0.25 ETH');
      // From the wallet, to the recipient: each whole and checksummed behind its explorer link.
      expect(await row.getByRole('link', { name: `from ${getAddress(wallet.address)} on the explorer` }).getAttribute('href')).toBe(
        `${EXPLORER}/address/${getAddress(wallet.address)}`,
      );
      expect(await row.getByRole('link', { name: `to ${getAddress(RECIPIENT)} on the explorer` }).count()).toBe(1);
      const charges = await t.request('GET', `/api/wallet/${wallet.id}/charge`, { token: user.token });
      const chargeRow = page.locator(`tr[data-charge="${charges.body.data[0].id}"]`);
      await chargeRow.waitFor();
      expect(await chargeRow.locator('.amount').first().textContent()).toBe('0.125 ETH');
      expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(viewport.width);
      // The listings do not scroll sideways; on a phone each row is its cells stacked, each named.
      const wide = await page.evaluate(() => [...document.querySelectorAll('.table-wrap')].map((w) => w.scrollWidth - w.clientWidth));
      expect(wide.length).toBe(2);
      if (name === 'phone') {
        expect(wide.every((extra) => extra <= 0)).toBe(true);
        const label = await chargeRow
          .locator('td')
          .nth(1)
          .evaluate((td) => getComputedStyle(td, '::before').content);
        expect(label).toBe('"Amount"');
        expect(
          await page
            .locator('.table-wrap thead')
            .first()
            .evaluate((h) => h.getBoundingClientRect().height),
        ).toBeLessThanOrEqual(1);
      }
      await accessible(page, 'wallet');
      await page.screenshot({ path: join(ARTIFACTS, `dashboard-wallet-${name}.png`), fullPage: true });

      // The token: in this tab's session storage only.
      const stored = await page.evaluate(() => ({
        session: Object.keys(sessionStorage),
        local: localStorage.length,
        cookie: document.cookie,
      }));
      expect(stored).toEqual({ session: ['wallet-service.token'], local: 0, cookie: '' });
      expect(await context.cookies()).toEqual([]);
      await context.close();
    }, 60_000);
  }

  /** Signs in on a fresh page at `viewport` and waits for the wallets. */
  async function signedIn(viewport: { width: number; height: number }) {
    const opened = await open(viewport);
    await opened.page.getByLabel('Email').fill(user.email);
    await opened.page.getByLabel('Password').fill(user.password);
    await opened.page.getByRole('button', { name: 'Sign in' }).click();
    await opened.page.getByRole('heading', { name: 'Wallets' }).waitFor();
    return opened;
  }

  it('downloads each list as CSV with its Export CSV button: the file the API sends', async () => {
    const { context, page } = await signedIn(DESKTOP);
    await page.getByRole('link', { name: wallet.name }).click();
    await page.locator('tr[data-charge]').first().waitFor();
    const saved: Record<string, string> = {};
    for (const [kind, heading] of [
      ['transactions', 'tx-title'],
      ['charges', 'charges-title'],
      ['payouts', 'payouts-title'],
    ] as const) {
      const button = page.locator(`section[aria-labelledby="${heading}"]`).getByRole('button', { name: 'Export CSV' });
      const [download] = await Promise.all([page.waitForEvent('download'), button.click()]);
      expect(download.suggestedFilename(), kind).toBe(`wallet-${wallet.id}-${kind}.csv`);
      saved[kind] = readFileSync((await download.path())!, 'utf8');
      const api = await t.request('GET', `/api/wallet/${wallet.id}/export/${kind}.csv`, { token: user.token });
      expect(saved[kind], kind).toBe(api.text);
    }
    // The rows the page shows: the confirmed transfer's hash; the charge of 0.125 ETH.
    expect(saved.transactions).toContain(`,${txHash},`);
    expect(saved.charges).toContain(',0.125000000000000000,');
    expect(saved.payouts!.split('\r\n')[0]).toBe(
      'payout_id,item_id,reference,address,token,amount,status,tx_hash,failure_reason,created_at',
    );
    await accessible(page, 'wallet with export buttons');
    await page.screenshot({ path: join(ARTIFACTS, 'dashboard-export-desktop.png') });
    await context.close();
  }, 60_000);

  it('refunds a paid charge from its page: its payment, address kind and sweep shown, the refund sent (checked through the API)', async () => {
    const charge = (
      await t.request('POST', `/api/wallet/${wallet.id}/charge/create`, {
        token: user.token,
        body: { amount: '0.2', token: 'ETH', expires: 900 },
      })
    ).body.data;
    expect((await t.request('POST', `/api/pay/${charge.uuid}/devnet`)).status).toBe(200);
    const paid = await waitFor(
      async () => {
        const c = (await t.request('GET', `/api/wallet/${wallet.id}/charge/show/${charge.id}`, { token: user.token })).body.data;
        return c.status === 'paid' && c.sweeps.length > 0 && c.sweeps.every((x: any) => x.status === 'confirmed') ? c : null;
      },
      { message: 'charge paid and swept', timeoutMs: 30_000 },
    );
    const { context, page } = await signedIn(DESKTOP);
    await page.evaluate((hash) => (window.location.hash = hash), `#/wallet/${wallet.id}/charge/${charge.id}`);
    await page.getByRole('heading', { name: `Charge ${charge.id}` }).waitFor();
    await page.locator(`li[data-payment="${paid.payments[0].tx_hash}"]`).waitFor();
    // Its address's kind (a native charge keeps a keyed address) and its sweep to the main address.
    expect(await page.locator(`[data-deposit-kind="${paid.deposit_kind}"]`).textContent()).toBe('keyed address');
    const sweep = page.locator(`li[data-sweep="${paid.sweeps[0].tx_hash}"]`);
    expect(await sweep.locator('.amount').getAttribute('title')).toBe(paid.sweeps[0].amount);
    expect(await sweep.locator('.badge').textContent()).toBe('confirmed');
    await accessible(page, 'charge');
    await page.getByLabel(/Refund amount/).fill('0.05');
    await page.getByLabel(/Refund address/).fill(RECIPIENT);
    // The refund asks first, naming the amount and the address; Cancel sends nothing.
    await page.getByRole('button', { name: 'Refund', exact: true }).click();
    await page.getByRole('dialog').getByRole('button', { name: 'Cancel' }).click();
    const none = (await t.request('GET', `/api/wallet/${wallet.id}/charge/show/${charge.id}`, { token: user.token })).body.data;
    expect(none.refunds).toEqual([]);
    await page.getByRole('button', { name: 'Refund', exact: true }).click();
    await page
      .getByRole('dialog')
      .getByRole('button', { name: `Refund 0.05 ETH to ${RECIPIENT.slice(0, 10)}…${RECIPIENT.slice(-8)}`, exact: true })
      .click();
    await page.getByRole('status').filter({ hasText: 'Refund of 0.05 ETH sent' }).waitFor();
    await page.locator('li[data-refund]').first().waitFor();
    await shots(page, 'charge');
    const api = (await t.request('GET', `/api/wallet/${wallet.id}/charge/show/${charge.id}`, { token: user.token })).body.data;
    expect(api.refunds.map((r: any) => [r.amount, r.address])).toEqual([['0.050000000000000000', RECIPIENT]]);
    await context.close();
  }, 60_000);

  it('approves a payout awaiting approval (checked through the API)', async () => {
    expect(
      (await t.request('POST', `/api/wallet/${wallet.id}/policy`, { token: user.token, body: { approval_above: { ETH: '0.1' } } })).status,
    ).toBe(200);
    const payout = (
      await t.request('POST', `/api/wallet/${wallet.id}/payout/create`, {
        token: user.token,
        body: { token: 'ETH', items: [{ address: RECIPIENT, amount: '0.15', reference: 'dash-1' }] },
      })
    ).body.data;
    expect(payout.status).toBe('awaiting_approval');
    const { context, page } = await signedIn(DESKTOP);
    await page.getByRole('link', { name: wallet.name }).click();
    await page.getByRole('button', { name: `Approve payout ${payout.id}` }).click();
    await page.getByRole('dialog').getByRole('button', { name: 'Approve 0.15 ETH to 1 recipient' }).click();
    await page
      .getByRole('status')
      .filter({ hasText: `Payout ${payout.id} approved.` })
      .waitFor();
    await page.getByText(`Payout ${payout.id}: 0.15 ETH to 1 recipient ·`).waitFor();
    await page.screenshot({ path: join(ARTIFACTS, 'dashboard-payouts-desktop.png'), fullPage: true });
    const after = await waitFor(
      async () => {
        const p = (await t.request('GET', `/api/wallet/${wallet.id}/payout/${payout.id}`, { token: user.token })).body.data;
        return p.status === 'completed' ? p : null;
      },
      { message: 'payout completed' },
    );
    expect(after.items[0].status).toBe('confirmed');
    await context.close();
  }, 60_000);

  it('approves a transaction awaiting approval; shows the 30-day chart; accepts a reconciliation difference (checked through the API)', async () => {
    // approval_above ETH 0.1 since the payout test; anvil_setBalance at the start is a difference reconciliation reports.
    const held = (
      await t.request('POST', `/api/wallet/${wallet.id}/transaction/create`, {
        token: user.token,
        body: { amount: '0.12', token: 'ETH', address: RECIPIENT },
      })
    ).body.data;
    expect(held.status).toBe('awaiting_approval');
    const { context, page } = await signedIn(DESKTOP);
    await page.getByRole('link', { name: wallet.name }).click();
    await page.getByRole('button', { name: `Approve transaction ${held.id}` }).click();
    await page
      .getByRole('dialog')
      .getByRole('button', { name: `Approve transfer of 0.12 ETH to ${RECIPIENT.slice(0, 10)}…${RECIPIENT.slice(-8)}` })
      .click();
    await page
      .getByRole('status')
      .filter({ hasText: `Transaction ${held.id} approved.` })
      .waitFor();
    await waitForStatus(t, user, wallet.id, held.id, 'confirmed');

    const list = (await t.request('GET', `/api/wallet/${wallet.id}/transaction?limit=1000`, { token: user.token })).body.data as {
      type: string;
      status: string;
      amount: string;
    }[];
    const sum = (pred: (x: { type: string }) => boolean) =>
      list.filter((x) => x.status === 'confirmed' && pred(x)).reduce((s, x) => s + BigInt(x.amount.replace('.', '')), 0n);
    const asText = (u: bigint) => {
      const s = u.toString().padStart(19, '0');
      return `${s.slice(0, -18)}.${s.slice(-18)}`.replace(/0+$/, '').replace(/\.$/, '');
    };
    await page.reload();
    const chart = page.locator('figure[data-chart="ETH"] svg');
    await chart.waitFor();
    expect(await chart.getAttribute('aria-label')).toBe(
      `ETH: received ${asText(sum((x) => x.type === 'receipt'))}, sent ${asText(sum((x) => x.type !== 'receipt'))} in the last 30 days`,
    );

    const rec = (await t.request('GET', `/api/wallet/${wallet.id}/reconciliation`, { token: user.token })).body.data;
    expect(rec.ok).toBe(false);
    await page.locator('[data-reconciliation-ok="false"]').waitFor();
    await page.locator('li[data-difference="ETH"]').first().waitFor();
    await accessible(page, 'wallet with reconciliation');
    await shots(page, 'wallet-full');
    await page.getByLabel('Note for the adjustment').fill('funded by anvil_setBalance in the test');
    await page.getByRole('button', { name: 'Accept' }).click();
    await page.getByRole('status').filter({ hasText: 'The differences were accepted as adjustments.' }).waitFor();
    await page.locator('[data-reconciliation-ok="true"]').waitFor();
    const after = (await t.request('GET', `/api/wallet/${wallet.id}/reconciliation`, { token: user.token })).body.data;
    expect(after.ok).toBe(true);
    expect(after.adjustments.map((a: { note: string }) => a.note)).toContain('funded by anvil_setBalance in the test');
    await context.close();
  }, 60_000);

  it('shows the policy, adds an address to the allowlist and removes it (checked through the API)', async () => {
    const { context, page } = await signedIn(DESKTOP);
    await page.getByRole('link', { name: wallet.name }).click();
    const limits = page.getByLabel('Limits', { exact: true });
    await limits.waitFor();
    expect(await limits.locator('div', { hasText: 'Approval above' }).locator('dd').textContent()).toBe('0.1 ETH');
    await page.getByLabel('Address to allow').fill(RECIPIENT.toLowerCase());
    await page.getByLabel('Label').fill('Supplier GmbH');
    await page.getByRole('button', { name: 'Add to allowlist' }).click();
    await page
      .getByRole('status')
      .filter({ hasText: `${RECIPIENT} added to the allowlist.` })
      .waitFor();
    const listed = (await t.request('GET', `/api/wallet/${wallet.id}/allowlist`, { token: user.token })).body.data;
    expect(listed.map((a: { address: string; label: string }) => [a.address, a.label])).toEqual([[RECIPIENT, 'Supplier GmbH']]);
    await accessible(page, 'wallet with policy');
    await page.getByRole('button', { name: 'Remove Supplier GmbH from the allowlist' }).click();
    await page.getByRole('status').filter({ hasText: 'Removed from the allowlist.' }).waitFor();
    expect((await t.request('GET', `/api/wallet/${wallet.id}/allowlist`, { token: user.token })).body.data).toEqual([]);
    // The limits: a daily limit set from the page, then removed; approval_above left as it was.
    const policy = () => t.request('GET', `/api/wallet/${wallet.id}/policy`, { token: user.token }).then((r) => r.body.data);
    await page.getByLabel(/^Daily limit/).fill('5');
    await page.getByRole('button', { name: 'Save policy' }).click();
    await page.getByRole('status').filter({ hasText: 'The policy was saved.' }).waitFor();
    expect(await policy()).toMatchObject({
      daily: { ETH: '5.000000000000000000' },
      approval_above: { ETH: '0.100000000000000000' },
      allowlist_only: false,
    });
    await expect.poll(() => limits.locator('div', { hasText: 'Daily' }).locator('dd').textContent()).toBe('5 ETH');
    await page.getByLabel(/^Daily limit/).fill('none');
    await page.getByRole('button', { name: 'Save policy' }).click();
    await expect.poll(async () => (await policy()).daily).toEqual({});
    await accessible(page, 'wallet with the limits form');
    await context.close();
  }, 60_000);

  it('funds the wallet from the local devnet (checked on the chain and through the API)', async () => {
    const before = BigInt(await chain.rpc<string>('eth_getBalance', [wallet.address, 'latest']));
    const { context, page } = await signedIn(PHONE);
    await page.getByRole('link', { name: wallet.name }).click();
    await page.getByLabel('ETH from the local devnet').fill('1.25');
    await page.getByRole('button', { name: 'Fund from devnet' }).click();
    await page.getByRole('status').filter({ hasText: 'Funded with 1.25 ETH from the devnet.' }).waitFor();
    expect(BigInt(await chain.rpc<string>('eth_getBalance', [wallet.address, 'latest']))).toBe(before + parseEther('1.25'));
    const receipts = await waitFor(
      async () => {
        const list = (await t.request('GET', `/api/wallet/${wallet.id}/transaction`, { token: user.token })).body.data;
        return list.find((x: any) => x.type === 'receipt' && x.amount === '1.250000000000000000' && x.status === 'confirmed') ?? null;
      },
      { message: 'the funding recorded as a receipt' },
    );
    expect(receipts.symbol).toBe('ETH');
    await accessible(page, 'wallet with devnet funding');
    await context.close();
  }, 60_000);

  it('shows the events feed, newest first (checked through the API)', async () => {
    const { context, page } = await signedIn(PHONE);
    await page.getByRole('link', { name: 'Events' }).click();
    await page.getByRole('heading', { name: 'Events' }).waitFor();
    let newest = 0;
    for (let after = 0; ;) {
      const r = await t.request('GET', `/api/events?after=${after}&limit=1000`, { token: user.token });
      if (r.body.data.length > 0) newest = r.body.data[r.body.data.length - 1].id;
      if (r.body.data.length < 1000) break;
      after = Number(r.headers.get('x-next-cursor'));
    }
    const first = page.locator('li[data-event]').first();
    await first.waitFor();
    expect(Number(await first.getAttribute('data-event'))).toBe(newest);
    expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(PHONE.width);
    await accessible(page, 'events');
    await shots(page, 'events', false);
    await context.close();
  }, 60_000);

  it('retries a failed delivery and sends a test (checked through the API and at the receiver)', async () => {
    const receiver = await startReceiver();
    try {
      let failing = true;
      receiver.on('/hook', () => (failing ? { status: 500, body: 'down' } : { status: 200, body: 'ok' }));
      const hook = (
        await t.request('POST', `/api/wallet/${wallet.id}/webhook/create`, {
          token: user.token,
          body: { url: `${receiver.url}/hook`, type: 'transaction', events: ['*'] },
        })
      ).body.data;
      const sent = await t.request('POST', `/api/wallet/${wallet.id}/transaction/create`, {
        token: user.token,
        body: { amount: '0.01', token: 'ETH', address: RECIPIENT },
      });
      expect(sent.status, sent.text).toBe(200);
      const deliveries = (q = '') => t.request('GET', `/api/wallet/${wallet.id}/webhook/${hook.id}/deliveries${q}`, { token: user.token });
      const failed = await waitFor(async () => (await deliveries()).body.data.find((d: any) => d.response_status === 500) ?? null, {
        message: 'a failed delivery',
      });
      failing = false;
      const { context, page } = await signedIn(DESKTOP);
      await page.getByRole('link', { name: wallet.name }).click();
      const before = receiver.to('/hook').length;
      await page.getByRole('button', { name: `Retry delivery ${failed.id}` }).click();
      await page
        .getByRole('status')
        .filter({ hasText: `Delivery ${failed.id} retried: done.` })
        .waitFor();
      const delivered = await waitFor(
        async () => {
          const d = (await deliveries()).body.data.find((x: any) => x.id === failed.id);
          return d.status === 'delivered' ? d : null;
        },
        { timeoutMs: 5_000, message: 'the retried delivery delivered' },
      );
      expect(delivered.response_status).toBe(200);
      expect(receiver.to('/hook').length).toBeGreaterThan(before);
      // Its attempts: the failed one(s), then the 200 of the retry.
      await page.reload();
      await page.getByRole('button', { name: `Attempts of delivery ${failed.id}` }).click();
      const attempts = page.locator(`ol[data-attempts="${failed.id}"] li`);
      await attempts.last().waitFor();
      const shown = await attempts.allTextContents();
      const api = (await t.request('GET', `/api/wallet/${wallet.id}/webhook/${hook.id}/deliveries/${failed.id}`, { token: user.token }))
        .body.data.attempts;
      expect(shown.length).toBe(api.length);
      expect(shown[0]).toContain('HTTP 500');
      expect(shown[shown.length - 1]).toContain('HTTP 200');
      await page.getByRole('button', { name: `Send test to webhook ${hook.id}` }).click();
      await page
        .getByRole('status')
        .filter({ hasText: `Test sent to webhook ${hook.id}: done.` })
        .waitFor();
      await waitFor(() => receiver.to('/hook').find((r) => JSON.parse(r.body).event === 'webhook.test') ?? null, {
        timeoutMs: 5_000,
        message: 'the test event at the receiver',
      });
      await accessible(page, 'wallet with webhooks');
      await page.screenshot({ path: join(ARTIFACTS, 'dashboard-webhooks-desktop.png'), fullPage: true });
      await context.close();
    } finally {
      await receiver.close();
    }
  }, 60_000);

  for (const [name, viewport] of [
    ['phone', PHONE],
    ['desktop', DESKTOP],
  ] as const) {
    it(`${name}: creates a key (shown once) and revokes it (checked through the API)`, async () => {
      const { context, page } = await signedIn(viewport);
      await page.getByRole('link', { name: 'API keys' }).click();
      await page.getByRole('heading', { name: 'API keys' }).waitFor();
      await page.getByLabel('Key name').fill(`till ${name}`);
      await page.getByRole('button', { name: 'Create key' }).click();
      const shown = page.locator('[data-created-key]');
      await shown.waitFor();
      const key = (await shown.textContent())!.trim();
      expect(key).toMatch(/^wps_[A-Za-z0-9_-]{43}$/);
      const listed = (await t.request('GET', '/api/auth/key', { token: user.token })).body.data.find((k: any) => k.name === `till ${name}`);
      expect([listed.scopes, listed.revoked_at]).toEqual([['read'], null]);
      expect((await t.request('GET', '/api/wallets', { token: key })).status).toBe(200);
      expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(viewport.width);
      await accessible(page, 'keys');
      await page.screenshot({ path: join(ARTIFACTS, `dashboard-keys-${name}.png`), fullPage: true });
      await page.getByRole('button', { name: `Revoke till ${name}` }).click();
      await page
        .getByRole('dialog')
        .getByRole('button', { name: `Revoke key till ${name}` })
        .click();
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

  it('returns to the sign-in form when the token is refused (401)', async () => {
    const { context, page } = await open(DESKTOP);
    await page.getByLabel('Email').fill(user.email);
    await page.getByLabel('Password').fill(user.password);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('heading', { name: 'Wallets' }).waitFor();
    const token = await page.evaluate(() => sessionStorage.getItem('wallet-service.token'));
    expect((await t.request('POST', '/api/auth/logout', { token: token! })).status).toBe(200);
    await page.evaluate(() => (window.location.hash = `#/wallet/1`));
    await page.getByRole('button', { name: 'Sign in' }).waitFor();
    expect(await page.evaluate(() => sessionStorage.length)).toBe(0);
    await context.close();
    // The refused request is the one expected console error of this test.
    failed.splice(0, failed.length, ...failed.filter((f) => !f.includes('401')));
  }, 60_000);

  it('made no request to another host, and none failed', () => {
    expect(foreign).toEqual([]);
    expect(failed.filter((f) => !f.includes('401 (Unauthorized)'))).toEqual([]);
  });
});
