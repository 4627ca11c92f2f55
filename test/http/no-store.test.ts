/**
 * Answers that carry a secret or a credential are never cached:
 * login (a bearer token), API key create (the key, once), webhook delete (its secret, once)
 * have `Cache-Control: no-store`; an ordinary read does not.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { createWebhook, owner } from '../webhooks/fixtures.js';

describe('Cache-Control: no-store on answers with a secret', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp();
  });
  afterAll(async () => t?.close());

  it('login, key create and webhook delete answer no-store; a plain read does not', async () => {
    const a = await owner(t);
    const login = await t.request('POST', '/api/auth/login', { body: { email: a.user.email, password: a.user.password } });
    expect(login.status).toBe(200);
    expect(login.headers.get('cache-control')).toBe('no-store');

    const key = await t.request('POST', '/api/auth/key/create', { token: a.user.token, body: { name: 'server', scopes: ['read'] } });
    expect(key.status).toBe(200);
    expect(key.body.data.key).toMatch(/^wps_/);
    expect(key.headers.get('cache-control')).toBe('no-store');

    const w = await createWebhook(t, a, {
      url: 'https://example.com/no-store',
      type: 'balance',
      events: ['updated'],
      signature: 'whsec_no_store',
    });
    const del = await t.request('GET', `/api/wallet/${a.walletId}/webhook/delete/${w.id}`, { token: a.user.token });
    expect(del.status).toBe(200);
    expect(del.body.data.signature).toBe('whsec_no_store');
    expect(del.headers.get('cache-control')).toBe('no-store');

    const me = await t.request('GET', '/api/auth/me', { token: a.user.token });
    expect(me.status).toBe(200);
    expect(me.headers.get('cache-control')).toBeNull();
  });
});
