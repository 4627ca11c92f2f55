/**
 * Every registered route is covered: it has an API-key scope or is public, and a key without
 * that scope is refused with 403 before the route does anything.
 */
import Fastify from 'fastify';
import { RateLimiterMemory } from 'rate-limiter-flexible';
import { WindowCounters } from '../../src/lib/rate-limit.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { installAuth } from '../../src/http/auth.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { createWalletRow } from '../helpers/factories.js';
import { KEY_SCOPES, scopeByRules, type RouteScope } from '../../src/modules/keys/keys.scopes.js';

/** Routes outside the authenticated scope, on purpose. */
/** Public routes: login, the OpenAPI document, the docs page and its assets, /metrics (its own token). */
const PUBLIC = [
  'POST /api/auth/login',
  ...[
    '/api/openapi.json',
    '/api/docs',
    '/api/docs/static/index.html',
    '/api/docs/static/swagger-initializer.js',
    '/api/docs/json',
    '/api/docs/yaml',
    '/api/docs/static/*',
    '/metrics',
  ].flatMap((u) => [`GET ${u}`, `HEAD ${u}`]),
  // The payer's side of a charge: the checkout page and its JSON.
  ...['/api/pay/:uuid', '/pay/:uuid'].flatMap((u) => [`GET ${u}`, `HEAD ${u}`]),
  // The payer's side of a refund claim: its page, its JSON and the claim itself.
  ...['/api/refund/:uuid', '/refund/:uuid'].flatMap((u) => [`GET ${u}`, `HEAD ${u}`]),
  'POST /api/refund/:uuid',
  // The local devnet's payer button on the checkout page (400 on any other network).
  'POST /api/pay/:uuid/devnet',
  // The dashboard's page and its built assets (its data comes through the authenticated API).
  ...['/dashboard', '/dashboard/assets/:file'].flatMap((u) => [`GET ${u}`, `HEAD ${u}`]),
  // The root and /docs: redirects to the dashboard and to the API reference.
  ...['/', '/docs'].flatMap((u) => [`GET ${u}`, `HEAD ${u}`]),
].sort();
/** Wallet routes for a login token only (an API key gets 403 `Insufficient scope`). */
const LOGIN_ONLY = new Set([
  '/api/wallet/:wallet/reconciliation/accept',
  // Money found on a charge's address after its watch, swept now (docs/charges.md, "Money sent
  // after the watch").
  '/api/wallet/:wallet/charge/:charge/sweep',
  '/api/wallet/:wallet/allowlist/add',
  '/api/wallet/:wallet/allowlist/:entry/remove',
  // A person decides a held transfer (docs/money-out.md, "Approvals").
  '/api/wallet/:wallet/transaction/:transaction/approve',
  '/api/wallet/:wallet/transaction/:transaction/reject',
  '/api/wallet/:wallet/payout/:payout/approve',
  '/api/wallet/:wallet/payout/:payout/reject',
]);
/** Login-only for POST, `read` for GET (docs/money-out.md, "The policy"). */
const LOGIN_ONLY_POST = new Set(['/api/wallet/:wallet/policy']);
const WRITE_SCOPES = KEY_SCOPES.filter((s) => s !== '*' && s !== 'read');

interface Route {
  method: string;
  url: string;
  scope: RouteScope | null;
}

function routesOf(t: TestApp): Route[] {
  return t.app
    .routeTable()
    .flatMap((r) => (Array.isArray(r.method) ? r.method : [r.method]).map((method) => ({ method, url: r.url, scope: r.scope })));
}

describe('API-key scopes of the routes', () => {
  let t: TestApp;
  let token: string;
  let walletId: number;
  const keys = new Map<string, string>();

  beforeAll(async () => {
    t = await startTestApp();
    const user = await t.createUser();
    token = user.token;
    walletId = (await createWalletRow(t, user.id)).id;
    // For each scope, a key holding every other scope; and one holding all of them.
    for (const needed of [...WRITE_SCOPES, 'read']) {
      const scopes = KEY_SCOPES.filter((s) => s !== '*' && s !== needed);
      const res = await t.request('POST', '/api/auth/key/create', { token, body: { name: `all but ${needed}`, scopes } });
      keys.set(needed, res.body.data.key);
    }
    keys.set('*', (await t.request('POST', '/api/auth/key/create', { token, body: { name: 'all', scopes: ['*'] } })).body.data.key);
  });
  afterAll(async () => t?.close());

  it('gives every registered route a scope, or lists it as public', () => {
    const routes = routesOf(t);
    expect(routes.length).toBeGreaterThan(30);
    const uncovered = routes.filter((r) => r.scope === null).map((r) => `${r.method} ${r.url}`);
    expect(uncovered.sort()).toEqual(PUBLIC);
    for (const r of routes.filter((x) => x.scope !== null)) {
      const reads = r.method === 'GET' || r.method === 'HEAD';
      const mutatingGet = /\/(token\/remove|webhook\/delete)\//.test(r.url);
      if (
        r.url.startsWith('/api/auth/key') ||
        r.url === '/api/auth/logout' ||
        LOGIN_ONLY.has(r.url) ||
        (r.method === 'POST' && LOGIN_ONLY_POST.has(r.url))
      )
        expect([r.url, r.scope]).toEqual([r.url, 'login']);
      else if (reads && !mutatingGet) expect([r.method, r.url, r.scope]).toEqual([r.method, r.url, 'read']);
      else expect([r.method, r.url, WRITE_SCOPES.includes(r.scope as never)]).toEqual([r.method, r.url, true]);
    }
  });

  it('refuses, with 403 before anything runs, every route called with a key lacking its scope', async () => {
    const routes = routesOf(t).filter((r) => r.scope !== null && r.method !== 'HEAD');
    for (const r of routes) {
      const path = r.url.replace(':wallet', String(walletId)).replace(/:[a-z]+/g, '999999');
      const key = r.scope === 'login' ? keys.get('*')! : keys.get(r.scope!)!;
      const body = r.method === 'POST' ? {} : undefined;
      const res = await t.request(r.method, path, { token: key, body });
      expect([r.method, r.url, res.status, res.body]).toEqual([
        r.method,
        r.url,
        403,
        { status: 'error', message: 'Insufficient scope', data: null },
      ]);
      if (r.scope === 'login') continue;
      // With the scope (the `*` key), the route runs: whatever it answers, it is not a 403.
      const allowed = await t.request(r.method, path, { token: keys.get('*')!, body });
      expect([r.method, r.url, allowed.status === 403]).toEqual([r.method, r.url, false]);
    }
  });

  it('refuses to register a route that resolves to no scope (the service does not start)', async () => {
    expect(scopeByRules('PUT', '/api/wallet/:wallet')).toBeUndefined();
    const f = Fastify();
    void f.register(async (scoped) => {
      installAuth(
        scoped,
        t.ctx,
        t.services.auth,
        new WindowCounters(new RateLimiterMemory({ points: 1_000_000, duration: 120 }), 'test'),
        async () => undefined,
      );
      scoped.post('/api/wallet/:wallet/charge/create', async () => 'by the rules');
      scoped.post('/api/something/declared', { config: { scope: 'webhooks:write' } }, async () => 'declared');
      scoped.post('/api/something/new', async () => 'neither');
    });
    await expect(f.ready()).rejects.toThrow('route POST /api/something/new declares no API-key scope');
    await f.close().catch(() => undefined);
  });
});
