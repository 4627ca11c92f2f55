/**
 * The envelope on every response, errors included, and the error of each kind of bad request.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp, type TestUser } from '../helpers/app.js';
import { expectValidationError } from '../helpers/expect.js';
import { ensureNetwork } from '../helpers/factories.js';

describe('HTTP envelope and errors', () => {
  let t: TestApp;
  let u: TestUser;
  let networkId: number;

  beforeAll(async () => {
    t = await startTestApp();
    u = await t.createUser();
    networkId = (await ensureNetwork(t)).id;
  });
  afterAll(async () => t?.close());

  const expectEnvelope = (res: { headers: Headers; body: any }, message: string) => {
    expect(res.headers.get('content-type')).toMatch(/^application\/json/);
    expect(res.body).toEqual({ status: 'error', message, data: null });
  };

  it('answers an unknown route with 404 Route not found', async () => {
    const res = await t.request('GET', '/api/does-not-exist');
    expect(res.status).toBe(404);
    expectEnvelope(res, 'Route not found');
    const outside = await t.request('GET', '/nothing-here');
    expect(outside.status).toBe(404);
    expectEnvelope(outside, 'Route not found');
  });

  it('sends the root to the dashboard and /docs to the API reference', async () => {
    for (const [from, to] of [
      ['/', '/dashboard'],
      ['/docs', '/api/docs'],
    ]) {
      const res = await fetch(`${t.url}${from}`, { redirect: 'manual' });
      expect(res.status, from).toBe(302);
      expect(res.headers.get('location'), from).toBe(to);
    }
  });

  it('answers a known path with the wrong method with 405 and an Allow header', async () => {
    const res = await t.request('DELETE', '/api/auth/me', { token: u.token });
    expect(res.status).toBe(405);
    expectEnvelope(res, 'Method not allowed');
    expect(res.headers.get('allow')).toBe('GET, HEAD');
    const login = await t.request('GET', '/api/auth/login');
    expect(login.status).toBe(405);
    expect(login.headers.get('allow')).toBe('POST');
  });

  it('answers broken JSON with 400 Malformed JSON body', async () => {
    const res = await t.request('POST', '/api/auth/login', { rawBody: '{"email": "a@b.c",', contentType: 'application/json' });
    expect(res.status).toBe(400);
    expectEnvelope(res, 'Malformed JSON body');
  });

  it('answers a body over 1 MiB with 413', async () => {
    const res = await t.request('POST', '/api/wallet/create', {
      token: u.token,
      rawBody: JSON.stringify({ name: 'x'.repeat(1024 * 1024), network_id: networkId }),
      contentType: 'application/json',
    });
    expect(res.status).toBe(413);
    expectEnvelope(res, 'Payload too large');
  });

  it('answers a non-JSON content type on a JSON route with 415', async () => {
    const res = await t.request('POST', '/api/wallet/create', {
      token: u.token,
      rawBody: 'name=x',
      contentType: 'application/x-www-form-urlencoded',
    });
    expect(res.status).toBe(415);
    expectEnvelope(res, 'Unsupported media type');
    const text = await t.request('POST', '/api/auth/login', { rawBody: 'hello', contentType: 'text/plain' });
    expect(text.status).toBe(415);
  });

  it('reports every failing field with the contract wording', async () => {
    const res = await t.request('POST', '/api/wallet/create', {
      token: u.token,
      body: { name: 123, network_id: 'one', description: 'x'.repeat(1001) },
    });
    expectValidationError(res, {
      name: ['The name field must be a string.'],
      network_id: ['The network_id field must be an integer.'],
      description: ['The description field must not be greater than 1000 characters.'],
    });
  });

  it('reports missing fields as required, an empty body included', async () => {
    const res = await t.request('POST', '/api/wallet/create', { token: u.token, rawBody: '', contentType: 'application/json' });
    expectValidationError(res, { name: ['The name field is required.'], network_id: ['The network_id field is required.'] });
  });

  it('rejects a JSON body that is not an object', async () => {
    const res = await t.request('POST', '/api/wallet/create', { token: u.token, body: [1, 2] });
    expectValidationError(res, { body: ['The request body must be a JSON object.'] });
  });

  it('answers a failing dependency with 500 and no internal detail', async () => {
    const broken = await startTestApp();
    try {
      const user = await broken.createUser();
      await broken.store.destroy(); // a real fault: the database is gone
      const res = await broken.request('GET', '/api/auth/me', { token: user.token });
      expect(res.status).toBe(500);
      expectEnvelope(res, 'Internal server error');
      expect(res.text).not.toMatch(/at |Error:|stack|sqlite|postgres|pool/i);
      expect(broken.logs.some((l) => l.includes('"level":50') && l.includes('request failed'))).toBe(true);
    } finally {
      await broken.app.close();
      await broken.database.drop();
    }
  });

  it('publishes an OpenAPI document, generated from the route schemas, with every SPEC path', async () => {
    const res = await t.request('GET', '/api/openapi.json', { token: u.token });
    expect(res.status).toBe(200);
    const doc = res.body as any; // bare, not in the envelope
    expect(doc.openapi).toBe('3.1.0');
    const paths = Object.keys(doc.paths);
    for (const p of [
      '/api/auth/login',
      '/api/wallet/{wallet}',
      '/api/wallet/{wallet}/balance',
      '/api/wallet/{wallet}/tokens',
      '/api/wallet/{wallet}/token/{token}',
      '/api/wallet/{wallet}/charge/create',
      '/api/wallet/{wallet}/charge/show/{charge}',
      '/api/wallet/{wallet}/transaction',
      '/api/wallet/{wallet}/transaction/create',
      '/api/wallet/{wallet}/transaction/show/{transaction}',
      '/api/wallet/{wallet}/webhook',
      '/api/wallet/{wallet}/webhook/types',
      '/api/wallet/{wallet}/webhook/event/{event}',
      '/api/wallet/{wallet}/webhook/create',
      '/api/wallet/{wallet}/webhook/delete/{webhook}',
      '/api/supervisor',
    ]) {
      expect(paths, p).toContain(p);
    }
    // Responses are documented with the envelope, errors included.
    const balance = doc.paths['/api/wallet/{wallet}/balance'].get.responses;
    expect(Object.keys(balance)).toEqual(expect.arrayContaining(['200', '401', '404', '422', '429', '500', '503']));
    const unauth = await t.request('GET', '/api/openapi.json');
    expect(unauth.status).toBe(200); // public
    expect(unauth.body).toEqual(doc);
  });
});
