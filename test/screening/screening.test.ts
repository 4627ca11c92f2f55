/**
 * Screening (docs/money-out.md, "Screening": SCREENING_FILE), through HTTP with a real
 * anvil, on SQLite and (DATABASE_URL) PostgreSQL:
 * - money out to a listed address is 400 `Address is blocked by screening` with nothing recorded
 *   (no transaction, payout, refund or event): a transfer (the list's case does not matter), a
 *   contract call to a listed contract, a token call whose recipient or spender is listed, a payout with one listed item, a refund with a listed
 *   address, and a refund claim given a listed address;
 * - the file is read again when it changes: an address added is refused at the next request a
 *   second later, a transfer held for approval to it is no longer approved (it stays held), and a
 *   bad version of the file keeps the last good list with a warning;
 * - money in from a listed address (native, and ERC-20) is kept, listed `screened: true`, not
 *   counted toward `paid` (the charge stays pending), told by `charge.screened` exactly once; an
 *   unlisted payer then pays the charge, which is swept with both payments;
 * - a screened payment is not refundable: a charge paid only by a listed sender answers a refund
 *   (claim or address) 400 `Nothing to refund`, and with an unlisted payer too the refunds are
 *   bound by the unlisted payment alone.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createWalletClient, erc20Abi, getAddress, http, parseEther, type Address, type Hex } from 'viem';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { foundry } from 'viem/chains';
import { STAT_EVERY_MS } from '../../src/modules/screening/screening.js';
import { ManualClock, startTestApp, type TestApp, type TestUser } from '../helpers/app.js';
import { startTestChain, type TestChain } from '../helpers/chain.js';
import { deployErc20, deployForwarder, mintErc20 } from '../helpers/erc20.js';
import { waitFor } from '../helpers/wait.js';
import { chargeApi, clockToChain, pay, PAYER } from '../charges/support.js';
import { OUTSIDER, publicClient, sendFromOutsider, waitForCursor } from '../helpers/transfers.js';

const BLOCKED = { status: 'error', message: 'Address is blocked by screening', data: null };
/** Listed in lowercase; requests name it checksummed. */
const LISTED = privateKeyToAccount(generatePrivateKey()).address;
/** Not listed at the start; added by the reload test. */
const LATER = privateKeyToAccount(generatePrivateKey()).address;
const freshAddress = (): Address => privateKeyToAccount(generatePrivateKey()).address;

const clock = new ManualClock();
let chain: TestChain;
let t: TestApp;
let user: TestUser;
let networkId: number;
let listFile: string;
let forwarder: Address;

/** The list as the file holds it: PAYER (a charge payer), LISTED, the forwarder contract, and `more`. */
function writeList(more: string[] = []): void {
  const lines = ['# blocked by the test', `${PAYER.address}   # a payer`, LISTED.toLowerCase(), '', forwarder, ...more];
  writeFileSync(listFile, `${lines.join('\n')}\n`);
}

/** Past the throttle of the file's look (STAT_EVERY_MS), so the next use reads a change. */
const afterNextLook = () => new Promise((r) => setTimeout(r, STAT_EVERY_MS + 150));

beforeAll(async () => {
  chain = await startTestChain();
  forwarder = await deployForwarder(chain.rpcUrl);
  listFile = join(mkdtempSync(join(tmpdir(), 'screening-')), 'blocked.txt');
  writeList();
  t = await startTestApp({ clock, env: { SCREENING_FILE: listFile, CHARGES_POLL_MS: '50', WATCHER_POLL_MS: '50' } });
  networkId = await chain.register(t);
  user = await t.createUser();
  t.startWorkers();
  await waitForCursor(t, networkId);
});

afterAll(async () => {
  await t?.close();
  await chain?.stop();
});

async function fundedWallet(eth = '10'): Promise<{ id: number; address: Address }> {
  const w = (
    await t.request('POST', '/api/wallet/create', { token: user.token, body: { name: `shop-${Date.now()}`, network_id: networkId } })
  ).body.data;
  await chain.setBalance(w.address, parseEther(eth));
  return w;
}

