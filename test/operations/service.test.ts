/**
 * Running it: X-Request-Id on every response and in every log line of the request; the
 * password cost raised with a rehash at the next login; TOKEN_TTL down to 1 second;
 * RATE_LIMIT_PER_MINUTE=0 turning the per-user limit (and its headers) off.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, ManualClock, type TestApp } from '../helpers/app.js';
import { scryptParamsOf } from '../../src/lib/crypto.js';
import { loadConfig } from '../../src/config.js';

describe('X-Request-Id', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp({ env: { LOG_LEVEL: 'debug' } });
  });
  afterAll(async () => t?.close());

  it("returns the caller's id and puts it in every log line of the request", async () => {
    const u = await t.createUser();
    const id = 'checkout-7f3a:retry#2';
    const res = await t.request('GET', '/api/auth/me', { token: u.token, headers: { 'x-request-id': id } });
    expect(res.headers.get('x-request-id')).toBe(id);
    const lines = t.logs.map((l) => JSON.parse(l) as Record<string, unknown>).filter((l) => l.request_id === id);
    expect(lines.some((l) => l.msg === 'request' && l.route === '/api/auth/me')).toBe(true);
    // A failing request: its error line carries the id too.
    const bad = await t.request('POST', '/api/wallet/create', {
      token: u.token,
      rawBody: '{broken',
      contentType: 'application/json',
      headers: { 'x-request-id': 'bad-json-1' },
    });
    expect(bad.headers.get('x-request-id')).toBe('bad-json-1');
    const badLines = t.logs.map((l) => JSON.parse(l) as Record<string, unknown>).filter((l) => l.request_id === 'bad-json-1');
    expect(badLines.map((l) => l.msg)).toEqual(expect.arrayContaining(['request rejected', 'request']));
  });

  it('makes a new id when none is sent, or when the one sent is too long or not printable', async () => {
    const seen = new Set<string>();
    const sent: Record<string, string>[] = [{}, { 'x-request-id': 'x'.repeat(129) }, { 'x-request-id': 'tab\there' }];
    for (const headers of sent) {
      const res = await t.request('GET', '/api/no-such-route', { headers });
      expect(res.status).toBe(404);
      const id = res.headers.get('x-request-id')!;
      expect(id).toMatch(/^[0-9a-f-]{36}$/);
      seen.add(id);
    }
    expect(seen.size).toBe(3);
    const max = 'y'.repeat(128);
    expect((await t.request('GET', '/api/auth/me', { headers: { 'x-request-id': max } })).headers.get('x-request-id')).toBe(max);
  });
});

describe('password hashing cost', () => {
  it('rehashes an old-cost hash at the next successful login (the stored parameters change)', async () => {
    // The account is made at the old cost (2^14), then the service runs at OWASP's 2^17.
    const old = await startTestApp({ env: { PASSWORD_SCRYPT_N: '16384' }, keepDatabase: true });
    const u = await old.createUser({ password: 'rehash-me-please' });
    const stored = () => old.store.db.selectFrom('users').select('password_hash').where('id', '=', u.id).executeTakeFirstOrThrow();
    expect(scryptParamsOf((await stored()).password_hash)).toEqual({ n: 16384, r: 8, p: 1 });
    await old.close();

    const t = await startTestApp({ database: old.database, env: { PASSWORD_SCRYPT_N: '131072' } });
    try {
      expect(t.config.passwordScryptN).toBe(131072);
      const before = (await t.store.db.selectFrom('users').select('password_hash').where('id', '=', u.id).executeTakeFirstOrThrow())
        .password_hash;
      const wrong = await t.request('POST', '/api/auth/login', { body: { email: u.email, password: 'not-it' } });
      expect(wrong.status).toBe(401);
      const unchanged = (await t.store.db.selectFrom('users').select('password_hash').where('id', '=', u.id).executeTakeFirstOrThrow())
        .password_hash;
      expect(unchanged).toBe(before); // only a successful login rehashes

      const ok = await t.request('POST', '/api/auth/login', { body: { email: u.email, password: 'rehash-me-please' } });
      expect(ok.status).toBe(200);
      const after = (await t.store.db.selectFrom('users').select('password_hash').where('id', '=', u.id).executeTakeFirstOrThrow())
        .password_hash;
      expect(scryptParamsOf(after)).toEqual({ n: 131072, r: 8, p: 1 });
      expect(after).not.toBe(before);
      expect(t.logs.some((l) => l.includes('password rehashed at the current cost'))).toBe(true);
      // The new hash works, and is not rehashed again.
      expect((await t.request('POST', '/api/auth/login', { body: { email: u.email, password: 'rehash-me-please' } })).status).toBe(200);
      expect(
        (await t.store.db.selectFrom('users').select('password_hash').where('id', '=', u.id).executeTakeFirstOrThrow()).password_hash,
      ).toBe(after);
    } finally {
      await t.close();
    }
  }, 60_000);

  it('defaults to N=2^17 and refuses a cost that is not a power of two', () => {
    expect(loadConfig({}).passwordScryptN).toBe(131072);
    expect(() => loadConfig({ PASSWORD_SCRYPT_N: '100000' })).toThrow(
      'Invalid configuration: PASSWORD_SCRYPT_N must be a power of two, got 100000',
    );
  });
});

describe('TOKEN_TTL and RATE_LIMIT_PER_MINUTE=0', () => {
  const clock = new ManualClock();
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp({ clock, env: { TOKEN_TTL: '1', RATE_LIMIT_PER_MINUTE: '0' } });
  });
  afterAll(async () => t?.close());

  it('accepts a one-second token lifetime, and nothing outside 1..31536000', async () => {
    const u = await t.createUser();
    expect((await t.request('GET', '/api/auth/me', { token: u.token })).status).toBe(200);
    clock.advance(1_000);
    const expired = await t.request('GET', '/api/auth/me', { token: u.token });
    expect(expired.status).toBe(401);
    expect(expired.body.message).toBe('Invalid token');
    expect(() => loadConfig({ TOKEN_TTL: '0' })).toThrow('TOKEN_TTL must be between 1 and 31536000, got 0');
    expect(() => loadConfig({ TOKEN_TTL: '31536001' })).toThrow('TOKEN_TTL must be between 1 and 31536000');
    expect(loadConfig({ TOKEN_TTL: '31536000' }).tokenTtlS).toBe(31_536_000);
  });

  it('with 0 has no per-user limit and no X-RateLimit headers; login throttling stays', async () => {
    const u = await t.createUser();
    for (let i = 0; i < 70; i++) {
      const token = (await t.request('POST', '/api/auth/login', { body: { email: u.email, password: u.password } })).body.data.token;
      const r = await t.request('GET', '/api/auth/me', { token });
      expect(r.status).toBe(200);
      expect(r.headers.get('x-ratelimit-limit')).toBeNull();
      expect(r.headers.get('x-ratelimit-remaining')).toBeNull();
    }
    const throttled = await startTestApp({
      database: t.database,
      keepDatabase: true,
      env: { RATE_LIMIT_PER_MINUTE: '0', LOGIN_ATTEMPTS_PER_MINUTE: '2' },
    });
    try {
      for (let i = 0; i < 2; i++)
        expect((await throttled.request('POST', '/api/auth/login', { body: { email: u.email, password: 'wrong-pw' } })).status).toBe(401);
      expect((await throttled.request('POST', '/api/auth/login', { body: { email: u.email, password: u.password } })).status).toBe(429);
    } finally {
      await throttled.app.close();
      await throttled.store.destroy();
    }
  }, 60_000);
});
