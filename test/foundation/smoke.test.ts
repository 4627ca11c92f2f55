import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.js';

describe('smoke', () => {
  let t: TestApp;
  beforeAll(async () => { t = await startTestApp(); });
  afterAll(async () => { await t?.close(); });
  it('logs in and reads me', async () => {
    const u = await t.createUser({ email: 'a@example.com', password: 'password123' });
    const me = await t.request('GET', '/api/auth/me', { token: u.token });
    console.log(me.status, me.text, [...me.headers]);
    const nf = await t.request('GET', '/api/nope');
    console.log(nf.status, nf.text);
    const m = await t.request('DELETE', '/api/auth/me', { token: u.token });
    console.log(m.status, m.text, m.headers.get('allow'));
    const bad = await t.request('POST', '/api/auth/login', { rawBody: '{bad', contentType: 'application/json' });
    console.log(bad.status, bad.text);
    const v = await t.request('POST', '/api/auth/login', { body: { email: 5 } });
    console.log(v.status, v.text);
    const tp = await t.request('POST', '/api/auth/login', { rawBody: 'x', contentType: 'text/plain' });
    console.log(tp.status, tp.text);
    const big = await t.request('POST', '/api/auth/login', { rawBody: JSON.stringify({ email: 'x'.repeat(2_000_000) }), contentType: 'application/json' });
    console.log(big.status, big.text);
    const noauth = await t.request('GET', '/api/auth/me');
    console.log(noauth.status, noauth.text);
    const badt = await t.request('GET', '/api/auth/me', { token: 'x'.repeat(40) });
    console.log(badt.status, badt.text);
    expect(me.status).toBe(200);
  });
});
