/**
 * Permanent deposit addresses (docs/deposit-addresses.md), through HTTP against a real anvil with
 * the Sweeper deployed and probed as at the devnet's start:
 *
 * - create answers 200 with a keyless address; a repeated reference is 422 in the field-error
 *   envelope, as are a missing and a too long one; the list is paginated in headers; the
 *   backing charge rows are no charges (the charge list stays empty); another user's wallet and
 *   another wallet's address are 404;
 * - an ERC-20 payment and a native one to the address become two confirmed `receipt`
 *   transactions of the wallet carrying `deposit_address_id` and `reference` (in the list, the
 *   show and the `transaction.confirmed` events), the address's `received` totals add them up,
 *   and one Sweeper call of the main address sweeps both, leaving the address empty; the
 *   wallet's reconciliation agrees on every line;
 * - a second payment later to the same address (watched for good) is received and swept again;
 *   the follower reading the payments' blocks again records nothing twice;
 * - native coin forwarded by a contract (call traces) is an `internal` receipt, swept;
 * - a keyed address (made before the network had its Sweeper) is swept by its own transactions;
 * - a reorg removing a payment takes it out of `received` (`transaction.reorged`), and the next
 *   batch sweeps only what the chain holds.
 */
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { getAddress, parseEther, type Address } from 'viem';
import { ManualClock, startTestApp, type TestApp, type TestUser } from '../helpers/app.js';
import { startTestChain, type TestChain } from '../helpers/chain.js';
import { waitForCursor } from '../helpers/transfers.js';
import { waitFor } from '../helpers/wait.js';
import { deployErc20, deployForwarder, erc20BalanceOf, forwardValue, mintErc20 } from '../helpers/erc20.js';
import { findNetwork } from '../../src/modules/networks/networks.repository.js';
import { ensureDevnetSweeper } from '../../src/modules/networks/sweeper-deploy.js';
import { sweeperAddress } from '../../src/chain/sweeper.js';
import { balanceOf, events, pay } from '../charges/support.js';

const clock = new ManualClock();
let chain: TestChain;
let t: TestApp;
let alice: TestUser;
let bob: TestUser;
let networkId: number;
/** A wallet and its deposit address made before the network had a Sweeper: keyed. */
let keyedWallet: { id: number; address: Address };
let keyed: any;
const ZERO = '0.000000000000000000';
const DATETIME = /^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d$/;

beforeAll(async () => {
  chain = await startTestChain();
  // A batch goes once its oldest address has waited a minute of the test's clock (the test moves it).
  t = await startTestApp({ clock, env: { CHARGES_POLL_MS: '50', WATCHER_POLL_MS: '50', SWEEP_BATCH_MAX: '50', SWEEP_MAX_WAIT_S: '60' } });
  networkId = await chain.register(t);
  alice = await t.createUser();
  bob = await t.createUser();
  keyedWallet = (await t.request('POST', '/api/wallet/create', { token: alice.token, body: { name: 'Keyed', network_id: networkId } })).body
    .data;
  keyed = (await create(keyedWallet.id, { reference: 'keyed-1' })).body.data;
  await ensureDevnetSweeper(t.store.db, (await findNetwork(t.store.db, networkId))!, pino({ level: 'silent' }), Date.now());
  expect((await findNetwork(t.store.db, networkId))!.sweeper).toBe(sweeperAddress());
  t.startWorkers();
  await waitForCursor(t, networkId);
});

afterAll(async () => {
  await t?.close();
  await chain?.stop();
});

/** A wallet holding 10 ETH, paid to it from outside (a receipt, so its books start exact). */
async function fundedWallet(name: string, user = alice) {
  const wallet = (await t.request('POST', '/api/wallet/create', { token: user.token, body: { name, network_id: networkId } })).body
    .data as {
    id: number;
    address: Address;
  };
  await pay(chain.rpcUrl, wallet.address, parseEther('10'));
  return wallet;
}

const create = (walletId: number, body: unknown, token = alice.token) =>
  t.request('POST', `/api/wallet/${walletId}/deposit-address/create`, { token, body });
