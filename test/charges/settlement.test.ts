/**
 * Settlement against the chain the follower recorded (real anvil, real service, manual clock):
 * - on a network with 3 confirmations, a payment mined two seconds before expiry counts, and the
 *   charge stays pending (not expired) until a block stamped after expiry is confirmed;
 * - a reorg that removes an unconfirmed payment leaves the charge pending and unpaid;
 * - with 300 pending charges, the newest one is paid at once and all others expire;
 * - on a network with 1 confirmation: a reorg that removes the paying transfer returns a paid
 *   charge to pending with charge.reopened (and paying again tells charge.paid again); a late
 *   payment is listed
 *   `late`, announced once with charge.delayed and swept; an underpaid (failed) charge is swept;
 *   money without a visible transfer is swept and named in a warning;
 * - CHARGE_WATCH_AFTER_S bounds how long after expiry late payments are recorded.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { randomUUID } from 'node:crypto';
import { parseEther, type Hex } from 'viem';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { insertCharge, insertSubWallet, subWalletPlace, takeSubIndex } from '../../src/modules/charges/charges.repository.js';
import { ManualClock, startTestApp, type TestApp, type TestUser } from '../helpers/app.js';
import { startTestChain, type TestChain } from '../helpers/chain.js';
import { waitFor } from '../helpers/wait.js';
import { balanceOf, chargeApi, clockToChain, DATETIME, events, latestTimestampS, mineAt, pay, PAYER, stampNextBlock } from './support.js';

interface Setup {
  chain: TestChain;
  t: TestApp;
  user: TestUser;
  wallet: { id: number; address: string };
  clock: ManualClock;
  api: ReturnType<typeof chargeApi>;
}

async function setUp(confirmations: number, env: Record<string, string> = {}): Promise<Setup> {
  const clock = new ManualClock();
  const chain = await startTestChain();
  const t = await startTestApp({ clock, env: { CHARGES_POLL_MS: '50', WATCHER_POLL_MS: '50', ...env } });
  const networkId = await chain.register(t, { confirmations });
  const user = await t.createUser();
  const wallet = (await t.request('POST', '/api/wallet/create', { token: user.token, body: { name: 'Shop', network_id: networkId } })).body
    .data;
  t.startWorkers();
  await waitFor(
    () => t.store.db.selectFrom('chain_cursors').select('block_number').where('network_id', '=', networkId).executeTakeFirst(),
    { message: 'watcher cursor' },
  );
  return { chain, t, user, wallet, clock, api: chargeApi(t, wallet.id, user.token) };
}

async function tearDown(s: Setup | undefined) {
  await s?.t.close();
  await s?.chain.stop();
}

/** Pending charges of the setup's wallet, each with a deposit address of its own, as `create` stores them. */
async function olderPendingCharges(s: Setup, n: number, expiresAtMs: number): Promise<number[]> {
  const db = s.t.store.db;
  const token = await db
    .selectFrom('wallet_tokens')
    .select('id')
    .where('wallet_id', '=', s.wallet.id)
    .where('is_native', '=', 1)
    .executeTakeFirstOrThrow();
  return db.transaction().execute(async (trx) => {
    const ids: number[] = [];
    for (let i = 0; i < n; i++) {
      const key = generatePrivateKey();
      const index = await takeSubIndex(trx, s.wallet.id);
      const sub = await insertSubWallet(
        trx,
        { wallet_id: s.wallet.id, derivation_index: index, address: privateKeyToAccount(key).address },
        (id) => s.t.ctx.secrets.encrypt(key, subWalletPlace(id)),
        s.clock.nowMs(),
      );
      const charge = {
        uuid: randomUUID(),
        wallet_id: s.wallet.id,
        sub_wallet_id: sub,
        token_id: token.id,
        amount: parseEther('0.01'),
        mode: 'test',
        expires: 120,
        expires_at: expiresAtMs,
        content: null,
        info: null,
      };
      ids.push(await insertCharge(trx, { ...charge, watch_until: expiresAtMs + 86_400_000 }, s.clock.nowMs()));
    }
    return ids;
  });
}

const paymentRows = (s: Setup, chargeId: number) =>
  s.t.store.db.selectFrom('charge_payments').select(['tx_hash', 'block_number']).where('charge_id', '=', chargeId).execute();

