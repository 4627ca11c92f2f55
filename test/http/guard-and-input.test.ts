/**
 * The wallet guard and the order of checks; bad input of each kind leaves the database
 * unchanged; unknown fields are ignored and never stored.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp, type TestUser } from '../helpers/app.js';
import { expectValidationError, type FieldErrors } from '../helpers/expect.js';
import { createWalletRow, ensureNetwork } from '../helpers/factories.js';
import { walletPlace } from '../../src/modules/wallets/wallets.repository.js';

async function snapshot(t: TestApp) {
  const db = t.store.db;
  const count = async (table: 'wallets' | 'wallet_tokens' | 'events' | 'users') =>
    Number((await db.selectFrom(table).select(db.fn.countAll<number>().as('n')).executeTakeFirstOrThrow()).n);
  return {
    wallets: await count('wallets'),
    tokens: await count('wallet_tokens'),
    events: await count('events'),
    users: await count('users'),
  };
}

describe('wallet guard', () => {
  let t: TestApp;
  let alice: TestUser;
  let bob: TestUser;
  let aliceWallet: { id: number };

  beforeAll(async () => {
    t = await startTestApp();
    alice = await t.createUser();
    bob = await t.createUser();
    aliceWallet = await createWalletRow(t, alice.id);
  });
  afterAll(async () => t?.close());

  it('lets the owner in', async () => {
    const res = await t.request('GET', `/api/wallet/${aliceWallet.id}`, { token: alice.token });
    expect(res.status).toBe(200);
    expect(res.body.data.id).toBe(aliceWallet.id);
  });

  it("answers another user's wallet exactly like a missing one", async () => {
    const theirs = await t.request('GET', `/api/wallet/${aliceWallet.id}`, { token: bob.token });
    const missing = await t.request('GET', '/api/wallet/999999', { token: bob.token });
    for (const res of [theirs, missing]) {
      expect(res.status).toBe(404);
      expect(res.body).toEqual({ status: 'error', message: 'Wallet not found', data: null });
    }
    const list = await t.request('GET', '/api/wallets', { token: bob.token });
    expect(list.body.data).toEqual([]);
  });

  it('answers a non-integer wallet id with 404 Wallet not found', async () => {
    for (const id of ['abc', '1.5', '-1', '0', '01', '1e3', '99999999999999999999', '%20']) {
      const res = await t.request('GET', `/api/wallet/${id}`, { token: alice.token });
      expect(res.status, id).toBe(404);
      expect(res.body.message, id).toBe('Wallet not found');
    }
  });

  it('checks authentication before the wallet, and the wallet before the body', async () => {
    const noAuth = await t.request('POST', '/api/wallet/999999/update', { body: { name: 5 } });
    expect(noAuth.status).toBe(401);
    const notMine = await t.request('POST', `/api/wallet/${aliceWallet.id}/update`, { token: bob.token, body: { name: 5 } });
    expect(notMine.status).toBe(404);
    expect(notMine.body.message).toBe('Wallet not found');
    const mine = await t.request('POST', `/api/wallet/${aliceWallet.id}/update`, { token: alice.token, body: { name: 5 } });
    expectValidationError(mine, { name: ['The name field must be a string.'] });
  });
});

describe('bad input leaves the database unchanged', () => {
  let t: TestApp;
  let u: TestUser;
  let networkId: number;

  beforeAll(async () => {
    t = await startTestApp();
    u = await t.createUser();
    networkId = (await ensureNetwork(t)).id;
  });
  afterAll(async () => t?.close());

  const cases: Array<{ name: string; body?: unknown; raw?: string; contentType?: string; status: number; data?: FieldErrors }> = [
    {
      name: 'missing fields',
      body: {},
      status: 422,
      data: { name: ['The name field is required.'], network_id: ['The network_id field is required.'] },
    },
    {
      name: 'number where a string belongs',
      body: { name: 42, network_id: 1 },
      status: 422,
      data: { name: ['The name field must be a string.'] },
    },
    {
      name: 'string where a number belongs',
      body: { name: 'W', network_id: '1' },
      status: 422,
      data: { network_id: ['The network_id field must be an integer.'] },
    },
    {
      name: 'fractional number',
      body: { name: 'W', network_id: 1.5 },
      status: 422,
      data: { network_id: ['The network_id field must be an integer.'] },
    },
    { name: 'boolean', body: { name: true, network_id: 1 }, status: 422, data: { name: ['The name field must be a string.'] } },
    { name: 'null', body: { name: null, network_id: 1 }, status: 422, data: { name: ['The name field must be a string.'] } },
    { name: 'empty string', body: { name: '', network_id: 1 }, status: 422, data: { name: ['The name field is required.'] } },
    {
      name: 'very long string',
      body: { name: 'x'.repeat(256), network_id: 1 },
      status: 422,
      data: { name: ['The name field must not be greater than 255 characters.'] },
    },
    {
      name: 'unknown network',
      body: { name: 'W', network_id: 424242 },
      status: 422,
      data: { network_id: ['The selected network_id is invalid.'] },
    },
    { name: 'broken JSON', raw: '{"name": "W", ', contentType: 'application/json', status: 400 },
    {
      name: 'huge body',
      raw: JSON.stringify({ name: 'W', network_id: 1, pad: 'x'.repeat(1_100_000) }),
      contentType: 'application/json',
      status: 413,
    },
    { name: 'form body', raw: 'name=W&network_id=1', contentType: 'application/x-www-form-urlencoded', status: 415 },
  ];

  for (const c of cases) {
    it(`${c.name} → ${c.status}`, async () => {
      const before = await snapshot(t);
      const res = await t.request('POST', '/api/wallet/create', {
        token: u.token,
        ...(c.raw !== undefined ? { rawBody: c.raw, contentType: c.contentType } : { body: c.body }),
      });
      if (c.data) {
        expectValidationError(res, c.data, c.name);
      } else {
        expect(res.status).toBe(c.status);
        expect(res.body.status).toBe('error');
        expect(res.body.data).toBeNull();
      }
      expect(await snapshot(t)).toEqual(before);
    });
  }

  it('ignores unknown fields and never stores them', async () => {
    const res = await t.request('POST', '/api/wallet/create', {
      token: u.token,
      body: {
        name: 'Mine',
        network_id: networkId,
        user_id: 999,
        address: '0x000000000000000000000000000000000000dEaD',
        private_key: '0x' + '11'.repeat(32),
        mnemonic: 'abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon about',
        is_mainnet: true,
        __proto__: { polluted: true },
      },
    });
    expect(res.status).toBe(200);
    expect(res.body.data.address).not.toBe('0x000000000000000000000000000000000000dEaD');
    expect(res.body.data.is_mainnet).toBe(false);
    const row = await t.store.db.selectFrom('wallets').selectAll().where('id', '=', res.body.data.id).executeTakeFirstOrThrow();
    expect(row.user_id).toBe(u.id);
    expect(row.address).toBe(res.body.data.address);
    expect(t.ctx.secrets.decrypt(row.private_key_enc, walletPlace(row.id, 'private_key_enc'))).not.toBe('0x' + '11'.repeat(32));
    expect(t.ctx.secrets.decrypt(row.mnemonic_enc, walletPlace(row.id, 'mnemonic_enc'))).not.toMatch(/^abandon/);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });
});
