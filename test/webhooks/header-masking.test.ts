/**
 * Webhook header values (often a receiver's credentials) are shown to login tokens and to API
 * keys with `webhooks:write` (or `*`); a key that may only read sees each value as `***`
 * (docs/operating.md, "Threat model: what a leaked credential can do").
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { createWebhook, owner, type Owner } from './fixtures.js';

describe('webhook headers and API-key scopes', () => {
  let t: TestApp;
  let a: Owner;
  beforeAll(async () => {
    t = await startTestApp();
    a = await owner(t);
    await createWebhook(t, a, {
      url: 'https://example.com/hook',
      type: 'transaction',
      events: ['confirmed'],
      with_headers: { Authorization: 'Bearer receiver-credential', 'X-Tenant': 'acme' },
    });
  });
  afterAll(async () => t?.close());

  const keyWith = async (scopes: string[]) => {
    const res = await t.request('POST', '/api/auth/key/create', { token: a.user.token, body: { name: scopes.join('+'), scopes } });
    expect(res.status).toBe(200);
    return res.body.data.key as string;
  };
  const headersSeenBy = async (token: string) => {
    const res = await t.request('GET', `/api/wallet/${a.walletId}/webhook`, { token });
    expect(res.status).toBe(200);
    expect(res.body.data).toHaveLength(1);
    return res.body.data[0].headers;
  };

  it('a read key sees *** for every value; webhooks:write, * and a login token see them', async () => {
    const real = { Authorization: 'Bearer receiver-credential', 'X-Tenant': 'acme' };
    expect(await headersSeenBy(await keyWith(['read']))).toEqual({ Authorization: '***', 'X-Tenant': '***' });
    expect(await headersSeenBy(await keyWith(['read', 'charges:write']))).toEqual({ Authorization: '***', 'X-Tenant': '***' });
    expect(await headersSeenBy(await keyWith(['read', 'webhooks:write']))).toEqual(real);
    expect(await headersSeenBy(await keyWith(['*']))).toEqual(real);
    expect(await headersSeenBy(a.user.token)).toEqual(real);
  });

  it('the OpenAPI description says who sees the values', async () => {
    const doc = await (await fetch(`${t.url}/api/openapi.json`)).json();
    const op = doc.paths['/api/wallet/{wallet}/webhook'].get;
    expect(op.description).toContain('any other key sees each value as `***`');
    expect(op.description).not.toContain('headers are never shown');
  });
});
