/** API keys: creation shown once, scopes enforced before the route runs, revocation, expiry, last use, the CLI. */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock, TEST_APP_KEY, startTestApp, type TestApp, type TestUser } from '../helpers/app.js';
import { createWalletRow, ensureNetwork } from '../helpers/factories.js';
import { runCli } from '../helpers/process.js';
import { waitFor } from '../helpers/wait.js';
import { sha256Hex } from '../../src/lib/crypto.js';

const DATETIME = /^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d$/;
const FORBIDDEN = { status: 'error', message: 'Insufficient scope', data: null };
const INVALID = { status: 'error', message: 'Invalid token', data: null };

async function createKey(t: TestApp, user: TestUser, body: Record<string, unknown>) {
  const res = await t.request('POST', '/api/auth/key/create', { token: user.token, body });
  expect(res.status, res.text).toBe(200);
  return res.body.data as { id: number; key: string; prefix: string; scopes: string[] };
}

describe('API keys', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp();
  });
  afterAll(async () => t?.close());

  it('shows a new key once, stores only its SHA-256 and lists keys without it', async () => {
    const user = await t.createUser();
    const res = await t.request('POST', '/api/auth/key/create', {
      token: user.token,
      body: { name: 'Checkout server', scopes: ['charges:write', 'read'] },
      headers: { 'idempotency-key': 'key-create-1' },
    });
    expect(res.status).toBe(200);
    expect(res.body.message).toBe('API key created');
    const k = res.body.data;
    expect(Object.keys(k).sort()).toEqual(['created_at', 'expires_at', 'id', 'key', 'last_used_at', 'name', 'prefix', 'scopes']);
    expect(k.key).toMatch(/^wps_[A-Za-z0-9_-]{43}$/);
    expect(k).toMatchObject({
      name: 'Checkout server',
      prefix: k.key.slice(0, 12),
      scopes: ['read', 'charges:write'],
      expires_at: null,
      last_used_at: null,
    });
    expect(k.created_at).toMatch(DATETIME);

    const rows = await t.store.db.selectFrom('api_keys').selectAll().where('id', '=', k.id).execute();
    expect(rows[0]!.key_hash).toBe(sha256Hex(k.key));
    // The key is nowhere in the database: not in its row, not in a stored idempotent response.
    expect(JSON.stringify(rows)).not.toContain(k.key);
    expect(JSON.stringify(await t.store.db.selectFrom('idempotency_keys').selectAll().execute())).not.toContain(k.key.slice(4));

    const list = await t.request('GET', '/api/auth/key', { token: user.token });
    expect(list.status).toBe(200);
    expect(list.body.data).toEqual([
      {
        id: k.id,
        name: 'Checkout server',
        prefix: k.prefix,
        scopes: ['read', 'charges:write'],
        created_at: k.created_at,
        expires_at: null,
        last_used_at: null,
        revoked_at: null,
      },
    ]);
    expect(list.text).not.toContain(k.key);
  });

  it('a read key lists but cannot create a transaction: 403 before validation or the wallet check', async () => {
    const user = await t.createUser();
    const wallet = await createWalletRow(t, user.id);
    const { key } = await createKey(t, user, { name: 'reader', scopes: ['read'] });
    expect((await t.request('GET', '/api/wallets', { token: key })).body.data.map((w: { id: number }) => w.id)).toEqual([wallet.id]);
    expect((await t.request('GET', `/api/wallet/${wallet.id}/transaction`, { token: key })).status).toBe(200);

    const body = { amount: '0.1', token: 'ETH', address: '0x000000000000000000000000000000000000dEaD' };
    for (const path of [`/api/wallet/${wallet.id}/transaction/create`, '/api/wallet/999999/transaction/create']) {
      const res = await t.request('POST', path, { token: key, body });
      expect(res.status).toBe(403);
      expect(res.body).toEqual(FORBIDDEN);
    }
    // Even a body that would be 422 is refused first.
    expect((await t.request('POST', `/api/wallet/${wallet.id}/transaction/create`, { token: key, body: {} })).status).toBe(403);
    expect(await t.store.db.selectFrom('transactions').select('id').execute()).toEqual([]);
  });

  it('a checkout key (read + charges:write) creates a charge but cannot move money, add a webhook or a wallet', async () => {
    const user = await t.createUser();
    const wallet = await createWalletRow(t, user.id);
    const networkId = (await ensureNetwork(t)).id;
    const { key } = await createKey(t, user, { name: 'checkout', scopes: ['read', 'charges:write'] });

    const charge = await t.request('POST', `/api/wallet/${wallet.id}/charge/create`, {
      token: key,
      body: { amount: '0.25', token: 'ETH' },
    });
    expect(charge.status, charge.text).toBe(200);
    expect(charge.body.data).toMatchObject({ wallet_id: wallet.id, amount: '0.250000000000000000', status: 'pending' });
    expect((await t.request('GET', `/api/wallet/${wallet.id}/charge/show/${charge.body.data.uuid}`, { token: key })).status).toBe(200);

    const refused: [string, string, unknown][] = [
      [
        'POST',
        `/api/wallet/${wallet.id}/transaction/create`,
        { amount: '0.1', token: 'ETH', address: '0x000000000000000000000000000000000000dEaD' },
      ],
      ['POST', `/api/wallet/${wallet.id}/webhook/create`, { url: 'http://127.0.0.1:9/hook', type: 'charge', events: ['*'] }],
      ['POST', '/api/wallet/create', { name: 'sneaky', network_id: networkId }],
      ['POST', `/api/wallet/${wallet.id}/update`, { name: 'renamed' }],
      ['POST', `/api/wallet/${wallet.id}/token/add`, { contract: '0x000000000000000000000000000000000000dEaD' }],
      ['GET', `/api/wallet/${wallet.id}/token/remove/1`, undefined],
      ['GET', `/api/wallet/${wallet.id}/webhook/delete/1`, undefined],
    ];
    for (const [method, path, body] of refused) {
      const res = await t.request(method, path, { token: key, body });
      expect([method, path, res.status, res.body]).toEqual([method, path, 403, FORBIDDEN]);
    }
    expect(await t.store.db.selectFrom('transactions').select('id').execute()).toEqual([]);
    expect(await t.store.db.selectFrom('webhooks').select('id').execute()).toEqual([]);
    expect((await t.store.db.selectFrom('wallets').select('id').where('user_id', '=', user.id).execute()).length).toBe(1);
  });

  it('managing keys and logging out need a login token, even with a * key', async () => {
    const user = await t.createUser();
    const wallet = await createWalletRow(t, user.id);
    const all = await createKey(t, user, { name: 'all', scopes: ['*'] });
    for (const [method, path, body] of [
      ['POST', '/api/auth/key/create', { name: 'x', scopes: ['read'] }],
      ['GET', '/api/auth/key', undefined],
      ['POST', `/api/auth/key/${all.id}/revoke`, undefined],
      ['POST', '/api/auth/logout', undefined],
    ] as const) {
      const res = await t.request(method, path, { token: all.key, body });
      expect([path, res.status, res.body]).toEqual([path, 403, FORBIDDEN]);
    }
    // `*` covers every write route.
    const hook = await t.request('POST', `/api/wallet/${wallet.id}/webhook/create`, {
      token: all.key,
      body: { url: 'http://127.0.0.1:9/hook', type: 'charge', events: ['*'] },
    });
    expect(hook.status, hook.text).toBe(200);
    expect((await t.request('GET', '/api/auth/me', { token: all.key })).body.data.id).toBe(user.id);
  });

  it('a revoked key answers 401 Invalid token; another user’s key is 404 Key not found', async () => {
    const user = await t.createUser();
    const other = await t.createUser();
    const k = await createKey(t, user, { name: 'soon revoked', scopes: ['read'] });
    expect((await t.request('GET', '/api/wallets', { token: k.key })).status).toBe(200);

    for (const id of [String(k.id), '999999', 'abc']) {
      const res = await t.request('POST', `/api/auth/key/${id}/revoke`, { token: other.token });
      expect(res.status).toBe(404);
      expect(res.body).toEqual({ status: 'error', message: 'Key not found', data: null });
    }
    expect((await t.request('GET', '/api/auth/key', { token: other.token })).body.data).toEqual([]);

    const revoked = await t.request('POST', `/api/auth/key/${k.id}/revoke`, { token: user.token });
    expect(revoked.status).toBe(200);
    expect(revoked.body.message).toBe('API key revoked');
    expect(revoked.body.data).toMatchObject({ id: k.id, name: 'soon revoked', revoked_at: expect.stringMatching(DATETIME) });
    expect(revoked.body.data.key).toBeUndefined();
    const res = await t.request('GET', '/api/wallets', { token: k.key });
    expect(res.status).toBe(401);
    expect(res.body).toEqual(INVALID);
    // A second revoke keeps the first time.
    expect((await t.request('POST', `/api/auth/key/${k.id}/revoke`, { token: user.token })).body.data.revoked_at).toBe(
      revoked.body.data.revoked_at,
    );
  });

  it('a key past expires_in answers 401 Invalid token', async () => {
    const user = await t.createUser();
    const k = await createKey(t, user, { name: 'short-lived', scopes: ['read'], expires_in: 1 });
    const listed = (await t.request('GET', '/api/auth/key', { token: user.token })).body.data[0];
    expect(listed.expires_at).toMatch(DATETIME);
    const res = await waitFor(
      async () => {
        const r = await t.request('GET', '/api/wallets', { token: k.key });
        return r.status === 401 ? r : null;
      },
      { timeoutMs: 5000, intervalMs: 100, message: 'the key expires' },
    );
    expect(res.body).toEqual(INVALID);
  });

  it('validates the create body with the contract’s 422 messages', async () => {
    const user = await t.createUser();
    const cases: [unknown, Record<string, string[]>][] = [
      [{}, { name: ['The name field is required.'], scopes: ['The scopes field is required.'] }],
      [{ name: '   ', scopes: ['read'] }, { name: ['The name field is required.'] }],
      [{ name: 'k', scopes: [] }, { scopes: ['The scopes field is required.'] }],
      [{ name: 'k', scopes: 'read' }, { scopes: ['The scopes field must be an array.'] }],
      [{ name: 'k', scopes: ['read', 'admin'] }, { 'scopes.1': ['The selected scopes.1 is invalid.'] }],
      [{ name: 'k', scopes: ['read'], expires_in: 0 }, { expires_in: ['The expires_in field must be at least 1.'] }],
      [{ name: 'k', scopes: ['read'], expires_in: 1.5 }, { expires_in: ['The expires_in field must be an integer.'] }],
      [{ name: 'k', scopes: ['read'], expires_in: '60' }, { expires_in: ['The expires_in field must be an integer.'] }],
    ];
    for (const [body, fields] of cases) {
      const res = await t.request('POST', '/api/auth/key/create', { token: user.token, body });
      expect([body, res.status, res.body.data]).toEqual([body, 422, fields]);
      expect(res.body.message).toBe(Object.values(fields)[0]![0]!.replace(/\.$/, ''));
    }
    expect(await t.store.db.selectFrom('api_keys').select('id').where('user_id', '=', user.id).execute()).toEqual([]);
  });

  it('key:create on the command line prints the key once; the key works with its scopes', async () => {
    const user = await t.createUser();
    const wallet = await createWalletRow(t, user.id);
    const env = {
      NODE_ENV: 'test',
      DATA_DIR: t.database.dataDir,
      APP_KEY: TEST_APP_KEY,
      ...(t.database.databaseUrl ? { DATABASE_URL: t.database.databaseUrl } : {}),
    };
    const r = await runCli(['key:create', user.email, '--name', 'from cli', '--scopes', 'read,charges:write'], env);
    expect(r.code, r.stdout).toBe(0);
    expect(r.stdout.trim().split('\n')).toHaveLength(1);
    expect(r.json).toMatchObject({ name: 'from cli', scopes: ['read', 'charges:write'], expires_at: null, last_used_at: null });
    expect(r.json.key).toMatch(/^wps_[A-Za-z0-9_-]{43}$/);
    expect(
      (await t.request('POST', `/api/wallet/${wallet.id}/charge/create`, { token: r.json.key, body: { amount: '1', token: 'ETH' } }))
        .status,
    ).toBe(200);
    expect((await t.request('POST', `/api/wallet/${wallet.id}/update`, { token: r.json.key, body: { name: 'x' } })).status).toBe(403);

    const bad = await runCli(['key:create', user.email, '--name', 'bad', '--scopes', 'read,root'], env);
    expect(bad.code).toBe(1);
    expect(bad.json).toEqual({ error: 'The selected scopes.1 is invalid', fields: { 'scopes.1': ['The selected scopes.1 is invalid.'] } });
    const nobody = await runCli(['key:create', 'nobody@example.com', '--name', 'x', '--scopes', 'read'], env);
    expect(nobody.code).toBe(1);
    expect(nobody.json.error).toBe('no user with the email nobody@example.com');
  });
});

