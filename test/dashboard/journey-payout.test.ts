/**
 * An approver's journey in the dashboard (Chromium, at 390 px and at 1280 px): a wallet whose
 * policy holds what is over 0.5 ETH for approval; a payout of 1.1 ETH to 2 recipients and a
 * transfer of 0.7 ETH wait (the transfer's rule shown as it held it, the threshold raised since) (the payout made with `New payout`, a wrong address first told next to
 * it). The wallet page names every recipient and amount; Approve and Reject ask in a confirm
 * dialog whose button says what happens ("Approve 1.1 ETH to 2 recipients"); Cancel and Escape
 * change nothing (the API still shows both awaiting; focus back on the button); the approved
 * payout's page lists each item confirmed with its hash; the rejected transfer fails
 * `rejected_by_approver`. Every step is checked through the API; axe-core on each state;
 * screenshots test/artifacts/dash-approve-*.png.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser, Page } from 'playwright-core';
import { parseEther } from 'viem';
import { startTestApp, type TestApp, type TestUser } from '../helpers/app.js';
import { startTestChain, type TestChain } from '../helpers/chain.js';
import { waitFor } from '../helpers/wait.js';
import { RECIPIENT } from '../helpers/transfers.js';
import { launchChromium, signedIn, state, VIEWPORTS } from '../helpers/dashboard.js';

const EXPLORER = 'https://explorer.example';
const SECOND = '0x14dC79964da2C08b23698B3D3cc7Ca32193d9955';
const THIRD = '0x23618e81E3f5cdF7f54C3d65f7FBc0aBf5B21E8f';

describe('approving and rejecting in the dashboard', () => {
  let chain: TestChain;
  let t: TestApp;
  let user: TestUser;
  let browser: Browser;
  let wallet: { id: number; name: string; address: string };
  const troubles = { foreign: [] as string[], failed: [] as string[] };
  const get = async (path: string) => (await t.request('GET', path, { token: user.token })).body.data;

  beforeAll(async () => {
    chain = await startTestChain();
    t = await startTestApp({ workers: true, env: { WATCHER_POLL_MS: '50', CHARGES_POLL_MS: '50' } });
    const networkId = await chain.register(t, { name: 'Local devnet' });
    await t.store.db.updateTable('networks').set({ block_explorer: EXPLORER }).where('id', '=', networkId).execute();
    user = await t.createUser();
    wallet = (await t.request('POST', '/api/wallet/create', { token: user.token, body: { name: 'Payroll', network_id: networkId } })).body
      .data;
    await chain.setBalance(wallet.address, parseEther('10'));
    const policy = await t.request('POST', `/api/wallet/${wallet.id}/policy`, {
      token: user.token,
      body: { approval_above: { ETH: '0.5' } },
    });
    expect(policy.status, policy.text).toBe(200);
    browser = await launchChromium();
  }, 90_000);

  afterAll(async () => {
    await browser?.close();
    await t?.close();
    await chain?.stop();
  });

  const setThreshold = async (eth: string) => {
    const policy = await t.request('POST', `/api/wallet/${wallet.id}/policy`, {
      token: user.token,
      body: { approval_above: { ETH: eth } },
    });
    expect(policy.status, policy.text).toBe(200);
  };

  /**
   * A transfer of 0.7 ETH to THIRD, held by the policy's 0.5 ETH; the threshold then raised to
   * 0.6 ETH (still under it, and under the payout's 1.1): the page names the 0.5 that held it.
   */
  async function heldTransfer(): Promise<number> {
    await setThreshold('0.5');
    const transfer = await t.request('POST', `/api/wallet/${wallet.id}/transaction/create`, {
      token: user.token,
      body: { amount: '0.7', token: 'ETH', address: THIRD },
    });
    expect(transfer.status, transfer.text).toBe(200);
    expect(transfer.body.data.status).toBe('awaiting_approval');
    expect(transfer.body.data.held_by).toEqual({ rule: 'approval_above', limit: '0.500000000000000000', token: 'ETH' });
    await setThreshold('0.6');
    return transfer.body.data.id;
  }

  const payouts = async () => (await get(`/api/wallet/${wallet.id}/payout?limit=100`)) as { id: number; status: string }[];

  /** `New payout` to RECIPIENT (0.6) and SECOND (0.5): a wrong address first, told next to it; the payout's id. */
  async function newPayout(page: Page, size: string): Promise<number> {
    const before = (await payouts()).length;
    await page.getByText('New payout', { exact: true }).click();
    await page.getByLabel('Address of recipient 1').fill(RECIPIENT);
    await page.getByLabel('Amount for recipient 1').fill('0.6');
    await page.getByLabel('Address of recipient 2').fill('0x14dC79964da2C08b23698B3D3cc7Ca32193d995');
    await page.getByLabel('Amount for recipient 2').fill('0.5');
    await page.getByRole('button', { name: 'Create payout' }).click();
    const wrong = page.getByLabel('Address of recipient 2');
    await expect.poll(() => wrong.getAttribute('aria-invalid')).toBe('true');
    expect(await page.locator('#payout-1-address-error').textContent()).toBe('The address must be a valid address.');
    expect(await page.evaluate(() => document.activeElement?.id)).toBe('payout-1-address');
    expect((await payouts()).length).toBe(before);
    await state(page, `dash-approve-new-payout-${size}`);
    await wrong.fill(SECOND);
    await page.getByRole('button', { name: 'Create payout' }).click();
    const created = page.getByRole('status').filter({ hasText: /^Payout \d+ created: 1\.1 ETH to 2 recipients, awaiting approval\.$/ });
    await created.waitFor();
    const id = Number(/^Payout (\d+)/.exec((await created.textContent())!)![1]);
    const p = await get(`/api/wallet/${wallet.id}/payout/${id}`);
    expect([p.status, p.total, p.items.map((i: any) => [i.address, i.amount])]).toEqual([
      'awaiting_approval',
      '1.100000000000000000',
      [
        [RECIPIENT, '0.600000000000000000'],
        [SECOND, '0.500000000000000000'],
      ],
    ]);
    return id;
  }

  /** The open dialog: its name, its confirm button's words, and whether focus is inside it. */
  async function dialogOf(page: Page, title: string) {
    const dialog = page.getByRole('dialog', { name: title });
    await dialog.waitFor();
    expect(await page.evaluate(() => document.activeElement?.closest('dialog') !== null)).toBe(true);
    return dialog;
  }

  for (const [size, viewport] of VIEWPORTS) {
    it(`${size}: shows who is paid, asks before approving or rejecting, and Cancel changes nothing`, async () => {
      const ids = { transfer: await heldTransfer(), payout: 0 };
      const { context, page } = await signedIn(browser, t, user, viewport, troubles);
      await page.getByRole('link', { name: wallet.name }).click();
      ids.payout = await newPayout(page, size);

      // The payout awaiting approval: both recipients, each with the amount.
      const listed = page.locator(`li[data-payout="${ids.payout}"]`);
      await listed.locator(`[data-recipient="${RECIPIENT}"]`).waitFor();
      expect(
        await listed
          .getByRole('list', { name: `Recipients of payout ${ids.payout}` })
          .locator('li')
          .allTextContents(),
      ).toEqual([`${RECIPIENT} 0.6 ETH`, `${SECOND} 0.5 ETH`]);
      // The transfer awaiting approval: its recipient in full (linked to the explorer), amount and the
      // rule that held it (the threshold at the hold, not the policy's now).
      const transfer = page.locator(`li[data-held="${ids.transfer}"]`);
      expect(await transfer.locator(`[data-recipient="${THIRD}"] a`).getAttribute('href')).toBe(`${EXPLORER}/address/${THIRD}`);
      expect(await transfer.locator('.amount').textContent()).toBe('0.7 ETH');
      expect(await transfer.locator('[data-held-because]').textContent()).toBe(
        'Over the approval threshold of 0.5 ETH (spending policy, "Approval above").',
      );
      await state(page, `dash-approve-held-${size}`);

      // Approve asks first, naming the total and each recipient; Cancel, then Escape, leave it awaiting.
      for (const close of ['Cancel', 'Escape'] as const) {
        await page.getByRole('button', { name: `Approve payout ${ids.payout}` }).click();
        const dialog = await dialogOf(page, `Approve payout ${ids.payout}?`);
        expect(await dialog.getByRole('button', { name: 'Approve 1.1 ETH to 2 recipients' }).count()).toBe(1);
        expect(await dialog.locator('[data-recipient]').evaluateAll((els) => els.map((e) => e.textContent))).toEqual([RECIPIENT, SECOND]);
        if (close === 'Cancel') {
          await state(page, `dash-approve-confirm-payout-${size}`, false);
          await dialog.getByRole('button', { name: 'Cancel' }).click();
        } else await page.keyboard.press('Escape');
        await dialog.waitFor({ state: 'detached' });
        expect(await page.evaluate(() => document.activeElement?.getAttribute('aria-label')), close).toBe(`Approve payout ${ids.payout}`);
        expect((await get(`/api/wallet/${wallet.id}/payout/${ids.payout}`)).status, close).toBe('awaiting_approval');
      }

      await page.getByRole('button', { name: `Approve payout ${ids.payout}` }).click();
      await (
        await dialogOf(page, `Approve payout ${ids.payout}?`)
      )
        .getByRole('button', { name: 'Approve 1.1 ETH to 2 recipients' })
        .click();
      await page
        .getByRole('status')
        .filter({ hasText: `Payout ${ids.payout} approved.` })
        .waitFor();
      const done = await waitFor(
        async () => {
          const p = await get(`/api/wallet/${wallet.id}/payout/${ids.payout}`);
          return p.status === 'completed' ? p : null;
        },
        { message: 'the approved payout completed', timeoutMs: 30_000 },
      );

      // Its own page: every item, confirmed, with its hash on the explorer.
      await listed.getByRole('link', { name: `Payout ${ids.payout}` }).click();
      await page.getByRole('heading', { name: `Payout ${ids.payout}` }).waitFor();
      for (const item of done.items as { id: number; address: string; amount: string; tx_hash: string }[]) {
        const row = page.locator(`tr[data-item="${item.id}"]`);
        await expect.poll(() => row.locator('.badge').textContent(), { timeout: 10_000 }).toBe('confirmed');
        expect(await row.locator('[data-recipient]').textContent()).toBe(item.address);
        expect(await row.locator('.amount').getAttribute('title')).toBe(item.amount);
        expect(await row.getByRole('link', { name: `transaction ${item.tx_hash} on the explorer` }).getAttribute('href')).toBe(
          `${EXPLORER}/tx/${item.tx_hash}`,
        );
      }
      await state(page, `dash-approve-payout-${size}`);

      // Reject the transfer: the dialog names it; Escape first leaves it awaiting.
      await page.getByRole('link', { name: '← Wallet' }).click();
      const rejectWords = `Reject transfer of 0.7 ETH to ${THIRD.slice(0, 10)}…${THIRD.slice(-8)}`;
      await page.getByRole('button', { name: `Reject transaction ${ids.transfer}` }).click();
      const dialog = await dialogOf(page, `Reject transaction ${ids.transfer}?`);
      expect(await dialog.locator('[data-recipient]').textContent()).toBe(THIRD);
      await state(page, `dash-approve-confirm-reject-${size}`, false);
      await page.keyboard.press('Escape');
      await dialog.waitFor({ state: 'detached' });
      expect((await get(`/api/wallet/${wallet.id}/transaction/show/${ids.transfer}`)).status).toBe('awaiting_approval');
      await page.getByRole('button', { name: `Reject transaction ${ids.transfer}` }).click();
      await (await dialogOf(page, `Reject transaction ${ids.transfer}?`)).getByRole('button', { name: rejectWords }).click();
      await page
        .getByRole('status')
        .filter({ hasText: `Transaction ${ids.transfer} rejected.` })
        .waitFor();
      const rejected = await get(`/api/wallet/${wallet.id}/transaction/show/${ids.transfer}`);
      expect([rejected.status, rejected.failure_reason]).toEqual(['failed', 'rejected_by_approver']);
      // The list is read again after the decision: the row leaves the held ones once it is back.
      await expect.poll(() => page.locator(`li[data-held="${ids.transfer}"]`).count()).toBe(0);
      await context.close();
    }, 90_000);
  }

  it('made no request to another host, and none failed but the wrong address of each journey', () => {
    const refused = 'console: Failed to load resource: the server responded with a status of 422 (Unprocessable Entity)';
    expect(troubles).toEqual({ foreign: [], failed: [refused, refused] });
  });
});
