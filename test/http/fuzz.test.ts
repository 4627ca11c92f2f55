/**
 * Property-based fuzzing of the HTTP edge (fast-check): every route the running app has
 * registered gets generated bad input (wrong types, deep nesting, huge and malformed numbers,
 * bad path ids, bad query strings, bad headers and content types), with a valid token and
 * without. For every response: never a 5xx, always the envelope `{status, message, data}` as
 * JSON, and a 4xx writes nothing (the row count of every table is the same before and after).
 *
 * Bounded: a fixed list of examples (examplesFor) plus RUNS_PER_ROUTE generated runs for each
 * route, small generated values, one request at a time; the bound does not depend on the seed. A failure prints fast-check's seed and path; replay
 * with FUZZ_SEED=<seed> (and FUZZ_RUNS_PER_ROUTE to go longer by hand).
 */
import fc from 'fast-check';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type ApiResponse, type TestApp, type TestUser } from '../helpers/app.js';
import { startTestChain, type TestChain } from '../helpers/chain.js';
import { createWalletRow } from '../helpers/factories.js';

const RUNS_PER_ROUTE = Number(process.env.FUZZ_RUNS_PER_ROUTE ?? 14);
const SEED = process.env.FUZZ_SEED === undefined ? undefined : Number(process.env.FUZZ_SEED);

/**
 * Routes whose success response is not the envelope (the OpenAPI document, the
 * docs page and its assets, /metrics, the checkout and the refund claim pages, the dashboard's page and assets, the CSV
 * exports are served bare; `/` and `/docs` redirect to the dashboard and the docs page).
 * Their errors are still the envelope, except the two pages' 404, a plain HTML page (HTML_NOT_FOUND).
 */
const BARE_SUCCESS = {
  has: (route: string) =>
    /^(GET|HEAD) (\/|\/docs|\/api\/openapi\.json|\/api\/docs(\/.*)?|\/metrics|\/pay\/:uuid|\/refund\/:uuid|\/dashboard|\/dashboard\/assets\/:file|\/api\/wallet\/:wallet\/export\/(transactions|charges|payouts)\.csv)$/.test(
      route,
    ),
};
const HTML_NOT_FOUND = { has: (route: string) => /^(GET|HEAD) \/(pay|refund)\/:uuid$/.test(route) };

interface Route {
  method: string;
  /** Fastify's form: `/api/wallet/:wallet`. */
  url: string;
  params: string[];
  bodyFields: string[];
  queryFields: string[];
}

/**
 * The app's routes from Fastify's own route tree (`printRoutes`), so a route without a schema
 * or hidden from the OpenAPI document is fuzzed too. Each line is `<indent>├── <segment> (GET, HEAD)`;
 * the indent is four columns per level.
 */
function routesFromTree(tree: string): Array<{ method: string; url: string }> {
  const stack: string[] = [];
  const out: Array<{ method: string; url: string }> = [];
  for (const line of tree.split('\n')) {
    const m = /^(.*?)[├└]── (.*?)(?: \(([A-Z, ]+)\))?$/.exec(line);
    if (!m) continue;
    const level = [...m[1]!].length / 4;
    stack.length = level;
    stack.push(m[2]!);
    for (const method of m[3]?.split(', ') ?? []) if (method !== 'HEAD') out.push({ method, url: stack.join('') });
  }
  return out;
}

type OpenApiOperation = {
  parameters?: Array<{ in: string; name: string }>;
  requestBody?: { content?: Record<string, { schema?: { properties?: Record<string, unknown> } }> };
};

function enumerateRoutes(t: TestApp): Route[] {
  const routes = routesFromTree(t.app.printRoutes({ commonPrefix: false }));
  const doc = t.app.swagger() as { paths: Record<string, Record<string, OpenApiOperation>> };
  const ops = new Map<string, OpenApiOperation>();
  for (const [path, byMethod] of Object.entries(doc.paths)) {
    for (const [method, op] of Object.entries(byMethod)) ops.set(`${method.toUpperCase()} ${path.replace(/\{(\w+)\}/g, ':$1')}`, op);
  }
  // The tree parser must see every documented operation (else it, not the app, is wrong).
  const seen = new Set(routes.map((r) => `${r.method} ${r.url}`));
  for (const key of ops.keys()) expect(seen, `route tree is missing ${key}`).toContain(key);
  return routes.map(({ method, url }) => {
    const op = ops.get(`${method} ${url}`);
    return {
      method,
      url,
      params: [...url.matchAll(/:(\w+)/g)].map((p) => p[1]!),
      bodyFields: Object.keys(op?.requestBody?.content?.['application/json']?.schema?.properties ?? {}),
      queryFields: (op?.parameters ?? []).filter((p) => p.in === 'query').map((p) => p.name),
    };
  });
}