describe('API key last use', () => {
  let t: TestApp;
  const clock = new ManualClock(Date.UTC(2025, 2, 14, 9, 26, 0));
  beforeAll(async () => {
    t = await startTestApp({ clock });
  });
  afterAll(async () => t?.close());

  it('writes last_used_at at most once a minute, to the minute', async () => {
    const user = await t.createUser();
    const k = await createKey(t, user, { name: 'used', scopes: ['read'] });
    const lastUsed = async () =>
      (await t.store.db.selectFrom('api_keys').select('last_used_at').where('id', '=', k.id).executeTakeFirstOrThrow()).last_used_at;

    clock.advance(12_345); // 09:26:12.345
    expect((await t.request('GET', '/api/wallets', { token: k.key })).status).toBe(200);
    expect(await lastUsed()).toBe(Date.UTC(2025, 2, 14, 9, 26, 0));
    const shown = (await t.request('GET', '/api/auth/key', { token: user.token })).body.data[0];
    expect(shown.last_used_at).toBe('2025-03-14 09:26:00');

    // A marker inside the same minute: further requests that minute write nothing.
    const marker = Date.UTC(2025, 2, 14, 9, 26, 0) + 7;
    await t.store.db.updateTable('api_keys').set({ last_used_at: marker }).where('id', '=', k.id).execute();
    for (let i = 0; i < 5; i++) {
      clock.advance(5_000);
      expect((await t.request('GET', '/api/wallets', { token: k.key })).status).toBe(200);
    }
    expect(await lastUsed()).toBe(marker);

    clock.advance(30_000); // 09:27:07
    expect((await t.request('GET', '/api/wallets', { token: k.key })).status).toBe(200);
    expect(await lastUsed()).toBe(Date.UTC(2025, 2, 14, 9, 27, 0));
  });
});
