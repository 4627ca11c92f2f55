/** Login, logout, me, token lifetime, the two 401 messages, login limiting and the per-user rate limit. */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock, startTestApp, type TestApp } from '../helpers/app.js';
import { expectValidationError } from '../helpers/expect.js';
import { sha256Hex } from '../../src/lib/crypto.js';

describe('authentication', () => {
  let t: TestApp;
  const clock = new ManualClock();

  beforeAll(async () => {
    t = await startTestApp({ clock, env: { TOKEN_TTL: '3600', LOGIN_ATTEMPTS_PER_MINUTE: '3' } });
  });
  afterAll(async () => t?.close());

  it('logs in with email and password and returns a bearer token with its expiry', async () => {
    await t.services.auth.createUser({ email: 'Alice@Example.com', password: 'correct horse', name: 'Alice' });
    const res = await t.request('POST', '/api/auth/login', { body: { email: 'alice@example.com', password: 'correct horse' } });
    expect(res.status).toBe(200);
    expect(res.body.status).toBe('success');
    expect(Object.keys(res.body.data).sort()).toEqual(['expires_at', 'token', 'token_type']);
    expect(res.body.data.token_type).toBe('Bearer');
    expect(res.body.data.token).toMatch(/^[A-Za-z0-9_-]{43}$/);
    const expected = new Date(clock.nowMs() + 3600_000).toISOString().slice(0, 19).replace('T', ' ');
    expect(res.body.data.expires_at).toBe(expected);

    // Only the SHA-256 of the token is stored.
    const rows = await t.store.db.selectFrom('access_tokens').select(['token_hash']).execute();
    expect(rows.map((r) => r.token_hash)).toContain(sha256Hex(res.body.data.token));
    expect(JSON.stringify(rows)).not.toContain(res.body.data.token);

    const me = await t.request('GET', '/api/auth/me', { token: res.body.data.token });
    expect(me.status).toBe(200);
    expect(me.body.data).toEqual({
      id: expect.any(Number),
      name: 'Alice',
      email: 'alice@example.com',
      created_at: expect.stringMatching(/^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d$/),
    });
  });

  it('answers 401 Unauthenticated without a header or with another scheme', async () => {
    for (const headers of [
      {} as Record<string, string>,
      { authorization: 'Basic YTpi' },
      { authorization: 'Bearer' },
      { authorization: '' },
    ]) {
      const res = await t.request('GET', '/api/auth/me', { headers });
      expect(res.status).toBe(401);
      expect(res.body).toEqual({ status: 'error', message: 'Unauthenticated', data: null });
    }
  });

  it('answers 401 Invalid token for unknown, malformed, revoked and expired tokens', async () => {
    const invalid = async (token: string) => {
      const res = await t.request('GET', '/api/auth/me', { token });
      expect(res.status).toBe(401);
      expect(res.body).toEqual({ status: 'error', message: 'Invalid token', data: null });
    };
    await invalid('A'.repeat(43));
    await invalid('not a token');
    await invalid('x'.repeat(5000));

    const user = await t.createUser();
    const logout = await t.request('POST', '/api/auth/logout', { token: user.token });
    expect(logout.status).toBe(200);
    expect(logout.body).toEqual({ status: 'success', message: 'Logged out', data: null });
    await invalid(user.token);

    const other = await t.createUser();
    expect((await t.request('GET', '/api/auth/me', { token: other.token })).status).toBe(200);
    clock.advance(3600_000 + 1);
    await invalid(other.token);
  });

  it('answers wrong credentials with 401 Invalid credentials and missing fields with 422', async () => {
    const user = await t.createUser();
    const wrong = await t.request('POST', '/api/auth/login', { body: { email: user.email, password: 'nope-nope' } });
    expect(wrong.status).toBe(401);
    expect(wrong.body).toEqual({ status: 'error', message: 'Invalid credentials', data: null });
    const unknown = await t.request('POST', '/api/auth/login', { body: { email: 'ghost@example.com', password: 'whatever' } });
    expect(unknown.status).toBe(401);
    expect(unknown.body.message).toBe('Invalid credentials');
    const missing = await t.request('POST', '/api/auth/login', { body: {} });
    expectValidationError(missing, { email: ['The email field is required.'], password: ['The password field is required.'] });
    const badEmail = await t.request('POST', '/api/auth/login', { body: { email: 'not-an-email', password: 'x' } });
    expectValidationError(badEmail, { email: ['The email field must be a valid email address.'] });
  });

  it('limits failed logins per email: the next attempt that minute is 429 even with the right password', async () => {
    clock.advance(61_000);
    const user = await t.createUser();
    clock.advance(61_000);
    for (let i = 0; i < 3; i++) {
      const r = await t.request('POST', '/api/auth/login', { body: { email: user.email, password: 'wrong-password' } });
      expect(r.status).toBe(401);
    }
    const blocked = await t.request('POST', '/api/auth/login', { body: { email: user.email, password: user.password } });
    expect(blocked.status).toBe(429);
    expect(blocked.body).toEqual({ status: 'error', message: 'Too Many Requests', data: null });
    expect(Number(blocked.headers.get('retry-after'))).toBeGreaterThan(0);
    clock.advance(61_000);
    const after = await t.request('POST', '/api/auth/login', { body: { email: user.email, password: user.password } });
    expect(after.status).toBe(200);
  });

  it('a successful login resets the count of that email', async () => {
    // Each request from its own client address (behind a trusted proxy), so only the email counts.
    const proxied = await startTestApp({ clock, env: { LOGIN_ATTEMPTS_PER_MINUTE: '3', TRUST_PROXY: 'true' } });
    try {
      const user = await proxied.createUser();
      let n = 0;
      const attempt = (password: string) =>
        proxied.request('POST', '/api/auth/login', {
          body: { email: user.email, password },
          headers: { 'x-forwarded-for': `10.0.0.${++n}` },
        });
      for (let round = 0; round < 2; round++) {
        for (let i = 0; i < 2; i++) expect((await attempt('bad-password')).status).toBe(401);
        expect((await attempt(user.password)).status).toBe(200);
      }
      // Without the reset the count would now be 4; it is 0, so three more failures are allowed.
      for (let i = 0; i < 3; i++) expect((await attempt('bad-password')).status).toBe(401);
      expect((await attempt(user.password)).status).toBe(429);
    } finally {
      await proxied.close();
    }
  });

  it('counts attempts while they are checked: of 12 concurrent wrong logins with a limit of 3, 3 are checked and 9 answer 429', async () => {
    clock.advance(61_000);
    const user = await t.createUser();
    clock.advance(61_000);
    const started = Date.now();
    const answers = await Promise.all(
      Array.from({ length: 12 }, () => t.request('POST', '/api/auth/login', { body: { email: user.email, password: 'wrong-password' } })),
    );
    const statuses = answers.map((a) => a.status).sort();
    expect(statuses).toEqual([...Array(3).fill(401), ...Array(9).fill(429)]);
    expect(Date.now() - started).toBeLessThan(30_000);
    clock.advance(61_000);
  });

  it('TRUST_PROXY as a hop count: the client is the address one hop in from the trusted proxy', async () => {
    const proxied = await startTestApp({ clock, env: { LOGIN_ATTEMPTS_PER_MINUTE: '2', TRUST_PROXY: '1' } });
    try {
      let n = 0;
      const attempt = (forwardedFor: string) =>
        proxied.request('POST', '/api/auth/login', {
          body: { email: `hop${++n}@example.com`, password: 'x-password' },
          headers: { 'x-forwarded-for': forwardedFor },
        });
      // The left entries are whatever the client wrote; only the last one was added by the proxy.
      expect((await attempt('1.1.1.1, 10.0.0.1')).status).toBe(401);
      expect((await attempt('2.2.2.2, 10.0.0.1')).status).toBe(401);
      expect((await attempt('3.3.3.3, 10.0.0.1')).status).toBe(429);
      expect((await attempt('1.1.1.1, 10.0.0.2')).status).toBe(401);
    } finally {
      await proxied.close();
    }
  });

  it('limits failed logins per IP across emails', async () => {
    clock.advance(61_000);
    for (let i = 0; i < 3; i++) {
      expect(
        (await t.request('POST', '/api/auth/login', { body: { email: `nobody${i}@example.com`, password: 'x-password' } })).status,
      ).toBe(401);
    }
    const res = await t.request('POST', '/api/auth/login', { body: { email: 'nobody-else@example.com', password: 'x-password' } });
    expect(res.status).toBe(429);
    clock.advance(61_000);
  });

  it('takes about the same time for an unknown email as for a wrong password', async () => {
    // Its own service hashing at 2^14 (the others use 2^10, ~1 ms): each verification then takes
    // tens of milliseconds, so the request's own time, which a loaded machine moves by a few
    // milliseconds, is small beside it (at 2^10 a CI run once measured 0.43).
    const slow = await startTestApp({ clock, env: { PASSWORD_SCRYPT_N: '16384', LOGIN_ATTEMPTS_PER_MINUTE: '100' } });
    try {
      const user = await slow.createUser();
      const time = async (email: string) => {
        clock.advance(61_000); // stay clear of the attempt limit
        const t0 = performance.now();
        const res = await slow.request('POST', '/api/auth/login', { body: { email, password: 'wrong-password' } });
        expect(res.status).toBe(401);
        return performance.now() - t0;
      };
      const known: number[] = [];
      const unknown: number[] = [];
      for (let i = 0; i < 10; i++) {
        known.push(await time(user.email));
        unknown.push(await time(`missing-${i}@example.com`));
      }
      const median = (xs: number[]) => xs.sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
      const ratio = median(unknown) / median(known);
      // Both paths run one scrypt verification; without the dummy hash the unknown email would
      // answer in well under a tenth of the time.
      expect(ratio).toBeGreaterThan(0.6);
      expect(ratio).toBeLessThan(1.6);
    } finally {
      await slow.close();
    }
  });
});