/** Row count of every table, in one query. */
async function rowCounts(t: TestApp, tables: string[]): Promise<Record<string, number>> {
  const columns = tables.map((name) => sql`(select count(*) from ${sql.table(name)}) as ${sql.ref(name)}`);
  const { rows } = await sql<Record<string, number | string>>`select ${sql.join(columns)}`.execute(t.store.db);
  return Object.fromEntries(Object.entries(rows[0]!).map(([k, v]) => [k, Number(v)]));
}

// ---------------------------------------------------------------- generators

const nastyStrings = fc.constantFrom(
  '',
  ' ',
  '0',
  '-1',
  '1.0000000',
  '0.0000001',
  '1e5',
  '1e999999',
  '-0',
  '0x10',
  'NaN',
  'Infinity',
  'null',
  'true',
  '1'.repeat(300),
  'x'.repeat(5000),
  '0x0000000000000000000000000000000000000000',
  '0x000000000000000000000000000000000000dEaD',
  'http://127.0.0.1:1/hook',
  'ftp://x',
  '*',
  'charge.created',
  'transaction.*',
  '__proto__',
  'constructor',
  '2024-01-01 00:00:00',
  '\u0000',
  '\u202e',
  '😀',
  '%zz',
  '<script>',
  "' OR 1=1 --",
);
const scalar = fc.oneof(
  nastyStrings,
  fc.string({ maxLength: 20 }),
  fc.string({ unit: 'grapheme', maxLength: 8 }),
  fc.integer(),
  fc.double(),
  fc.constantFrom(0, -0, -1, 1.5, 0.1, 1e21, 1e308, -1e308, 5e-324, Number.MAX_SAFE_INTEGER + 2),
  fc.boolean(),
  fc.constant(null),
);
const jsonish: fc.Arbitrary<unknown> = fc.oneof(
  { weight: 4, arbitrary: scalar },
  { weight: 1, arbitrary: fc.array(scalar, { maxLength: 4 }) },
  { weight: 1, arbitrary: fc.dictionary(fc.string({ maxLength: 8 }), scalar, { maxKeys: 4 }) },
  { weight: 1, arbitrary: fc.jsonValue({ maxDepth: 3 }) },
);

/** JSON text no JSON.stringify makes: deep nesting, numbers past every float and integer type. */
const rawJsonValue = fc.oneof(
  fc.integer({ min: 60, max: 5000 }).map((n) => '{"a":'.repeat(n) + '1' + '}'.repeat(n)),
  fc.integer({ min: 60, max: 5000 }).map((n) => '['.repeat(n) + ']'.repeat(n)),
  fc.constantFrom(
    '1' + '0'.repeat(400),
    '-' + '9'.repeat(400),
    '1e999999',
    '-1e-999999',
    '0.' + '0'.repeat(300) + '1',
    '123456789012345678901234567890.123456789012345678901234567890',
    '-0.0',
    '1E+2',
  ),
);

/** A body for a route: its own fields (and others) with bad values, or broken JSON. */
function bodyFor(route: Route): fc.Arbitrary<string> {
  const key = fc.oneof(fc.constantFrom(...route.bodyFields, '__proto__', 'constructor', 'x'), fc.string({ maxLength: 10 }));
  const object = fc.dictionary(key, jsonish, { maxKeys: 5 });
  return fc.oneof(
    { weight: 4, arbitrary: object.map((o) => JSON.stringify(o)) },
    {
      weight: 2,
      arbitrary: fc.tuple(key, rawJsonValue, object).map(([k, raw, rest]) => {
        const tail = JSON.stringify(rest).slice(1);
        return `{${JSON.stringify(k)}:${raw}${tail === '}' ? '}' : `,${tail}`}`;
      }),
    },
    { weight: 1, arbitrary: rawJsonValue },
    {
      weight: 1,
      arbitrary: fc.constantFrom(
        '',
        '{',
        '{"a":1,}',
        'nul',
        '\uFEFF{}',
        '[1,2',
        '"just a string"',
        '123',
        'null',
        '[]',
        '{"a":"\\ud800"}',
        '{"__proto__":{"polluted":true}}',
        '{"constructor":{"prototype":{"polluted":true}}}',
        '{"a":1}{"b":2}',
      ),
    },
    { weight: 1, arbitrary: fc.jsonValue({ maxDepth: 4 }).map((v) => JSON.stringify(v)) },
  );
}