/** The charge stays in `status` for a while (the workers tick every 50 ms meanwhile). */
async function staysFor(s: Setup, id: number, status: string, ms = 600) {
  const until = Date.now() + ms;
  while (Date.now() < until) {
    expect((await s.api.show(id)).status).toBe(status);
    await new Promise((r) => setTimeout(r, 50));
  }
}

describe('a network with 3 confirmations', () => {
  let s: Setup;
  beforeAll(async () => {
    s = await setUp(3);
  });
  afterAll(() => tearDown(s));

  it('counts a payment mined in the last seconds before expiry: paid, not expired', async () => {
    await clockToChain(s.clock, s.chain);
    const c = await s.api.create({ amount: '1', token: 'ETH', expires: 60 });
    const expiresS = Math.floor(new Date(`${c.expires_at}Z`).getTime() / 1000);
    await stampNextBlock(s.chain, expiresS - 2);
    const hash = await pay(s.chain.rpcUrl, c.address, parseEther('1'));
    await waitFor(async () => (await paymentRows(s, c.id)).length === 1, { message: 'payment recorded' });

    // The service's clock passes expiry; the paying block has 1 confirmation of 3: not decided.
    s.clock.advance(70_000);
    await staysFor(s, c.id, 'pending');

    await mineAt(s.chain, expiresS + 5);
    await s.chain.mine(2);
    const paid = await s.api.until(c.id, (x) => x.status === 'paid', 'paid after confirmations');
    expect(paid.paid_amount).toBe('1.000000000000000000');
    expect(paid.payments).toEqual([
      {
        tx_hash: hash,
        from: PAYER.address,
        token: 'ETH',
        amount: '1.000000000000000000',
        block_number: expect.any(Number),
        block_timestamp: expect.stringMatching(DATETIME),
        late: false,
        internal: false,
        screened: false,
      },
    ]);
    expect(new Date(`${paid.paid_at}Z`).getTime()).toBe((expiresS - 2) * 1000);
    expect((await events(s.t, 'charge.paid')).filter((e) => e.charge_id === c.id)).toHaveLength(1);
    expect((await events(s.t, 'charge.expired')).filter((e) => e.charge_id === c.id)).toEqual([]);
    expect((await events(s.t, 'charge.failed')).filter((e) => e.charge_id === c.id)).toEqual([]);
  });

  it('a reorg removing an unconfirmed payment leaves the charge pending and unpaid', async () => {
    await clockToChain(s.clock, s.chain);
    const c = await s.api.create({ amount: '0.5', token: 'ETH', expires: 600 });
    const snapshot = await s.chain.rpc<Hex>('evm_snapshot');
    await pay(s.chain.rpcUrl, c.address, parseEther('0.5'));
    await waitFor(async () => (await paymentRows(s, c.id)).length === 1, { message: 'payment recorded' });
    expect((await s.api.show(c.id)).payments).toEqual([]); // not confirmed yet: not listed

    expect(await s.chain.rpc('evm_revert', [snapshot])).toBe(true);
    await s.chain.mine(5); // a longer chain without the payment
    await waitFor(async () => (await paymentRows(s, c.id)).length === 0, { message: 'payment rolled back' });
    await staysFor(s, c.id, 'pending');
    const after = await s.api.show(c.id);
    expect(after.paid_amount).toBe('0.000000000000000000');
    expect(after.payments).toEqual([]);
    expect(await balanceOf(s.chain, c.address)).toBe(0n);
  });

  it('settles 300 pending charges: the newest paid at once, all others expired', async () => {
    await clockToChain(s.clock, s.chain);
    // 299 older pending charges (written as the service writes them, without 299 HTTP round
    // trips), then the newest through the API.
    const ids = await olderPendingCharges(s, 299, s.clock.nowMs() + 120_000);
    const newest = await s.api.create({ amount: '0.01', token: 'ETH', expires: 120 });
    ids.push(newest.id);
    await pay(s.chain.rpcUrl, newest.address, parseEther('0.01'));
    await s.chain.mine(2);
    await s.api.until(newest.id, (x) => x.status === 'paid', 'the newest of 300 paid before expiry');

    const expiresS = Math.floor(new Date(`${newest.expires_at}Z`).getTime() / 1000);
    s.clock.advance(130_000);
    await mineAt(s.chain, expiresS + 1);
    await s.chain.mine(2);
    const others = ids.filter((id) => id !== newest.id);
    await waitFor(
      async () => {
        const rows = await s.t.store.db
          .selectFrom('charges')
          .select('status')
          .where('id', 'in', others)
          .where('status', '=', 'expired')
          .execute();
        return rows.length === 299;
      },
      { message: '299 expired', timeoutMs: 30_000 },
    );
    const expired = (await events(s.t, 'charge.expired')).filter((e) => others.includes(e.charge_id));
    expect(expired).toHaveLength(299);
    expect((await s.api.show(newest.id)).status).toBe('paid');
  }, 120_000);
});