const post = (path: string, body: unknown) => t.request('POST', path, { token: user.token, body });
const list = async (path: string) => (await t.request('GET', path, { token: user.token })).body.data as any[];
/** The wallet's transactions but receipts (a charge's sweep arrives as one). */
const outgoing = async (walletId: number) => (await list(`/api/wallet/${walletId}/transaction`)).filter((x) => x.type !== 'receipt');
const eventsNamed = async (event: string) =>
  (await t.request('GET', `/api/events?event=${event}&limit=1000`, { token: user.token })).body.data as any[];

describe('money out to a listed address', () => {
  it('refuses a transfer, whatever the case of the address, and records nothing', async () => {
    const w = await fundedWallet();
    for (const address of [getAddress(LISTED), LISTED.toLowerCase(), getAddress(PAYER.address)]) {
      const res = await post(`/api/wallet/${w.id}/transaction/create`, { amount: '0.1', token: 'ETH', address });
      expect(res.status, address).toBe(400);
      expect(res.body).toEqual(BLOCKED);
    }
    // With an Idempotency-Key too: refused, and a retry is refused again.
    const keyed = await t.request('POST', `/api/wallet/${w.id}/transaction/create`, {
      token: user.token,
      headers: { 'idempotency-key': 'screened-1' },
      body: { amount: '0.1', token: 'ETH', address: LISTED },
    });
    expect(keyed.body).toEqual(BLOCKED);
    expect(await list(`/api/wallet/${w.id}/transaction`)).toEqual([]);
    expect((await eventsNamed('transaction.created')).filter((e) => e.wallet_id === w.id)).toEqual([]);
    // An unlisted address is sent to as ever.
    const ok = await post(`/api/wallet/${w.id}/transaction/create`, { amount: '0.1', token: 'ETH', address: freshAddress() });
    expect(ok.status).toBe(200);
  });

  it('refuses a contract call to a listed contract and records nothing', async () => {
    const w = await fundedWallet();
    const res = await post(`/api/wallet/${w.id}/transaction/create`, {
      amount: '0.01',
      token: 'ETH',
      address: forwarder,
      function: 'forward(address)',
      args: [freshAddress()],
    });
    expect(res.status).toBe(400);
    expect(res.body).toEqual(BLOCKED);
    expect(await list(`/api/wallet/${w.id}/transaction`)).toEqual([]);
  });

  it('refuses a token call whose recipient or spender is listed (transfer, approve), and records nothing', async () => {
    const w = await fundedWallet();
    const token = await deployErc20(chain.rpcUrl, { name: 'Screened USD', symbol: 'SUSD', decimals: 6 });
    expect((await post(`/api/wallet/${w.id}/token/add`, { contract: token })).status).toBe(200);
    await mintErc20(chain.rpcUrl, token, w.address, 1_000_000n);
    for (const fn of ['transfer(address,uint256)', 'approve(address,uint256)']) {
      const res = await post(`/api/wallet/${w.id}/transaction/create`, {
        amount: '0',
        token: 'ETH',
        address: token,
        function: fn,
        args: [LISTED, '1000'],
      });
      expect([res.status, res.body], fn).toEqual([400, BLOCKED]);
    }
    expect(await list(`/api/wallet/${w.id}/transaction`)).toEqual([]);
    const ok = await post(`/api/wallet/${w.id}/transaction/create`, {
      amount: '0',
      token: 'ETH',
      address: token,
      function: 'transfer(address,uint256)',
      args: [freshAddress(), '1000'],
    });
    expect(ok.status, ok.text).toBe(200);
  });

  it('refuses a payout with one listed item, before anything is recorded', async () => {
    const w = await fundedWallet();
    const items = [
      { address: freshAddress(), amount: '0.01', reference: 'a-1' },
      { address: getAddress(LISTED), amount: '0.01', reference: 'a-2' },
      { address: freshAddress(), amount: '0.01', reference: 'a-3' },
    ];
    const res = await post(`/api/wallet/${w.id}/payout/create`, { token: 'ETH', items });
    expect(res.status).toBe(400);
    expect(res.body).toEqual(BLOCKED);
    expect(await list(`/api/wallet/${w.id}/payout`)).toEqual([]);
    expect(await list(`/api/wallet/${w.id}/transaction`)).toEqual([]);
    // Its references were not taken: the same payout without the listed item goes through.
    const ok = await post(`/api/wallet/${w.id}/payout/create`, { token: 'ETH', items: [items[0], items[2]] });
    expect(ok.status).toBe(200);
  });

  it('refuses a refund to a listed address, and a claim given one; the claim stays claimable', async () => {
    const w = await fundedWallet('1');
    const api = chargeApi(t, w.id, user.token);
    await clockToChain(clock, chain);
    const c = await api.create({ amount: '0.2', token: 'ETH', expires: 3600 });
    await sendFromOutsider(chain.rpcUrl, c.address, parseEther('0.2'));
    await api.until(c.id, (x) => x.status === 'paid', 'charge paid by an unlisted payer');

    const refused = await post(`/api/wallet/${w.id}/charge/${c.id}/refund`, { amount: '0.05', address: getAddress(LISTED) });
    expect(refused.status).toBe(400);
    expect(refused.body).toEqual(BLOCKED);
    expect((await api.show(c.id)).refunds).toEqual([]);
    expect(await outgoing(w.id)).toEqual([]);

    const claim = await post(`/api/wallet/${w.id}/charge/${c.id}/refund`, { amount: '0.05' });
    expect(claim.status).toBe(200);
    const uuid = claim.body.data.uuid as string;
    const claimed = await t.request('POST', `/api/refund/${uuid}`, { body: { address: LISTED.toLowerCase() } });
    expect(claimed.status).toBe(400);
    expect(claimed.body).toEqual(BLOCKED);
    expect((await t.request('GET', `/api/refund/${uuid}`)).body.data.status).toBe('claimable');
    expect(await outgoing(w.id)).toEqual([]);
  });
});