const badId = fc.oneof(
  fc.constantFrom(
    '0',
    '-1',
    '01',
    '1.5',
    '1e3',
    '0x10',
    'abc',
    'null',
    '%20',
    '%00',
    '%2F',
    '%zz',
    '%',
    '%ff',
    '%E0%A4%A',
    '%C0%AF',
    '..',
    '.',
    '%2e%2e',
  ),
  fc.bigInt({ min: -(10n ** 40n), max: 10n ** 40n }).map(String),
  // Over-long: on both sides of the router's 1024-character limit on a parameter.
  fc.integer({ min: 201, max: 1100 }).map((n) => '9'.repeat(n)),
  fc
    .string({ unit: 'grapheme', maxLength: 30 })
    .filter((s) => s !== '')
    .map(encodeURIComponent),
  fc.uuid(),
);

const queryValue = fc.oneof(
  fc.constantFrom('-1', '0', '1.5', 'abc', '1e3', '99999999999999999999', '', '%zz', '%', '[]', 'ETH', 'charge', 'charge.created'),
  fc.integer().map(String),
  fc.string({ unit: 'grapheme', maxLength: 20 }).map(encodeURIComponent),
);

function queryFor(route: Route): fc.Arbitrary<string> {
  const key = fc.constantFrom(...route.queryFields, 'page', 'limit', 'after', 'token', 'type', 'event', '__proto__', 'x');
  return fc
    .array(fc.tuple(key, queryValue), { maxLength: 4 })
    .map((pairs) => (pairs.length === 0 ? '' : '?' + pairs.map(([k, v]) => `${k}=${v}`).join('&')));
}

type AuthKind = 'valid' | 'none' | 'lowercase-scheme' | 'garbage' | 'basic' | 'bare-scheme' | 'tampered' | 'huge';
// Mostly a valid token, so most requests get past authentication into the wallet guard and validation.
const authKind = fc.oneof(
  { weight: 12, arbitrary: fc.constant<AuthKind>('valid') },
  { weight: 2, arbitrary: fc.constant<AuthKind>('none') },
  { weight: 1, arbitrary: fc.constantFrom<AuthKind>('lowercase-scheme', 'garbage', 'basic', 'bare-scheme', 'tampered', 'huge') },
);

const contentType = fc.oneof(
  { weight: 8, arbitrary: fc.constant('application/json') },
  {
    weight: 2,
    arbitrary: fc.constantFrom(
      'application/json; charset=utf-8',
      'APPLICATION/JSON',
      'application/json; charset=latin1',
      'text/plain',
      'application/x-www-form-urlencoded',
      'multipart/form-data; boundary=x',
      'application/jsonx',
      'x/y/z',
      ';;;',
      'a'.repeat(300),
      undefined,
    ),
  },
);

const extraHeaders = fc.record(
  {
    'idempotency-key': fc.oneof(fc.constantFrom('', ' ', 'k'.repeat(256), 'a b', 'key-1'), fc.string({ maxLength: 20 })),
    'x-request-id': fc.oneof(fc.constant('r'.repeat(500)), fc.string({ maxLength: 20 })),
    accept: fc.constantFrom('text/html', '*/*', 'application/xml', ''),
  },
  { requiredKeys: [] },
);

interface Case {
  method: string;
  path: string;
  auth: AuthKind;
  contentType: string | undefined;
  body: string | undefined;
  headers: Record<string, string>;
}

function clip(text: string, max = 300): string {
  return text.length <= max ? text : `${text.slice(0, max)}… (${text.length} chars)`;
}

function describeCase(c: Case): string {
  return `${c.method} ${clip(c.path)} auth=${c.auth} content-type=${c.contentType} headers=${JSON.stringify(c.headers)} body=${clip(c.body ?? '<none>')}`;
}