const show = (walletId: number, id: number, token = alice.token) =>
  t.request('GET', `/api/wallet/${walletId}/deposit-address/${id}`, { token });

describe('permanent deposit addresses', () => {
  it('create answers 200 with a keyless address; a repeated reference is 422; listed, paginated; invisible to others', async () => {
    const wallet = await fundedWallet('Deposits');
    const first = await create(wallet.id, { reference: 'customer-1', label: 'First customer' });
    expect(first.status, first.text).toBe(200);
    expect(first.body.message).toBe('Deposit address created');
    const a = first.body.data;
    expect(Object.keys(a).sort()).toEqual(['address', 'created_at', 'deposit_kind', 'id', 'label', 'reference']);
    expect([a.reference, a.label, a.deposit_kind]).toEqual(['customer-1', 'First customer', 'keyless']);
    expect(a.address).toBe(getAddress(a.address));
    expect(a.created_at).toMatch(DATETIME);

    const repeat = await create(wallet.id, { reference: 'customer-1' });
    expect(repeat.status).toBe(422);
    expect(repeat.body).toEqual({
      status: 'error',
      message: 'The reference has already been taken',
      data: { reference: ['The reference has already been taken.'] },
    });
    const missing = await create(wallet.id, { label: 'x' });
    expect([missing.status, missing.body.data]).toEqual([422, { reference: ['The reference field is required.'] }]);
    const long = await create(wallet.id, { reference: 'r'.repeat(129) });
    expect([long.status, long.body.data]).toEqual([422, { reference: ['The reference field must not be greater than 128 characters.'] }]);
    expect((await create(wallet.id, { reference: 'r'.repeat(128) })).status).toBe(200);

    const second = (await create(wallet.id, { reference: 'customer-2' })).body.data;
    expect(second.label).toBeNull();
    expect(second.address).not.toBe(a.address);

    // Newest first, two a page.
    const list = await t.request('GET', `/api/wallet/${wallet.id}/deposit-address?limit=2`, { token: alice.token });
    expect(list.status).toBe(200);
    expect(list.body.data.map((x: any) => x.reference)).toEqual(['customer-2', 'r'.repeat(128)]);
    expect([list.headers.get('x-pagination-total'), list.headers.get('x-pagination-pages')]).toEqual(['3', '2']);
    const page2 = await t.request('GET', `/api/wallet/${wallet.id}/deposit-address?limit=2&page=2`, { token: alice.token });
    expect(page2.body.data).toEqual([a]);

    // Shown with nothing received yet; no charge behind it is listed as one.
    const shown = await show(wallet.id, a.id);
    expect(shown.status).toBe(200);
    expect(shown.body.data).toEqual({ ...a, received: [], sweeps: [] });
    const charges = await t.request('GET', `/api/wallet/${wallet.id}/charge`, { token: alice.token });
    expect([charges.body.data, charges.headers.get('x-pagination-total')]).toEqual([[], '0']);

    for (const ref of ['999999', 'nope', '0']) {
      const res = await show(wallet.id, ref as unknown as number);
      expect([res.status, res.body]).toEqual([404, { status: 'error', message: 'Deposit address not found', data: null }]);
    }
    // Another user: the wallet itself is invisible on every route, and their own wallet does not reach it.
    for (const [method, path] of [
      ['GET', `/api/wallet/${wallet.id}/deposit-address/${a.id}`],
      ['GET', `/api/wallet/${wallet.id}/deposit-address`],
      ['POST', `/api/wallet/${wallet.id}/deposit-address/create`],
    ] as const) {
      const res = await t.request(method, path, { token: bob.token, body: method === 'POST' ? { reference: 'bob' } : undefined });
      expect([res.status, res.body.message]).toEqual([404, 'Wallet not found']);
    }
    const bobs = (await t.request('POST', '/api/wallet/create', { token: bob.token, body: { name: 'Bob', network_id: networkId } })).body
      .data;
    const cross = await show(bobs.id, a.id, bob.token);
    expect([cross.status, cross.body.message]).toEqual([404, 'Deposit address not found']);
    // An Idempotency-Key replays the stored 200, and makes no second address.
    const createWithKey = (headers: Record<string, string>) =>
      t.request('POST', `/api/wallet/${wallet.id}/deposit-address/create`, { token: alice.token, body: { reference: 'idem' }, headers });
    const once = await createWithKey({ 'Idempotency-Key': 'deposit-idem-1' });
    const twice = await createWithKey({ 'Idempotency-Key': 'deposit-idem-1' });
    expect([once.status, twice.status, twice.headers.get('idempotent-replayed')]).toEqual([200, 200, 'true']);
    expect(twice.body).toEqual(once.body);
    const total = await t.request('GET', `/api/wallet/${wallet.id}/deposit-address`, { token: alice.token });
    expect(total.headers.get('x-pagination-total')).toBe('4');
    // A reference is unique per wallet, not across wallets.
    expect((await create(bobs.id, { reference: 'customer-1' }, bob.token)).status).toBe(200);
  });

  it('payments become receipts with deposit_address_id and reference, are swept by a batch, and a later one too', async () => {
    const wallet = await fundedWallet('Receiving');
    const usd = await deployErc20(chain.rpcUrl, { name: 'Deposit USD', symbol: 'DUSD', decimals: 6 });
    const added = await t.request('POST', `/api/wallet/${wallet.id}/token/add`, { token: alice.token, body: { contract: usd } });
    expect(added.status, added.text).toBe(200);
    const a = (await create(wallet.id, { reference: 'acct-42', label: 'Account 42' })).body.data;
    expect(a.deposit_kind).toBe('keyless');

    // An ERC-20 payment and a native one, from outside.
    const tokenHash = await mintErc20(chain.rpcUrl, usd, a.address, 12_500_000n);
    const nativeHash = await pay(chain.rpcUrl, a.address, parseEther('0.25'));
    const received = await waitFor(
      async () => {
        const r = (await show(wallet.id, a.id)).body.data;
        return r.received.length === 2 ? r.received : null;
      },
      { timeoutMs: 15_000, message: 'both payments received' },
    );
    expect(received).toEqual([
      { token: 'ETH', amount: '0.250000000000000000' },
      { token: 'DUSD', amount: '12.500000000000000000' },
    ]);

    // Two receipt transactions of the wallet, to the address, carrying it and its reference.
    const listed = (await t.request('GET', `/api/wallet/${wallet.id}/transaction`, { token: alice.token })).body.data;
    const ours = listed.filter((x: any) => x.deposit_address_id !== null);
    expect(
      ours.map((x: any) => [x.type, x.status, x.symbol, x.amount, x.tx_hash, x.deposit_address_id, x.reference, x.internal]).sort(),
    ).toEqual(
      [
        ['receipt', 'confirmed', 'DUSD', '12.500000000000000000', tokenHash, a.id, 'acct-42', false],
        ['receipt', 'confirmed', 'ETH', '0.250000000000000000', nativeHash, a.id, 'acct-42', false],
      ].sort(),
    );
    // A long page's items, written by the database itself (SQL item JSON), carry the same.
    const long = (await t.request('GET', `/api/wallet/${wallet.id}/transaction?limit=1000`, { token: alice.token })).body.data;
    expect(long).toEqual(listed);
    // Every other row carries null.
    expect(listed.filter((x: any) => x.deposit_address_id === null).every((x: any) => x.reference === null)).toBe(true);
    const one = await t.request('GET', `/api/wallet/${wallet.id}/transaction/show/${ours[0].id}`, { token: alice.token });
    expect([one.body.data.deposit_address_id, one.body.data.reference]).toEqual([a.id, 'acct-42']);
    // Their events, as any receipt's.
    const confirmed = (await events(t, 'transaction.confirmed')).filter((e) => e.deposit_address_id === a.id);
    expect(confirmed.map((e) => [e.type, e.token, e.amount, e.reference]).sort()).toEqual(
      [
        ['receipt', 'DUSD', '12.500000000000000000', 'acct-42'],
        ['receipt', 'ETH', '0.250000000000000000', 'acct-42'],
      ].sort(),
    );

    // The follower reading the payments' blocks again (its cursor put back) records nothing twice.
    const first = Math.min(...(await Promise.all([tokenHash, nativeHash].map(blockOf))));
    const before = await chain.rpc<{ hash: string }>('eth_getBlockByNumber', [`0x${(first - 1).toString(16)}`, false]);
    const head = await waitForCursor(t, networkId, await chain.blockNumber());
    const reads = () => t.logs.filter((l) => l.includes('deposit address receipts seen')).length;
    const readBefore = reads();
    await t.store.db
      .updateTable('chain_cursors')
      .set({ block_number: first - 1, block_hash: before.hash })
      .where('network_id', '=', networkId)
      .execute();
    await chain.mine(1);
    await waitForCursor(t, networkId, head + 1);
    expect(reads()).toBe(readBefore + 2); // both blocks read again
    const rows = await t.store.db.selectFrom('transactions').select('id').where('deposit_address_id', '=', a.id).execute();
    expect(rows).toHaveLength(2);
    expect((await show(wallet.id, a.id)).body.data.received).toEqual(received);
    expect((await events(t, 'transaction.confirmed')).filter((e) => e.deposit_address_id === a.id)).toHaveLength(2);

    // Swept by one Sweeper call of the main address once the batch's wait is over.
    clock.advance(61_000);
    const swept = await sweptRows(a.id, 2);
    const batch = swept[0]!.tx_hash;
    expect(swept.map((r) => [r.kind, r.status, r.amount, r.tx_hash])).toEqual([
      ['batch', 'confirmed', '250000000000000000', batch],
      ['batch', 'confirmed', '12500000', batch],
    ]);
    const sent = await chain.rpc<{ from: string; to: string }>('eth_getTransactionByHash', [batch]);
    expect([getAddress(sent.from), getAddress(sent.to)]).toEqual([wallet.address, sweeperAddress()]);
    // The show lists them, as a charge lists its sweeps.
    const shownSweeps = (await show(wallet.id, a.id)).body.data.sweeps;
    expect(shownSweeps.map((x: any) => [x.token, x.amount, x.status, x.reason, x.tx_hash])).toEqual([
      ['ETH', '0.250000000000000000', 'confirmed', null, batch],
      ['DUSD', '12.500000000000000000', 'confirmed', null, batch],
    ]);
    expect([await erc20BalanceOf(chain.rpcUrl, usd, a.address), await balanceOf(chain, a.address)]).toEqual([0n, 0n]);
    expect(await erc20BalanceOf(chain.rpcUrl, usd, wallet.address)).toBe(12_500_000n);
    await reconciled(wallet.id);

    // Later, another payment to the same address: received and swept again.
    await chain.mine(3);
    const laterHash = await mintErc20(chain.rpcUrl, usd, a.address, 3_000_000n);
    await waitFor(
      async () => {
        const r = (await show(wallet.id, a.id)).body.data;
        return r.received.find((x: any) => x.token === 'DUSD')?.amount === '15.500000000000000000';
      },
      { timeoutMs: 15_000, message: 'the later payment received' },
    );
    const later = (await t.request('GET', `/api/wallet/${wallet.id}/transaction`, { token: alice.token })).body.data.find(
      (x: any) => x.tx_hash === laterHash,
    );
    expect([later.type, later.status, later.amount, later.deposit_address_id, later.reference]).toEqual([
      'receipt',
      'confirmed',
      '3.000000000000000000',
      a.id,
      'acct-42',
    ]);
    clock.advance(61_000);
    const again = await sweptRows(a.id, 3);
    expect([again[2]!.kind, again[2]!.status, again[2]!.amount]).toEqual(['batch', 'confirmed', '3000000']);
    expect(again[2]!.tx_hash).not.toBe(batch);
    expect(await erc20BalanceOf(chain.rpcUrl, usd, a.address)).toBe(0n);
    expect(await erc20BalanceOf(chain.rpcUrl, usd, wallet.address)).toBe(15_500_000n);
    await reconciled(wallet.id);
  });

  it('native coin forwarded by a contract (an internal transfer) is a receipt too, `internal`, and swept', async () => {
    const wallet = await fundedWallet('Forwarded');
    const a = (await create(wallet.id, { reference: 'forwarded' })).body.data;
    const forwarder = await deployForwarder(chain.rpcUrl);
    const hash = await forwardValue(chain.rpcUrl, forwarder, a.address, parseEther('0.1'));
    await waitFor(async () => (await show(wallet.id, a.id)).body.data.received.length === 1, { timeoutMs: 15_000, message: 'received' });
    expect((await show(wallet.id, a.id)).body.data.received).toEqual([{ token: 'ETH', amount: '0.100000000000000000' }]);
    const listed = (await t.request('GET', `/api/wallet/${wallet.id}/transaction`, { token: alice.token })).body.data;
    const r = listed.find((x: any) => x.deposit_address_id === a.id);
    expect([r.type, r.status, r.amount, r.tx_hash, r.internal, r.reference]).toEqual([
      'receipt',
      'confirmed',
      '0.100000000000000000',
      hash,
      true,
      'forwarded',
    ]);
    clock.advance(61_000);
    const rows = await sweptRows(a.id, 1);
    expect([rows[0]!.kind, rows[0]!.status, rows[0]!.amount]).toEqual(['batch', 'confirmed', '100000000000000000']);
    expect(await balanceOf(chain, a.address)).toBe(0n);
    await reconciled(wallet.id);
  });

  it('a keyed address (a network without a Sweeper when it was made) receives and is swept by its own transactions', async () => {
    expect(keyed.deposit_kind).toBe('keyed');
    await pay(chain.rpcUrl, keyedWallet.address, parseEther('10'));
    const usd = await deployErc20(chain.rpcUrl, { name: 'Keyed USD', symbol: 'KUSD', decimals: 6 });
    expect(
      (await t.request('POST', `/api/wallet/${keyedWallet.id}/token/add`, { token: alice.token, body: { contract: usd } })).status,
    ).toBe(200);
    await mintErc20(chain.rpcUrl, usd, keyed.address, 4_000_000n);
    await pay(chain.rpcUrl, keyed.address, parseEther('0.5'));
    const received = await waitFor(
      async () => {
        const r = (await show(keyedWallet.id, keyed.id)).body.data;
        return r.received.length === 2 ? r.received : null;
      },
      { timeoutMs: 15_000, message: 'both payments received' },
    );
    expect(received).toEqual([
      { token: 'ETH', amount: '0.500000000000000000' },
      { token: 'KUSD', amount: '4.000000000000000000' },
    ]);
    // The token first (its gas from the address's own coin), then the rest of the coin: the address ends empty.
    const rows = await sweptRows(keyed.id, 2);
    expect(rows.map((r) => [r.kind, r.status])).toEqual([
      ['sweep', 'confirmed'],
      ['sweep', 'confirmed'],
    ]);
    expect(rows[0]!.amount).toBe('4000000');
    expect([await erc20BalanceOf(chain.rpcUrl, usd, keyed.address), await balanceOf(chain, keyed.address)]).toEqual([0n, 0n]);
    expect(await erc20BalanceOf(chain.rpcUrl, usd, keyedWallet.address)).toBe(4_000_000n);
    await reconciled(keyedWallet.id);
  });

  it('a reorg that removes a payment takes its receipt back out of the totals (transaction.reorged); the sweep moves only what the chain holds', async () => {
    const wallet = await fundedWallet('Reorged');
    const usd = await deployErc20(chain.rpcUrl, { name: 'Reorg USD', symbol: 'ZUSD', decimals: 6 });
    expect((await t.request('POST', `/api/wallet/${wallet.id}/token/add`, { token: alice.token, body: { contract: usd } })).status).toBe(
      200,
    );
    const a = (await create(wallet.id, { reference: 'reorged' })).body.data;
    const hash = await mintErc20(chain.rpcUrl, usd, a.address, 7_000_000n);
    await waitFor(async () => (await show(wallet.id, a.id)).body.data.received.length === 1, { message: 'received' });
    const row = await t.store.db
      .selectFrom('transactions')
      .select(['id', 'block_number'])
      .where('tx_hash', '=', hash)
      .executeTakeFirstOrThrow();

    // Every block from the payment's on removed, its transaction with them (anvil drops it).
    const head = await chain.blockNumber();
    await waitForCursor(t, networkId, head);
    const seen = t.logs.filter((l) => l.includes('reorg: rolled back to the common ancestor')).length;
    await chain.rpc('anvil_reorg', [head - Number(row.block_number) + 1, []]);
    expect(await chain.rpc('eth_getTransactionByHash', [hash])).toBeNull();
    await chain.mine(1);
    await waitFor(() => t.logs.filter((l) => l.includes('reorg: rolled back to the common ancestor')).length > seen, {
      timeoutMs: 15_000,
      message: 'the watcher saw the reorg',
    });
    expect((await show(wallet.id, a.id)).body.data.received).toEqual([]);
    const tx = (await t.request('GET', `/api/wallet/${wallet.id}/transaction/show/${row.id}`, { token: alice.token })).body.data;
    expect([tx.status, tx.block_number, tx.deposit_address_id, tx.reference]).toEqual(['pending', null, a.id, 'reorged']);
    const reorged = (await events(t, 'transaction.reorged')).filter((e) => e.transaction_id === row.id);
    expect(reorged.map((e) => [e.deposit_address_id, e.reference, e.amount, e.status])).toEqual([
      [a.id, 'reorged', '7.000000000000000000', 'pending'],
    ]);

    // A new payment: received, and the batch sweeps exactly it.
    await mintErc20(chain.rpcUrl, usd, a.address, 2_000_000n);
    await waitFor(async () => (await show(wallet.id, a.id)).body.data.received[0]?.amount === '2.000000000000000000', {
      timeoutMs: 15_000,
      message: 'the new payment received',
    });
    clock.advance(61_000);
    const rows = await sweptRows(a.id, 1);
    expect([rows[0]!.kind, rows[0]!.status, rows[0]!.amount]).toEqual(['batch', 'confirmed', '2000000']);
    expect(await erc20BalanceOf(chain.rpcUrl, usd, a.address)).toBe(0n);
    expect(await erc20BalanceOf(chain.rpcUrl, usd, wallet.address)).toBe(2_000_000n);
    await reconciled(wallet.id);
  });
});

