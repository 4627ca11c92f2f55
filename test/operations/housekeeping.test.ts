/** Housekeeping removes expired access tokens and Idempotency-Keys, and nothing else. */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock, startTestApp, type TestApp } from '../helpers/app.js';
import { ensureNetwork } from '../helpers/factories.js';
import { housekeep } from '../../src/workers/housekeeping.js';

describe('housekeeping', () => {
  let t: TestApp;
  const clock = new ManualClock();
  beforeAll(async () => {
    t = await startTestApp({ clock, env: { TOKEN_TTL: '3600' } });
  });
  afterAll(async () => t?.close());

  it('deletes tokens expired over a day ago and keys past their 24 hours', async () => {
    const old = await t.createUser();
    const networkId = (await ensureNetwork(t)).id;
    const created = await t.request('POST', '/api/wallet/create', {
      token: old.token,
      body: { name: 'W', network_id: networkId },
      headers: { 'idempotency-key': 'k1' },
    });
    expect(created.status).toBe(200);

    clock.advance(26 * 3600_000); // the token expired 25 h ago; the key 2 h ago
    const fresh = await t.createUser();
    expect(await housekeep(t.ctx)).toEqual({ tokens: 1, idempotencyKeys: 1 });

    const tokens = await t.store.db.selectFrom('access_tokens').select('user_id').execute();
    expect(tokens.map((r) => r.user_id)).toEqual([fresh.id]);
    expect(await t.store.db.selectFrom('idempotency_keys').selectAll().execute()).toEqual([]);
    expect((await t.request('GET', '/api/auth/me', { token: fresh.token })).status).toBe(200);
    expect(await housekeep(t.ctx)).toEqual({ tokens: 0, idempotencyKeys: 0 });
  });
});