function caseFor(route: Route, walletId: number, otherWalletId: number): fc.Arbitrary<Case> {
  const paramValue = (name: string) =>
    name === 'wallet'
      ? fc.oneof({ weight: 3, arbitrary: fc.constant(String(walletId)) }, fc.constant(String(otherWalletId)), badId)
      : badId;
  const params = fc.tuple(...route.params.map(paramValue));
  const withBody = route.method !== 'GET' && route.method !== 'HEAD';
  const method = fc.oneof({ weight: 9, arbitrary: fc.constant(route.method) }, fc.constantFrom('PUT', 'DELETE', 'PATCH'));
  return fc
    .record({
      method,
      values: params,
      query: queryFor(route),
      auth: authKind,
      contentType,
      body: withBody ? fc.option(bodyFor(route), { freq: 6 }) : fc.constant(null),
      headers: extraHeaders,
    })
    .map(({ method: m, values, query, auth, contentType: ct, body, headers }) => {
      let i = 0;
      const path = route.url.replace(/:(\w+)/g, () => values[i++]!) + query;
      return printable({ method: m, path, auth, contentType: ct, body: body ?? undefined, headers });
    });
}

/** fast-check prints a counterexample with describeCase: a 5000-level body stays readable. */
function printable(c: Case): Case {
  return Object.assign(c, { [fc.toStringMethod]: () => describeCase(c) });
}

/**
 * Cases every run starts with, whatever the seed: the route without a token and with a bad
 * one; then with a valid token and the caller's own wallet, a non-JSON content type, each path
 * parameter in turn a bad escape or over-long, and each body field in turn nested 5,000
 * levels deep or a number of 400 digits.
 */
function examplesFor(route: Route, walletId: number): Case[] {
  const pathWith = (bad: Record<string, string>) =>
    route.url.replace(/:(\w+)/g, (_m, name: string) => bad[name] ?? (name === 'wallet' ? String(walletId) : '1'));
  const base: Case = {
    method: route.method,
    path: pathWith({}),
    auth: 'valid',
    contentType: 'application/json',
    body: undefined,
    headers: {},
  };
  const out: Case[] = [
    { ...base, auth: 'none' },
    { ...base, auth: 'garbage' },
  ];
  if (route.method === 'POST') out.push({ ...base, contentType: 'text/plain', body: '{}' });
  for (const param of route.params) {
    for (const bad of ['%zz', '%ff', '9'.repeat(300), '9'.repeat(1100)]) out.push({ ...base, path: pathWith({ [param]: bad }) });
  }
  if (route.method === 'POST') {
    for (const field of route.bodyFields) {
      for (const raw of ['{"a":'.repeat(5000) + '1' + '}'.repeat(5000), '['.repeat(5000) + ']'.repeat(5000), '1' + '0'.repeat(400)]) {
        out.push({ ...base, body: `{${JSON.stringify(field)}:${raw}}` });
      }
    }
  }
  return out.map(printable);
}

// ---------------------------------------------------------------- the test

