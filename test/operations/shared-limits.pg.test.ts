/**
 * Shared limits: two real service processes on one PostgreSQL database. A user's 61st request
 * in a minute is 429 whichever process answers, and failed logins count across both; first
 * with the counters in PostgreSQL, then with REDIS_URL (counters in Redis). PostgreSQL only
 * (collected when DATABASE_URL is set).
 */
import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { createTestDatabase, type TestDatabase } from '../helpers/db.js';
import { startService, stop, type Service } from '../helpers/process.js';

const REDIS_URL = 'redis://127.0.0.1:6379';

/** Windows are whole minutes: start a burst early in one, so it cannot straddle two. */
async function startOfAMinute(): Promise<void> {
  const intoMinuteMs = Date.now() % 60_000;
  if (intoMinuteMs > 40_000) await new Promise((r) => setTimeout(r, 60_000 - intoMinuteMs + 50));
}

function sharedLimitTests(name: string, extra: () => Record<string, string>, check: (t: TestApp) => Promise<void>) {
  describe(name, () => {
    let database: TestDatabase;
    let seed: TestApp;
    let a: Service;
    let b: Service;
    beforeAll(async () => {
      database = await createTestDatabase();
      seed = await startTestApp({ database, keepDatabase: true });
      const env = { RATE_LIMIT_PER_MINUTE: '60', LOGIN_ATTEMPTS_PER_MINUTE: '3', ...extra() };
      [a, b] = await Promise.all([startService(database, env), startService(database, env)]);
    }, 150_000);
    afterAll(async () => {
      await Promise.all([stop(a), stop(b)]);
      await seed?.close();
    });

    const login = (s: Service, email: string, password: string) =>
      fetch(`${s.url}/api/auth/login`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ email, password }),
      });

    it("answers a user's 61st request in a minute with 429, whichever process answers", async () => {
      const email = `shared-${randomBytes(3).toString('hex')}@example.com`;
      await seed.services.auth.createUser({ email, password: 'shared-password' });
      await startOfAMinute();
      const token = (await (await login(a, email, 'shared-password')).json()).data.token as string;
      const me = (s: Service) => fetch(`${s.url}/api/auth/me`, { headers: { authorization: `Bearer ${token}` } });
      const remaining: number[] = [];
      for (let i = 0; i < 60; i++) {
        const r = await me(i % 2 === 0 ? a : b);
        expect(r.status, `request ${i + 1}`).toBe(200);
        remaining.push(Number(r.headers.get('x-ratelimit-remaining')));
      }
      // One budget, counted down by both processes in turn.
      expect(remaining).toEqual(Array.from({ length: 60 }, (_, i) => 59 - i));
      for (const s of [a, b]) {
        const over = await me(s);
        expect(over.status).toBe(429);
        expect(await over.json()).toEqual({ status: 'error', message: 'Too Many Requests', data: null });
        expect(Number(over.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
      }
      await check(seed);
    });

    it('counts failed logins of an email across both processes', async () => {
      const email = `throttle-${randomBytes(3).toString('hex')}@example.com`;
      await seed.services.auth.createUser({ email, password: 'right-password' });
      await startOfAMinute();
      expect((await login(a, email, 'wrong-1')).status).toBe(401);
      expect((await login(b, email, 'wrong-2')).status).toBe(401);
      expect((await login(a, email, 'wrong-3')).status).toBe(401);
      for (const s of [b, a]) {
        const blocked = await login(s, email, 'right-password');
        expect(blocked.status).toBe(429);
        expect(Number(blocked.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
      }
    });
  });
}

sharedLimitTests(
  'shared limits in PostgreSQL',
  () => ({}),
  async (t) => {
    const rows = await sql<{ n: string }>`select count(*) as n from rate_limits`.execute(t.store.db);
    expect(Number(rows.rows[0]!.n)).toBeGreaterThan(0);
  },
);

sharedLimitTests(
  'shared limits in Redis (REDIS_URL)',
  () => ({ REDIS_URL }),
  async (t) => {
    // The counters are in Redis, not in PostgreSQL.
    const rows = await sql<{ n: string }>`select count(*) as n from rate_limits`.execute(t.store.db);
    expect(Number(rows.rows[0]!.n)).toBe(0);
    const redis = new Redis(REDIS_URL);
    try {
      const keys = await redis.keys('wallet-rl:*');
      expect(keys.length).toBeGreaterThan(0);
    } finally {
      redis.disconnect();
    }
  },
);