describe('the list file', () => {
  it('is read again when it changes: an added address is refused, and a held transfer to it is not approved', async () => {
    const w = await fundedWallet();
    expect((await post(`/api/wallet/${w.id}/policy`, { approval_above: { ETH: '0.5' } })).status).toBe(200);
    const held = await post(`/api/wallet/${w.id}/transaction/create`, { amount: '1', token: 'ETH', address: LATER });
    expect(held.body.data.status).toBe('awaiting_approval');
    expect((await post(`/api/wallet/${w.id}/transaction/create`, { amount: '0.1', token: 'ETH', address: LATER })).status).toBe(200);
    const before = (await list(`/api/wallet/${w.id}/transaction`)).length;

    writeList([LATER]);
    await afterNextLook();
    const refused = await post(`/api/wallet/${w.id}/transaction/create`, { amount: '0.1', token: 'ETH', address: LATER });
    expect(refused.body).toEqual(BLOCKED);
    expect((await list(`/api/wallet/${w.id}/transaction`)).length).toBe(before);

    const approve = await post(`/api/wallet/${w.id}/transaction/${held.body.data.id}/approve`, {});
    expect(approve.status).toBe(400);
    expect(approve.body).toEqual(BLOCKED);
    const shown = (await t.request('GET', `/api/wallet/${w.id}/transaction/show/${held.body.data.id}`, { token: user.token })).body.data;
    expect(shown).toMatchObject({ status: 'awaiting_approval', tx_hash: null });
  });

  it('keeps the last good list when a new version has a bad line, and takes the next good one', async () => {
    const w = await fundedWallet();
    writeFileSync(listFile, `${LISTED}\nnot an address\n`);
    await afterNextLook();
    expect((await post(`/api/wallet/${w.id}/transaction/create`, { amount: '0.1', token: 'ETH', address: LATER })).body).toEqual(BLOCKED);
    await waitFor(() => t.logs.some((l) => l.includes('screening list not reloaded') && l.includes('line 2 is not an address')), {
      message: 'the warning',
    });

    writeList();
    await afterNextLook();
    expect((await post(`/api/wallet/${w.id}/transaction/create`, { amount: '0.1', token: 'ETH', address: LATER })).status).toBe(200);
    expect((await post(`/api/wallet/${w.id}/transaction/create`, { amount: '0.1', token: 'ETH', address: LISTED })).body).toEqual(BLOCKED);
  });
});