describe('fuzzing every route with bad input', () => {
  let t: TestApp;
  let chain: TestChain;
  let user: TestUser;
  let walletId: number;
  let otherWalletId: number;
  let tables: string[];

  beforeAll(async () => {
    chain = await startTestChain();
    t = await startTestApp();
    const networkId = await chain.register(t);
    user = await t.createUser();
    const other = await t.createUser();
    walletId = (await createWalletRow(t, user.id, { networkId })).id;
    otherWalletId = (await createWalletRow(t, other.id, { networkId })).id;
    // rate_limits (PostgreSQL's shared request counters) counts every authenticated request by design.
    tables = (await t.store.db.introspection.getTables())
      .map((x) => x.name)
      .filter((n) => n !== 'rate_limits')
      .sort();
  });
  afterAll(async () => {
    await t?.close();
    await chain?.stop();
  });

  /** A token that logout may revoke: minted directly, so the fuzzed login throttle cannot block it. */
  async function freshToken(): Promise<string> {
    return (await t.services.auth.login(user.email, user.password, '192.0.2.1')).token;
  }

  async function authorization(kind: AuthKind, route: Route): Promise<string | undefined> {
    const token = route.url === '/api/auth/logout' && (kind === 'valid' || kind === 'lowercase-scheme') ? await freshToken() : user.token;
    switch (kind) {
      case 'valid':
        return `Bearer ${token}`;
      case 'lowercase-scheme':
        return `bearer ${token}`;
      case 'none':
        return undefined;
      case 'garbage':
        return 'Bearer not-a-token';
      case 'basic':
        return `Basic ${Buffer.from(`${user.email}:${user.password}`).toString('base64')}`;
      case 'bare-scheme':
        return 'Bearer';
      case 'tampered':
        return `Bearer ${token.slice(0, -1)}${token.endsWith('A') ? 'B' : 'A'}`;
      case 'huge':
        return `Bearer ${'a'.repeat(4000)}`;
    }
  }

  async function send(c: Case, auth: string | undefined): Promise<ApiResponse> {
    const headers: Record<string, string> = { ...c.headers };
    if (auth !== undefined) headers.authorization = auth;
    if (c.contentType !== undefined) headers['content-type'] = c.contentType;
    const res = await fetch(`${t.url}${c.path}`, { method: c.method, headers, body: c.body });
    const text = await res.text();
    let body: any;
    try {
      body = JSON.parse(text);
    } catch {
      body = { unparsed: text.slice(0, 200) };
    }
    return { status: res.status, headers: res.headers, body, text };
  }

  function expectEnvelope(route: Route, c: Case, res: ApiResponse): void {
    const label = `${describeCase(c)} → ${res.status} ${clip(res.text)}`;
    expect(res.status, label).toBeLessThan(500);
    if (res.status < 300 && BARE_SUCCESS.has(`${route.method} ${route.url}`)) return;
    // The checkout page's own 404 is HTML; a path the router does not take to it (dot segments,
    // bad escapes) is the envelope's `Route not found` like any other unknown path.
    const htmlNotFound = res.status === 404 && c.method === route.method && HTML_NOT_FOUND.has(`${route.method} ${route.url}`);
    if (htmlNotFound && res.headers.get('content-type') === 'text/html; charset=utf-8') return;
    expect(res.headers.get('content-type'), label).toMatch(/^application\/json/);
    expect(Object.keys(res.body ?? {}).sort(), label).toEqual(['data', 'message', 'status']);
    expect(res.body.status, label).toBe(res.status < 400 ? 'success' : 'error');
    expect(typeof res.body.message, label).toBe('string');
    if (res.status >= 400) {
      const data = res.body.data;
      const fieldErrors =
        data !== null &&
        typeof data === 'object' &&
        Object.values(data).every((m) => Array.isArray(m) && m.every((s) => typeof s === 'string'));
      expect(data === null || fieldErrors || res.status === 400, label).toBe(true);
    }
  }

  it('never answers a 5xx or outside the envelope, and a 4xx writes nothing', async () => {
    const routes = enumerateRoutes(t);
    expect(routes.length).toBeGreaterThanOrEqual(28);
    const statuses = new Map<number, number>();
    for (const route of routes) {
      const examples = examplesFor(route, walletId).map((c): [Case] => [c]);
      await fc.assert(
        fc.asyncProperty(caseFor(route, walletId, otherWalletId), async (c) => {
          const auth = await authorization(c.auth, route);
          const before = await rowCounts(t, tables);
          const res = await send(c, auth);
          statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
          expectEnvelope(route, c, res);
          if (res.status >= 400) {
            const after = await rowCounts(t, tables);
            // A create with an Idempotency-Key stores its 4xx answer for replays (as designed).
            if (c.headers['idempotency-key'] !== undefined) after.idempotency_keys = before.idempotency_keys!;
            expect(after, `${describeCase(c)} → ${res.status} wrote rows`).toEqual(before);
          }
        }),
        // Examples count towards numRuns in fast-check: the generated runs come on top.
        { numRuns: examples.length + RUNS_PER_ROUTE, examples, seed: SEED, endOnFailure: true },
      );
    }
    if (process.env.FUZZ_VERBOSE) console.log(Object.fromEntries([...statuses].sort((a, b) => a[0] - b[0])));
    // The generators reach past authentication and the wallet guard, into validation.
    expect(statuses.get(401) ?? 0).toBeGreaterThan(0);
    expect(statuses.get(404) ?? 0).toBeGreaterThan(0);
    expect(statuses.get(422) ?? 0).toBeGreaterThan(0);
  }, 120_000);
});
