/**
 * Requests without a valid credential are limited per client address
 * (PUBLIC_RATE_LIMIT_PER_MINUTE): public pages and their JSON,
 * unknown paths, and refused credentials share one budget a minute; a valid credential is
 * never counted against it.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock, startTestApp, type TestApp, type TestUser } from '../helpers/app.js';

describe('PUBLIC_RATE_LIMIT_PER_MINUTE', () => {
  let t: TestApp;
  let user: TestUser;
  const clock = new ManualClock();
  beforeAll(async () => {
    t = await startTestApp({ clock, env: { PUBLIC_RATE_LIMIT_PER_MINUTE: '4' } });
    user = await t.createUser();
    clock.advance(61_000);
  });
  afterAll(async () => t?.close());

  it('counts public routes, unknown paths and refused tokens together; 429 with Retry-After past the limit', async () => {
    expect((await t.request('GET', '/api/openapi.json')).status).toBe(200);
    expect((await t.request('GET', '/api/pay/00000000-0000-4000-8000-000000000000')).status).toBe(404);
    expect((await t.request('GET', '/api/nothing-here')).status).toBe(404);
    expect((await t.request('GET', '/api/auth/me', { token: 'not-a-real-token' })).status).toBe(401);
    const over = await t.request('GET', '/api/auth/me');
    expect(over.status).toBe(429);
    expect(over.body).toEqual({ status: 'error', message: 'Too Many Requests', data: null });
    expect(Number(over.headers.get('retry-after'))).toBeGreaterThan(0);
    expect((await t.request('GET', '/api/openapi.json')).status).toBe(429);
    // A valid credential is not counted and not refused.
    const me = await t.request('GET', '/api/auth/me', { token: user.token });
    expect(me.status).toBe(200);
    expect(me.body.data.email).toBe(user.email);
    // The next minute has a new budget.
    clock.advance(61_000);
    expect((await t.request('GET', '/api/openapi.json')).status).toBe(200);
  });
});
