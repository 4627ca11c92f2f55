/**
 * Charges on a real chain: creation with a derived deposit address, validation, reads and
 * isolation, and settlement by the charge worker (paid and swept, expired, failed), each
 * event exactly once.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseEther, type Address } from 'viem';
import { ManualClock, startTestApp, type TestApp, type TestUser } from '../helpers/app.js';
import { expectValidationError, type FieldErrors } from '../helpers/expect.js';
import { startTestChain, type TestChain } from '../helpers/chain.js';
import { deployErc20, mintErc20, erc20BalanceOf } from '../helpers/erc20.js';
import { waitFor } from '../helpers/wait.js';
import { deriveKey } from '../../src/chain/keys.js';
import { DATETIME, events, mineAt, pay, PAYER } from './support.js';
import { walletPlace } from '../../src/modules/wallets/wallets.repository.js';

describe('charges', () => {
  let chain: TestChain;
  let t: TestApp;
  let alice: TestUser;
  let bob: TestUser;
  let wallet: { id: number; address: string };
  let networkId: number;
  const clock = new ManualClock();

  beforeAll(async () => {
    chain = await startTestChain();
    t = await startTestApp({ clock, env: { CHARGES_POLL_MS: '50', WATCHER_POLL_MS: '50' } });
    networkId = await chain.register(t);
    alice = await t.createUser();
    bob = await t.createUser();
    const res = await t.request('POST', '/api/wallet/create', { token: alice.token, body: { name: 'Shop', network_id: networkId } });
    wallet = res.body.data;
  });
  afterAll(async () => {
    await t?.close();
    await chain?.stop();
  });

  it('creates a charge with its own deposit address derived from the wallet mnemonic', async () => {
    const res = await t.request('POST', `/api/wallet/${wallet.id}/charge/create`, {
      token: alice.token,
      body: { amount: '0.25', token: 'ETH', content: { title: 'Order 42' }, info: { order_id: 42 } },
    });
    expect(res.status).toBe(200);
    const c = res.body.data;
    expect(Object.keys(c).sort()).toEqual(
      [
        'address',
        'amount',
        'content',
        'created_at',
        'deposit_kind',
        'expires',
        'expires_at',
        'hosted_url',
        'id',
        'info',
        'mode',
        'paid_amount',
        'paid_at',
        'paid_fraction',
        'payment_uri',
        'payments',
        'price',
        'quotes',
        'refunds',
        'status',
        'sub_wallet_id',
        'sweeps',
        'token',
        'token_id',
        'updated_at',
        'uuid',
        'wallet_id',
      ].sort(),
    );
    expect(c).toMatchObject({
      wallet_id: wallet.id,
      token: 'ETH',
      amount: '0.250000000000000000',
      paid_amount: '0.000000000000000000',
      status: 'pending',
      mode: 'test',
      deposit_kind: 'keyed',
      expires: 300,
      paid_at: null,
      payments: [],
      sweeps: [],
      content: { title: 'Order 42' },
      info: { order_id: 42 },
    });
    expect(c.uuid).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(c.created_at).toMatch(DATETIME);
    expect(new Date(`${c.expires_at}Z`).getTime() - new Date(`${c.created_at}Z`).getTime()).toBe(300_000);

    const row = await t.store.db.selectFrom('wallets').select('mnemonic_enc').where('id', '=', wallet.id).executeTakeFirstOrThrow();
    const mnemonic = t.ctx.secrets.decrypt(row.mnemonic_enc, walletPlace(wallet.id, 'mnemonic_enc'));
    expect(c.address).toBe(deriveKey(mnemonic, 1).address);
    expect(c.address).not.toBe(wallet.address);

    const second = await t.request('POST', `/api/wallet/${wallet.id}/charge/create`, {
      token: alice.token,
      body: { amount: 1, token: 'eth', expires: 60 },
    });
    expect(second.body.data.address).toBe(deriveKey(mnemonic, 2).address);
    expect(second.body.data.content).toBeNull();

    const created = await events(t, 'charge.created');
    expect(created[0]).toEqual({
      charge_id: c.id,
      wallet_id: wallet.id,
      amount: '0.250000000000000000',
      token: 'ETH',
      uuid: c.uuid,
      status: 'pending',
      expires: 300,
      created_at: c.created_at,
    });
  });

  it('validates the body with the contract wording', async () => {
    const bad = async (body: unknown, data: FieldErrors) => {
      const before = await t.store.db.selectFrom('charges').select(t.store.db.fn.countAll<number>().as('n')).executeTakeFirstOrThrow();
      const res = await t.request('POST', `/api/wallet/${wallet.id}/charge/create`, { token: alice.token, body });
      expectValidationError(res, data, JSON.stringify(body).slice(0, 100));
      const after = await t.store.db.selectFrom('charges').select(t.store.db.fn.countAll<number>().as('n')).executeTakeFirstOrThrow();
      expect(Number(after.n)).toBe(Number(before.n));
    };
    await bad({ token: 'ETH' }, { amount: ['The amount field is required.'] });
    await bad({ amount: '0', token: 'ETH' }, { amount: ['The amount field must be greater than 0.'] });
    await bad({ amount: 'ten', token: 'ETH' }, { amount: ['The amount field must be a number.'] });
    await bad({ amount: '1', token: 'DOGE' }, { token: ['The selected token is invalid.'] });
    await bad(
      { amount: '1.0000000000000000001', token: 'ETH' },
      { amount: ['The amount field must not have more than 18 decimal places.'] },
    );
    await bad({ amount: '1', token: 'ETH', expires: 59 }, { expires: ['The expires field must be at least 60.'] });
    await bad({ amount: '1', token: 'ETH', expires: 86401 }, { expires: ['The expires field must not be greater than 86400.'] });
    await bad({ amount: '1', token: 'ETH', content: 'text' }, { content: ['The content field must be an object.'] });
    await bad(
      { amount: '1', token: 'ETH', info: { blob: 'x'.repeat(17 * 1024) } },
      { info: ['The info field must not be greater than 16 kilobytes.'] },
    );
  });

  it('shows a charge by id or uuid, lists them newest first, and hides them from others', async () => {
    const list = await t.request('GET', `/api/wallet/${wallet.id}/charge?limit=1`, { token: alice.token });
    expect(list.status).toBe(200);
    expect(list.body.data).toHaveLength(1);
    expect(list.headers.get('x-pagination-total')).toBe('2');
    expect(list.headers.get('x-pagination-pages')).toBe('2');
    expect(list.headers.get('link')).toContain('rel="next"');
    const newest = list.body.data[0];

    const byId = await t.request('GET', `/api/wallet/${wallet.id}/charge/show/${newest.id}`, { token: alice.token });
    const byUuid = await t.request('GET', `/api/wallet/${wallet.id}/charge/show/${newest.uuid}`, { token: alice.token });
    expect(byId.body.data).toEqual(newest);
    expect(byUuid.body.data).toEqual(newest);

    for (const ref of ['999999', '00000000-0000-4000-8000-000000000000', 'nope']) {
      const res = await t.request('GET', `/api/wallet/${wallet.id}/charge/show/${ref}`, { token: alice.token });
      expect(res.status).toBe(404);
      expect(res.body).toEqual({ status: 'error', message: 'Charge not found', data: null });
    }
    // Another user: the wallet itself is invisible, on every charge route.
    for (const [method, path] of [
      ['GET', `/api/wallet/${wallet.id}/charge/show/${newest.id}`],
      ['GET', `/api/wallet/${wallet.id}/charge`],
      ['POST', `/api/wallet/${wallet.id}/charge/create`],
    ] as const) {
      const res = await t.request(method, path, { token: bob.token, body: method === 'POST' ? { amount: '1', token: 'ETH' } : undefined });
      expect(res.status).toBe(404);
      expect(res.body.message).toBe('Wallet not found');
    }
    // Bob's own wallet does not reach Alice's charge either.
    const bobs = await t.request('POST', '/api/wallet/create', { token: bob.token, body: { name: 'Bob', network_id: networkId } });
    const cross = await t.request('GET', `/api/wallet/${bobs.body.data.id}/charge/show/${newest.id}`, { token: bob.token });
    expect(cross.status).toBe(404);
    expect(cross.body.message).toBe('Charge not found');
  });

  it('settles: paid (and swept to the main address), expired, failed; each event once', async () => {
    const create = async (amount: string) =>
      (
        await t.request('POST', `/api/wallet/${wallet.id}/charge/create`, {
          token: alice.token,
          body: { amount, token: 'ETH', expires: 60 },
        })
      ).body.data;
    const paid = await create('0.5');
    const partial = await create('2');
    const unpaid = await create('3');
    // Earlier tests' charges are settled too; only these three are asserted.
    t.startWorkers();
    // Payments are read from the blocks the chain follower records: it starts at the head.
    await waitFor(
      () => t.store.db.selectFrom('chain_cursors').select('block_number').where('network_id', '=', networkId).executeTakeFirst(),
      { message: 'watcher cursor' },
    );

    const mainBefore = BigInt(await chain.rpc<string>('eth_getBalance', [wallet.address, 'latest']));
    const paidTx = await pay(chain.rpcUrl, paid.address, parseEther('0.5'));
    await pay(chain.rpcUrl, partial.address, parseEther('1'));

    const show = (id: number) =>
      t.request('GET', `/api/wallet/${wallet.id}/charge/show/${id}`, { token: alice.token }).then((r) => r.body.data);
    const done = await waitFor(
      async () => {
        const c = await show(paid.id);
        return c.status === 'paid' ? c : null;
      },
      { message: 'charge paid' },
    );
    expect(done.paid_amount).toBe('0.500000000000000000');
    expect(done.paid_at).toMatch(DATETIME);
    expect(done.payments).toEqual([
      {
        tx_hash: paidTx,
        from: PAYER.address,
        token: 'ETH',
        amount: '0.500000000000000000',
        block_number: expect.any(Number),
        block_timestamp: expect.stringMatching(DATETIME),
        late: false,
        internal: false,
        screened: false,
      },
    ]);
    await waitFor(async () => (await show(partial.id)).paid_amount === '1.000000000000000000', { message: 'partial payment seen' });
    expect((await show(partial.id)).status).toBe('pending');

    // Swept: the deposit address is emptied into the main address (less the fee).
    await waitFor(async () => BigInt(await chain.rpc<string>('eth_getBalance', [paid.address, 'latest'])) === 0n, { message: 'sweep' });
    const mainAfter = BigInt(await chain.rpc<string>('eth_getBalance', [wallet.address, 'latest']));
    expect(mainAfter - mainBefore).toBeGreaterThan(parseEther('0.49'));
    expect(mainAfter - mainBefore).toBeLessThan(parseEther('0.5'));

    // Time passes beyond expiry: the service's clock, and a block stamped after it is confirmed.
    clock.advance(61_000);
    await mineAt(chain, Math.floor(clock.nowMs() / 1000));
    await waitFor(async () => (await show(partial.id)).status === 'failed' && (await show(unpaid.id)).status === 'expired', {
      message: 'expiry',
    });

    const paidEvents = (await events(t, 'charge.paid')).filter((e) => e.charge_id === paid.id);
    const failedEvents = (await events(t, 'charge.failed')).filter((e) => e.charge_id === partial.id);
    const expiredEvents = (await events(t, 'charge.expired')).filter((e) => e.charge_id === unpaid.id);
    expect(paidEvents).toEqual([
      {
        charge_id: paid.id,
        wallet_id: wallet.id,
        amount: '0.500000000000000000',
        token: 'ETH',
        uuid: paid.uuid,
        status: 'paid',
        expires: 60,
        created_at: paid.created_at,
        address: paid.address,
        paid_amount: '0.500000000000000000',
        paid_at: expect.stringMatching(DATETIME),
      },
    ]);
    expect(failedEvents).toEqual([
      expect.objectContaining({ status: 'failed', paid_amount: '1.000000000000000000', failed_at: expect.stringMatching(DATETIME) }),
    ]);
    expect(expiredEvents).toEqual([
      expect.objectContaining({ status: 'expired', paid_amount: '0.000000000000000000', expired_at: expect.stringMatching(DATETIME) }),
    ]);

    // The sweep is listed and followed to confirmation; the address ends at exactly 0.
    const sweptCharge = await waitFor(
      async () => {
        const c = await show(paid.id);
        return c.sweeps.length === 1 && c.sweeps[0].status === 'confirmed' ? c : null;
      },
      { message: 'sweep confirmed' },
    );
    expect(sweptCharge.sweeps[0]).toEqual({
      tx_hash: expect.stringMatching(/^0x[0-9a-f]{64}$/),
      token: 'ETH',
      amount: expect.any(String),
      status: 'confirmed',
      reason: null,
      created_at: expect.stringMatching(DATETIME),
    });
    expect(parseEther(sweptCharge.sweeps[0].amount)).toBe(mainAfter - mainBefore);

    // A payment after expiry does not pay the charge (it is late: settlement.test.ts).
    await pay(chain.rpcUrl, unpaid.address, parseEther('3'));
    await waitFor(async () => (await events(t, 'charge.delayed')).some((e) => e.charge_id === unpaid.id), {
      message: 'late payment announced',
    });
    await t.workers!.stop();
    expect((await show(unpaid.id)).status).toBe('expired');
    expect((await events(t, 'charge.paid')).filter((e) => e.charge_id === unpaid.id)).toEqual([]);
  });

  it('detects an ERC-20 payment with 6 decimals exactly, and sweeps it after sending gas from the main wallet', async () => {
    const usdc = await deployErc20(chain.rpcUrl, { name: 'USD Coin', symbol: 'USDC', decimals: 6 });
    const added = await t.request('POST', `/api/wallet/${wallet.id}/token/add`, { token: alice.token, body: { contract: usdc } });
    expect(added.status).toBe(200);
    const c = (
      await t.request('POST', `/api/wallet/${wallet.id}/charge/create`, {
        token: alice.token,
        body: { amount: '12.345678', token: 'USDC' },
      })
    ).body.data;
    expect(c.amount).toBe('12.345678000000000000');
    t.startWorkers();
    try {
      await mintErc20(chain.rpcUrl, usdc, c.address, 12_345_678n);
      const paid = await waitFor(
        async () => {
          const r = await t.request('GET', `/api/wallet/${wallet.id}/charge/show/${c.uuid}`, { token: alice.token });
          return r.body.data.status === 'paid' ? r.body.data : null;
        },
        { message: 'token charge paid' },
      );
      expect(paid.paid_amount).toBe('12.345678000000000000');

      // The deposit address has no gas: the main wallet sends some (a recorded transfer), then
      // the tokens move to the main address.
      await chain.setBalance(wallet.address, parseEther('1'));
      await waitFor(async () => (await erc20BalanceOf(chain.rpcUrl, usdc, wallet.address as Address)) === 12_345_678n, {
        timeoutMs: 20_000,
        message: 'token sweep',
      });
      expect(await erc20BalanceOf(chain.rpcUrl, usdc, c.address)).toBe(0n);
      const topUps = await t.store.db
        .selectFrom('transactions')
        .select(['type', 'to_address'])
        .where('wallet_id', '=', wallet.id)
        .where('to_address', '=', c.address)
        .execute();
      expect(topUps).toEqual([{ type: 'transfer', to_address: c.address }]);
      // The token sweep is listed and confirmed (the gas top-up is a wallet transaction, not a sweep).
      const swept = await waitFor(
        async () => {
          const r = await t.request('GET', `/api/wallet/${wallet.id}/charge/show/${c.id}`, { token: alice.token });
          return r.body.data.sweeps.find((s: { token: string; status: string }) => s.token === 'USDC' && s.status === 'confirmed');
        },
        { message: 'sweep recorded', timeoutMs: 20_000 },
      );
      expect(swept).toEqual({
        tx_hash: expect.stringMatching(/^0x[0-9a-f]{64}$/),
        token: 'USDC',
        amount: '12.345678000000000000',
        status: 'confirmed',
        reason: null,
        created_at: expect.stringMatching(DATETIME),
      });
    } finally {
      await t.workers!.stop();
    }
  });
});