describe('a network with 1 confirmation', () => {
  let s: Setup;
  beforeAll(async () => {
    s = await setUp(1);
  });
  afterAll(() => tearDown(s));

  it('a reorg removing the paying transfer returns the charge to pending with charge.reopened; paid again, charge.paid again', async () => {
    await clockToChain(s.clock, s.chain);
    const c = await s.api.create({ amount: '0.2', token: 'ETH', expires: 600 });
    const snapshot = await s.chain.rpc<Hex>('evm_snapshot');
    await pay(s.chain.rpcUrl, c.address, parseEther('0.2'));
    await s.api.until(c.id, (x) => x.status === 'paid', 'paid');

    expect(await s.chain.rpc('evm_revert', [snapshot])).toBe(true);
    await s.chain.mine(3);
    const back = await s.api.until(c.id, (x) => x.status === 'pending', 'pending again after the reorg');
    expect(back).toMatchObject({ paid_amount: '0.000000000000000000', paid_at: null, payments: [] });
    expect(s.t.logs.some((l) => l.includes('undid a charge settlement'))).toBe(true);
    // Told in the rollback's own transaction: the event is there as soon as the charge is pending.
    const reopened = (await events(s.t, 'charge.reopened')).filter((e) => e.charge_id === c.id);
    expect(reopened).toEqual([
      {
        charge_id: c.id,
        wallet_id: s.wallet.id,
        amount: '0.200000000000000000',
        token: 'ETH',
        uuid: c.uuid,
        status: 'pending',
        expires: 600,
        created_at: c.created_at,
        address: c.address,
        paid_amount: '0.000000000000000000',
        reopened_at: expect.stringMatching(DATETIME),
      },
    ]);

    await pay(s.chain.rpcUrl, c.address, parseEther('0.2'));
    const again = await s.api.until(c.id, (x) => x.status === 'paid', 'paid again');
    expect(again.payments).toHaveLength(1);
    // The outcome is told again after the reopening: paid, reopened, paid.
    const told = await s.t.store.db
      .selectFrom('events')
      .select(['name', 'payload'])
      .where('name', 'in', ['charge.paid', 'charge.reopened'])
      .orderBy('id', 'asc')
      .execute();
    expect(told.filter((e) => JSON.parse(e.payload).charge_id === c.id).map((e) => e.name)).toEqual([
      'charge.paid',
      'charge.reopened',
      'charge.paid',
    ]);
  });

  it('a payment after expiry is late: listed, charge.delayed once, and swept', async () => {
    await clockToChain(s.clock, s.chain);
    const c = await s.api.create({ amount: '1', token: 'ETH', expires: 60 });
    s.clock.advance(61_000);
    await mineAt(s.chain, Math.floor(s.clock.nowMs() / 1000));
    await s.api.until(c.id, (x) => x.status === 'expired', 'expired');

    const mainBefore = await balanceOf(s.chain, s.wallet.address);
    const hash = await pay(s.chain.rpcUrl, c.address, parseEther('0.3'));
    const swept = await s.api.until(c.id, (x) => x.sweeps.length === 1 && x.sweeps[0].status === 'confirmed', 'late payment swept');
    expect(swept.status).toBe('expired');
    expect(swept.paid_amount).toBe('0.000000000000000000');
    const payment = {
      tx_hash: hash,
      from: PAYER.address,
      token: 'ETH',
      amount: '0.300000000000000000',
      block_number: expect.any(Number),
      block_timestamp: expect.stringMatching(DATETIME),
      late: true,
      internal: false,
      screened: false,
    };
    expect(swept.payments).toEqual([payment]);
    expect(await balanceOf(s.chain, c.address)).toBe(0n);
    expect((await balanceOf(s.chain, s.wallet.address)) - mainBefore).toBe(parseEther(swept.sweeps[0].amount));

    await s.chain.mine(2); // more ticks and blocks: still one event
    await waitFor(
      async () =>
        (await s.t.store.db.selectFrom('charges').select('sweep_due_at').where('id', '=', c.id).executeTakeFirstOrThrow()).sweep_due_at ===
        null,
      { message: 'nothing more to sweep' },
    );
    const delayed = (await events(s.t, 'charge.delayed')).filter((e) => e.charge_id === c.id);
    expect(delayed).toEqual([
      {
        charge_id: c.id,
        wallet_id: s.wallet.id,
        amount: '1.000000000000000000',
        token: 'ETH',
        uuid: c.uuid,
        status: 'expired',
        expires: 60,
        created_at: c.created_at,
        address: c.address,
        paid_amount: '0.000000000000000000',
        payment,
      },
    ]);
  });

  it('money that arrives without a visible transfer: expired with a warning saying so, and swept', async () => {
    await clockToChain(s.clock, s.chain);
    const c = await s.api.create({ amount: '1', token: 'ETH', expires: 60 });
    await s.chain.setBalance(c.address, parseEther('1')); // as a contract's internal transfer would: no transaction to the address
    s.clock.advance(61_000);
    await mineAt(s.chain, Math.floor(s.clock.nowMs() / 1000));
    const done = await s.api.until(c.id, (x) => x.status === 'expired' && x.sweeps[0]?.status === 'confirmed', 'expired and swept');
    expect(done.payments).toEqual([]);
    expect(await balanceOf(s.chain, c.address)).toBe(0n);
    const warning = s.t.logs.find((l) => l.includes('holds more than the transfers seen') && l.includes(`"charge_id":${c.id}`));
    expect(JSON.parse(warning!)).toMatchObject({ balance: parseEther('1').toString(), payments: '0' });
  });

  it('an underpaid charge fails and what it received is swept', async () => {
    await clockToChain(s.clock, s.chain);
    const c = await s.api.create({ amount: '2', token: 'ETH', expires: 60 });
    await pay(s.chain.rpcUrl, c.address, parseEther('1.5'));
    await s.api.until(c.id, (x) => x.paid_amount === '1.500000000000000000', 'partial payment counted');
    expect((await s.api.show(c.id)).sweeps).toEqual([]); // nothing is swept while pending

    s.clock.advance(61_000);
    await mineAt(s.chain, Math.floor(s.clock.nowMs() / 1000));
    const done = await s.api.until(c.id, (x) => x.status === 'failed' && x.sweeps[0]?.status === 'confirmed', 'failed and swept');
    expect(done.payments).toEqual([expect.objectContaining({ amount: '1.500000000000000000', late: false })]);
    expect(await balanceOf(s.chain, c.address)).toBe(0n);
    expect(await latestTimestampS(s.chain)).toBeGreaterThan(Math.floor(new Date(`${c.expires_at}Z`).getTime() / 1000));
  });
});