describe('per-user rate limit', () => {
  let t: TestApp;
  const clock = new ManualClock();
  beforeAll(async () => {
    t = await startTestApp({ clock, env: { RATE_LIMIT_PER_MINUTE: '3', DASHBOARD_RATE_LIMIT_PER_MINUTE: '5' } });
  });
  afterAll(async () => t?.close());

  it('counts requests per user with X-RateLimit headers, then 429 with Retry-After', async () => {
    const a = await t.createUser();
    const b = await t.createUser();
    const remaining: string[] = [];
    for (let i = 0; i < 3; i++) {
      const r = await t.request('GET', '/api/auth/me', { token: a.token });
      expect(r.status).toBe(200);
      expect(r.headers.get('x-ratelimit-limit')).toBe('3');
      remaining.push(r.headers.get('x-ratelimit-remaining')!);
    }
    expect(remaining).toEqual(['2', '1', '0']);
    const over = await t.request('GET', '/api/auth/me', { token: a.token });
    expect(over.status).toBe(429);
    expect(over.body).toEqual({ status: 'error', message: 'Too Many Requests', data: null });
    expect(over.headers.get('x-ratelimit-remaining')).toBe('0');
    const retry = Number(over.headers.get('retry-after'));
    expect(retry).toBeGreaterThanOrEqual(1);
    expect(retry).toBeLessThanOrEqual(60);

    // Another user has a budget of their own; logging in is not counted.
    expect((await t.request('GET', '/api/auth/me', { token: b.token })).status).toBe(200);
    expect((await t.request('POST', '/api/auth/login', { body: { email: a.email, password: a.password } })).status).toBe(200);

    clock.advance(60_001);
    const again = await t.request('GET', '/api/auth/me', { token: a.token });
    expect(again.status).toBe(200);
    expect(again.headers.get('x-ratelimit-remaining')).toBe('2');
  });

  it("shares the user's budget between login tokens and API keys; a dashboard session has its own; a logout is never refused", async () => {
    clock.advance(60_001);
    const a = await t.createUser();
    const key = (await t.request('POST', '/api/auth/key/create', { token: a.token, body: { name: 'server', scopes: ['read'] } })).body.data
      .key as string;
    // The key's creation, one read with the key, one with the token: the user's 3 are used up, by either credential.
    expect((await t.request('GET', '/api/wallets', { token: key })).headers.get('x-ratelimit-remaining')).toBe('1');
    expect((await t.request('GET', '/api/auth/me', { token: a.token })).headers.get('x-ratelimit-remaining')).toBe('0');
    expect((await t.request('GET', '/api/wallets', { token: key })).status).toBe(429);
    expect((await t.request('GET', '/api/auth/me', { token: a.token })).status).toBe(429);

    // The dashboard signs in for a session of its own: 5 a minute, counted apart.
    const login = await t.request('POST', '/api/auth/login', { body: { email: a.email, password: a.password, session: 'dashboard' } });
    const session = login.body.data.token as string;
    expect(session).toMatch(/^ds\.[A-Za-z0-9_-]{43}$/);
    const remaining: string[] = [];
    for (let i = 0; i < 5; i++) {
      const r = await t.request('GET', '/api/auth/me', { token: session });
      expect(r.status).toBe(200);
      expect(r.headers.get('x-ratelimit-limit')).toBe('5');
      remaining.push(r.headers.get('x-ratelimit-remaining')!);
    }
    expect(remaining).toEqual(['4', '3', '2', '1', '0']);
    expect((await t.request('GET', '/api/auth/me', { token: session })).status).toBe(429);
    const bad = await t.request('POST', '/api/auth/login', { body: { email: a.email, password: a.password, session: 'phone' } });
    expect(bad.status).toBe(422);

    // Over either limit, a logout still ends its token.
    for (const token of [a.token, session]) {
      const out = await t.request('POST', '/api/auth/logout', { token });
      expect([out.status, out.headers.get('x-ratelimit-remaining')]).toEqual([200, '0']);
      const after = await t.request('GET', '/api/auth/me', { token });
      expect([after.status, after.body.message]).toEqual([401, 'Invalid token']);
    }
  });
});