describe('money in from a listed address', () => {
  it('is listed screened, not counted, told once; an unlisted payer then pays the charge, swept with both', async () => {
    const w = await fundedWallet('1');
    const api = chargeApi(t, w.id, user.token);
    await clockToChain(clock, chain);
    const c = await api.create({ amount: '0.3', token: 'ETH', expires: 3600 });

    const screenedHash = await pay(chain.rpcUrl, c.address, parseEther('0.3'));
    const seen = await api.until(c.id, (x) => x.payments.length === 1, 'the screened payment listed');
    expect(seen.payments).toEqual([
      expect.objectContaining({ tx_hash: screenedHash, from: PAYER.address, amount: '0.300000000000000000', screened: true, late: false }),
    ]);
    expect(seen).toMatchObject({ status: 'pending', paid_amount: '0.000000000000000000', paid_at: null });
    const told = await waitFor(
      async () => {
        const es = (await eventsNamed('charge.screened')).filter((e) => e.data.charge_id === c.id);
        return es.length > 0 ? es : null;
      },
      { message: 'charge.screened' },
    );
    expect(told[0].data).toMatchObject({ charge_id: c.id, status: 'pending', address: c.address, paid_amount: '0.000000000000000000' });
    expect(told[0].data.payment).toMatchObject({
      tx_hash: screenedHash,
      from: PAYER.address,
      amount: '0.300000000000000000',
      screened: true,
    });

    const paidHash = await sendFromOutsider(chain.rpcUrl, c.address, parseEther('0.3'));
    const paid = await api.until(c.id, (x) => x.status === 'paid', 'paid by the unlisted payer');
    expect(paid.paid_amount).toBe('0.300000000000000000');
    expect(paid.payments.map((p: any) => [p.tx_hash, p.from, p.screened])).toEqual([
      [screenedHash, PAYER.address, true],
      [paidHash, OUTSIDER.address, false],
    ]);
    expect((await eventsNamed('charge.paid')).filter((e) => e.data.charge_id === c.id).map((e) => e.data.paid_amount)).toEqual([
      '0.300000000000000000',
    ]);

    // Swept to the main address with the rest: nothing stays on the deposit address.
    const swept = await api.until(c.id, (x) => x.sweeps.some((s: any) => s.status === 'confirmed'), 'swept', 30_000);
    const moved = swept.sweeps.filter((s: any) => s.status === 'confirmed').reduce((a: bigint, s: any) => a + parseEther(s.amount), 0n);
    expect(moved > parseEther('0.3')).toBe(true); // both payments, less the sweep's fee
    expect(await publicClient(chain.rpcUrl).getBalance({ address: c.address })).toBe(0n);
    expect((await eventsNamed('charge.screened')).filter((e) => e.data.charge_id === c.id)).toHaveLength(1);
  });

  it('an ERC-20 payment from a listed sender likewise', async () => {
    const w = await fundedWallet('1');
    const usd = await deployErc20(chain.rpcUrl, { name: 'Test USD', symbol: 'TUSD', decimals: 6 });
    expect((await post(`/api/wallet/${w.id}/token/add`, { contract: usd })).status).toBe(200);
    const api = chargeApi(t, w.id, user.token);
    await clockToChain(clock, chain);
    const c = await api.create({ amount: '5', token: 'TUSD', expires: 3600 });
    await mintErc20(chain.rpcUrl, usd, PAYER.address, 5_000_000n);
    const wallet = createWalletClient({ account: PAYER, chain: foundry, transport: http(chain.rpcUrl) });
    const hash: Hex = await wallet.writeContract({ address: usd, abi: erc20Abi, functionName: 'transfer', args: [c.address, 5_000_000n] });

    const seen = await api.until(c.id, (x) => x.payments.length === 1, 'the screened token payment listed');
    expect(seen.payments).toEqual([
      expect.objectContaining({ tx_hash: hash, from: PAYER.address, amount: '5.000000000000000000', screened: true }),
    ]);
    expect(seen).toMatchObject({ status: 'pending', paid_amount: '0.000000000000000000' });
    await waitFor(async () => (await eventsNamed('charge.screened')).some((e) => e.data.charge_id === c.id), {
      message: 'charge.screened',
    });
    // Told once: more settlement ticks write nothing more.
    await new Promise((r) => setTimeout(r, 500));
    expect((await eventsNamed('charge.screened')).filter((e) => e.data.charge_id === c.id)).toHaveLength(1);
    expect((await api.show(c.id)).status).toBe('pending');
  });
});