describe('the watch window after expiry (CHARGE_WATCH_AFTER_S=100)', () => {
  let s: Setup;
  beforeAll(async () => {
    s = await setUp(1, { CHARGE_WATCH_AFTER_S: '100' });
  });
  afterAll(() => tearDown(s));

  it('records a late payment inside the window and none stamped after it', async () => {
    await clockToChain(s.clock, s.chain);
    const c = await s.api.create({ amount: '1', token: 'ETH', expires: 60 });
    const expiresS = Math.floor(new Date(`${c.expires_at}Z`).getTime() / 1000);
    s.clock.advance(61_000);
    await mineAt(s.chain, expiresS + 1);
    await s.api.until(c.id, (x) => x.status === 'expired', 'expired');

    await stampNextBlock(s.chain, expiresS + 50);
    const inside = await pay(s.chain.rpcUrl, c.address, parseEther('0.1'));
    await s.api.until(c.id, (x) => x.payments.length === 1 && x.sweeps[0]?.status === 'confirmed', 'late payment in the window swept');
    await stampNextBlock(s.chain, expiresS + 200);
    const outside = await pay(s.chain.rpcUrl, c.address, parseEther('0.2'));
    await s.chain.mine(2);
    await waitFor(
      async () => {
        const cursor = await s.t.store.db.selectFrom('chain_cursors').select('block_number').executeTakeFirstOrThrow();
        return Number(cursor.block_number) >= (await s.chain.blockNumber());
      },
      { message: 'follower at the head' },
    );
    const after = await s.api.show(c.id);
    expect(after.payments.map((p: { tx_hash: string }) => p.tx_hash)).toEqual([inside]);
    expect(after.payments.map((p: { tx_hash: string }) => p.tx_hash)).not.toContain(outside);
    expect((await events(s.t, 'charge.delayed')).filter((e) => e.charge_id === c.id)).toHaveLength(1);
  });
});
