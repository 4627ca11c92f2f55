/**
 * PostgreSQL with the rate-limit counters in `rate_limits`: bearer-token lookups that arrive
 * while others are out share one statement (AuthService.counting, src/lib/batcher.ts). In a
 * batch, each request must still be answered for its own token, counted once in its own user's
 * window with the count it would have had alone, refused when its token is not live, and a burst
 * must not get past the limit. PostgreSQL only (collected when DATABASE_URL is set).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LOOKUPS_IN_FLIGHT } from '../../src/modules/auth/auth.service.js';
import { createLimits, type Limits } from '../../src/lib/rate-limit.js';
import { sha256Hex } from '../../src/lib/crypto.js';
import { startTestApp, type TestApp, type TestUser } from '../helpers/app.js';

const LIMIT = 20;
let t: TestApp;
let limits: Limits;

beforeAll(async () => {
  t = await startTestApp({ env: { RATE_LIMIT_PER_MINUTE: String(LIMIT) } });
  limits = await createLimits(t.config, t.store, t.ctx.log);
  expect(limits.backend).toBe('postgres');
}, 30_000);

afterAll(async () => {
  await limits?.close();
  await t?.close();
});

/** Whole-minute windows: start early in one, so a test's requests cannot straddle two. */
async function earlyInMinute(): Promise<void> {
  const intoMinuteMs = Date.now() % 60_000;
  if (intoMinuteMs > 45_000) await new Promise((r) => setTimeout(r, 60_000 - intoMinuteMs + 50));
}

const count = async (u: TestUser) => (await limits.requests.peek(`u:${u.id}`, Date.now())).count;

describe('batched token lookups', () => {
  it('answers each lookup of one batch for its own token, with the counts one after another would give', async () => {
    await earlyInMinute();
    const [a, b, c, d] = [await t.createUser(), await t.createUser(), await t.createUser(), await t.createUser()];
    expect((await t.request('POST', '/api/auth/logout', { token: c.token })).status).toBe(200);
    const auth = t.services.auth;
    const before = { ...auth.counting.stats };
    const window = limits.requests.sqlWindow(Date.now());
    // All submitted in one turn: d's two lookups go out alone (LOOKUPS_IN_FLIGHT = 2); the rest
    // wait and go out together in one statement when the first of those returns.
    expect(LOOKUPS_IN_FLIGHT).toBe(2);
    const batched = [a, b, a, c, a, b, null, a, b, a];
    const answers = await Promise.allSettled(
      [d, d, ...batched].map((u) => auth.authenticateCounting(u ? u.token : 'x'.repeat(43), 'u:', window)),
    );
    expect(auth.counting.stats.batches - before.batches).toBe(3);
    expect(auth.counting.stats.largest).toBe(batched.length);
    const seen = answers.map((r) => (r.status === 'fulfilled' ? `${r.value.user.id}:${r.value.count}` : (r.reason as Error).message));
    expect(seen.slice(2)).toEqual([
      `${a.id}:1`,
      `${b.id}:1`,
      `${a.id}:2`,
      'Invalid token', // c logged out
      `${a.id}:3`,
      `${b.id}:2`,
      'Invalid token', // no such token
      `${a.id}:4`,
      `${b.id}:3`,
      `${a.id}:5`,
    ]);
    expect(seen.slice(0, 2).sort()).toEqual([`${d.id}:1`, `${d.id}:2`]);
    // Counted into rate-limiter-flexible's own rows, once each; nothing for the refused tokens
    // (c's one count is its logout request).
    expect([await count(a), await count(b), await count(c)]).toEqual([5, 3, 1]);
  });

  it('over HTTP, a burst of one user gets exactly the limit through, each with its own remaining count', async () => {
    await earlyInMinute();
    const [u, other] = [await t.createUser(), await t.createUser()];
    const burst = await Promise.all([
      ...Array.from({ length: LIMIT + 6 }, () => t.request('GET', '/api/auth/me', { token: u.token })),
      ...Array.from({ length: 4 }, () => t.request('GET', '/api/auth/me', { token: other.token })),
      t.request('GET', '/api/auth/me', { token: 'y'.repeat(43) }),
    ]);
    const mine = burst.slice(0, LIMIT + 6);
    expect(mine.filter((r) => r.status === 200).length).toBe(LIMIT);
    expect(mine.filter((r) => r.status === 429).length).toBe(6);
    for (const r of mine.filter((r) => r.status === 200)) expect(r.body.data.id).toBe(u.id);
    // Every one of the limit's counts handed out once: remaining LIMIT-1 … 0.
    const remaining = mine.filter((r) => r.status === 200).map((r) => Number(r.headers.get('x-ratelimit-remaining')));
    expect(remaining.sort((x, y) => x - y)).toEqual(Array.from({ length: LIMIT }, (_, i) => i));
    const others = burst.slice(LIMIT + 6, LIMIT + 10);
    expect(others.map((r) => r.status)).toEqual([200, 200, 200, 200]);
    for (const r of others) expect(r.body.data.id).toBe(other.id);
    expect(burst.at(-1)!.status).toBe(401);
    expect([await count(u), await count(other)]).toEqual([LIMIT + 6, 4]);
  });

  it('without counting (counters in Redis), answers each lookup of one batch for its own token and refuses expired and revoked ones', async () => {
    const [a, b, c, d, e] = [await t.createUser(), await t.createUser(), await t.createUser(), await t.createUser(), await t.createUser()];
    expect((await t.request('POST', '/api/auth/logout', { token: c.token })).status).toBe(200);
    await t.store.db
      .updateTable('access_tokens')
      .set({ expires_at: Date.now() - 1 })
      .where('token_hash', '=', sha256Hex(e.token))
      .execute();
    const auth = t.services.auth;
    const before = { ...auth.lookups.stats };
    const batched = [a, c, null, b, e, a];
    const answers = await Promise.allSettled([d, d, ...batched].map((u) => auth.authenticate(u ? u.token : 'z'.repeat(43))));
    expect(auth.lookups.stats.batches - before.batches).toBe(3);
    expect(auth.lookups.stats.largest).toBe(batched.length);
    const seen = answers.map((r) => (r.status === 'fulfilled' ? r.value.user.id : (r.reason as Error).message));
    expect(seen).toEqual([d.id, d.id, a.id, 'Invalid token', 'Invalid token', b.id, 'Invalid token', a.id]);
    // The same token, the same token id; a's two answers are a's whole user.
    const aAnswers = answers
      .filter((r, i) => i === 2 || i === 7)
      .map((r) => (r as PromiseFulfilledResult<Awaited<ReturnType<typeof auth.authenticate>>>).value);
    expect(aAnswers[0]).toEqual(aAnswers[1]);
    expect(aAnswers[0]!.user).toMatchObject({ id: a.id, email: a.email });
  });
});