describe('refunds of a screened payment', () => {
  const NOTHING = { status: 'error', message: 'Nothing to refund', data: null };
  const EXCEEDS = { status: 'error', message: 'Refund exceeds the amount received', data: null };
  const told = (chargeId: number) =>
    waitFor(async () => (await eventsNamed('charge.screened')).some((e) => e.data.charge_id === chargeId), {
      message: 'charge.screened (the payment confirmed)',
    });

  it('a charge paid only by a listed sender has nothing to refund, with a claim or an address', async () => {
    const w = await fundedWallet('1');
    const api = chargeApi(t, w.id, user.token);
    await clockToChain(clock, chain);
    const c = await api.create({ amount: '0.2', token: 'ETH', expires: 3600 });
    await pay(chain.rpcUrl, c.address, parseEther('0.2'));
    await told(c.id);

    for (const body of [{}, { amount: '0.1' }, { address: freshAddress() }, { amount: '0.2', address: freshAddress() }]) {
      const res = await post(`/api/wallet/${w.id}/charge/${c.id}/refund`, body);
      expect([res.status, res.body], JSON.stringify(body)).toEqual([400, NOTHING]);
    }
    expect((await api.show(c.id)).refunds).toEqual([]);
    expect(await outgoing(w.id)).toEqual([]);
  });

  it('with an unlisted payer too, the refunds are bound by the unlisted payment alone', async () => {
    const w = await fundedWallet('1');
    const api = chargeApi(t, w.id, user.token);
    await clockToChain(clock, chain);
    const c = await api.create({ amount: '0.1', token: 'ETH', expires: 3600 });
    await pay(chain.rpcUrl, c.address, parseEther('0.3'));
    await told(c.id);
    await sendFromOutsider(chain.rpcUrl, c.address, parseEther('0.1'));
    await api.until(c.id, (x) => x.status === 'paid', 'paid by the unlisted payer');

    // 0.4 arrived, 0.1 of it refundable: more is refused, with an address or as a claim.
    const over = await post(`/api/wallet/${w.id}/charge/${c.id}/refund`, { amount: '0.2', address: freshAddress() });
    expect([over.status, over.body]).toEqual([400, EXCEEDS]);
    expect((await post(`/api/wallet/${w.id}/charge/${c.id}/refund`, { amount: '0.11' })).body).toEqual(EXCEEDS);
    expect(await outgoing(w.id)).toEqual([]);

    // No amount: all that is left, the unlisted payment; then nothing more.
    const all = await post(`/api/wallet/${w.id}/charge/${c.id}/refund`, {});
    expect(all.status, all.text).toBe(200);
    expect(all.body.data).toMatchObject({ amount: '0.100000000000000000', status: 'claimable' });
    const more = await post(`/api/wallet/${w.id}/charge/${c.id}/refund`, { amount: '0.000000000000000001', address: freshAddress() });
    expect([more.status, more.body]).toEqual([400, EXCEEDS]);
    expect((await api.show(c.id)).refunds.map((r: any) => r.amount)).toEqual(['0.100000000000000000']);
  });
});
