/**
 * PostgreSQL with the rate-limit counters in `rate_limits`: a session token's lookup counts the
 * request in the same statement (src/modules/auth/auth.repository.ts). It must count into the
 * very row rate-limiter-flexible keeps for the user (same key, same window, same expiry rule),
 * so the two ways of counting add up, and a refused token counts nothing.
 * PostgreSQL only (collected when DATABASE_URL is set).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLimits, type Limits } from '../../src/lib/rate-limit.js';
import { startTestApp, type TestApp, type TestUser } from '../helpers/app.js';

let t: TestApp;
let limits: Limits;
let user: TestUser;

beforeAll(async () => {
  t = await startTestApp({ env: { RATE_LIMIT_PER_MINUTE: '6' } });
  limits = await createLimits(t.config, t.store, t.ctx.log);
  expect(limits.backend).toBe('postgres');
  // Whole-minute windows: start early in one, so the requests below cannot straddle two.
  const intoMinuteMs = Date.now() % 60_000;
  if (intoMinuteMs > 45_000) await new Promise((r) => setTimeout(r, 60_000 - intoMinuteMs + 50));
  user = await t.createUser();
}, 30_000);

afterAll(async () => {
  await limits?.close();
  await t?.close();
});

const me = (token: string) => t.request('GET', '/api/auth/me', { token });

describe("the token lookup counts into rate-limiter-flexible's row", () => {
  it('counts each request once, adds up with rate-limiter-flexible, and refuses the 7th', async () => {
    const remaining: Array<string | null> = [];
    for (let i = 0; i < 3; i++) {
      const r = await me(user.token);
      expect(r.status).toBe(200);
      remaining.push(r.headers.get('x-ratelimit-remaining'));
    }
    expect(remaining).toEqual(['5', '4', '3']);
    // The same row, read and counted by rate-limiter-flexible itself.
    expect((await limits.requests.peek(`u:${user.id}`, Date.now())).count).toBe(3);
    expect((await limits.requests.hit(`u:${user.id}`, Date.now())).count).toBe(4);
    expect((await me(user.token)).headers.get('x-ratelimit-remaining')).toBe('1');
    // A token that is not live counts nothing.
    expect((await me('0'.repeat(64))).status).toBe(401);
    expect((await limits.requests.peek(`u:${user.id}`, Date.now())).count).toBe(5);
    expect((await me(user.token)).headers.get('x-ratelimit-remaining')).toBe('0');
    const refused = await me(user.token);
    expect(refused.status).toBe(429);
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
  });
});