const blockOf = async (hash: string) =>
  Number(BigInt((await chain.rpc<{ blockNumber: string }>('eth_getTransactionReceipt', [hash])).blockNumber));

/** The address's sweep rows, once `n` of them are final and confirmed (the test's clock moves the batches on). */
async function sweptRows(depositAddressId: number, n: number) {
  const row = await t.store.db
    .selectFrom('deposit_addresses')
    .select('charge_id')
    .where('id', '=', depositAddressId)
    .executeTakeFirstOrThrow();
  return waitFor(
    async () => {
      const rows = await t.store.db
        .selectFrom('charge_sweeps')
        .select(['kind', 'status', 'amount', 'tx_hash'])
        .where('charge_id', '=', row.charge_id)
        .orderBy('id', 'asc')
        .execute();
      return rows.length === n && rows.every((r) => r.status === 'confirmed')
        ? rows.map((r) => ({ ...r, amount: String(r.amount) }))
        : null;
    },
    { timeoutMs: 30_000, message: `${n} sweeps confirmed` },
  );
}

/** The wallet's reconciliation at the head: every line of every address agrees. */
async function reconciled(walletId: number) {
  await chain.mine(1);
  await waitForCursor(t, networkId, await chain.blockNumber());
  const rec = await waitFor(
    async () => {
      const r = await t.request('GET', `/api/wallet/${walletId}/reconciliation`, { token: alice.token });
      return r.status === 200 ? r.body.data : null;
    },
    { message: 'reconciliation answered' },
  );
  const differing = rec.addresses.flatMap((a: any) =>
    a.tokens.filter((x: any) => x.difference !== ZERO).map((x: any) => [a.address, x.token, x.difference]),
  );
  expect(differing).toEqual([]);
  expect(rec.unswept).toEqual([]);
  expect(rec.ok).toBe(true);
}
