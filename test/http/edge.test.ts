/**
 * The edge's answers to malformed requests, through real HTTP: JSON nested too deep (422 on
 * the field, after the wallet guard), bad percent-escapes and over-long path ids (the
 * contract's order of checks, or 414, in the envelope), errors of Node's HTTP parser (431,
 * 400 in the envelope over a raw socket), and amounts with more decimal places than the
 * token has, trailing zeros included.
 */
import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MAX_PATH_PARAM_CHARS, SERVER_TIMEOUTS_MS } from '../../src/app.js';
import { MAX_JSON_DEPTH } from '../../src/http/validation.js';
import { startTestApp, type ApiResponse, type TestApp, type TestUser } from '../helpers/app.js';
import { expectValidationError } from '../helpers/expect.js';
import { createWalletRow } from '../helpers/factories.js';

/** `{"a":{"a":…1…}}` with `levels` objects: the body's own object is not counted. */
function nestedObjects(levels: number): string {
  return '{"a":'.repeat(levels) + '1' + '}'.repeat(levels);
}

const TABLES = ['wallets', 'wallet_tokens', 'charges', 'sub_wallets', 'events', 'webhooks', 'idempotency_keys'] as const;

async function counts(t: TestApp): Promise<Record<string, number>> {
  const out: Record<string, number> = {};
  for (const table of TABLES) {
    const row = await t.store.db.selectFrom(table).select(t.store.db.fn.countAll<number>().as('n')).executeTakeFirstOrThrow();
    out[table] = Number(row.n);
  }
  return out;
}

function expectError(res: ApiResponse, status: number, message: string): void {
  expect(res.status, res.text.slice(0, 300)).toBe(status);
  expect(res.headers.get('content-type')).toMatch(/^application\/json/);
  expect(res.body).toEqual({ status: 'error', message, data: null });
}

interface RawResponse {
  status: number;
  headers: Record<string, string>;
  body: unknown;
}

/** Writes `payload` on a fresh TCP connection and reads until the server closes it. */
function rawRequest(url: string, payload: string, waitMs = 5_000): Promise<RawResponse> {
  const { port } = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = net.connect(Number(port), '127.0.0.1');
    const chunks: Buffer[] = [];
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error(`the server did not close the connection within ${waitMs} ms`));
    }, waitMs);
    socket.on('data', (d: Buffer) => chunks.push(d));
    socket.on('error', () => undefined); // a reset after the answer is read is fine
    socket.on('close', () => {
      clearTimeout(timer);
      const text = Buffer.concat(chunks).toString('utf8');
      const [head = '', body = ''] = text.split('\r\n\r\n');
      const [statusLine = '', ...lines] = head.split('\r\n');
      const headers = Object.fromEntries(lines.map((l) => [l.slice(0, l.indexOf(':')).toLowerCase(), l.slice(l.indexOf(':') + 1).trim()]));
      let parsed: unknown;
      try {
        parsed = JSON.parse(body);
      } catch {
        parsed = { unparsed: text };
      }
      resolve({ status: Number(statusLine.split(' ')[1]), headers, body: parsed });
    });
    socket.write(payload);
  });
}

describe('the edge answers malformed requests in the envelope', () => {
  let t: TestApp;
  let alice: TestUser;
  let bob: TestUser;
  let wallet: { id: number };

  beforeAll(async () => {
    t = await startTestApp();
    alice = await t.createUser();
    bob = await t.createUser();
    wallet = await createWalletRow(t, alice.id);
    const now = Date.now();
    await t.store.db
      .insertInto('wallet_tokens')
      .values({
        wallet_id: wallet.id,
        name: 'Test USD',
        symbol: 'TUSD',
        decimals: 6,
        contract: '0x5FbDB2315678afecb367f032d93F642f64180aa3',
        is_native: 0,
        is_active: 1,
        is_testnet: 1,
        created_at: now,
        updated_at: now,
      })
      .execute();
  });
  afterAll(async () => t?.close());

  describe('JSON nesting depth', () => {
    it(`takes a body nested ${MAX_JSON_DEPTH} levels and refuses ${MAX_JSON_DEPTH + 1} with 422 on the field`, async () => {
      // The body is level 1; `x` (an unknown field, ignored when valid) holds the rest.
      const atLimit = await t.request('POST', `/api/wallet/${wallet.id}/update`, {
        token: alice.token,
        rawBody: `{"name":"Deep","x":${nestedObjects(MAX_JSON_DEPTH - 1)}}`,
        contentType: 'application/json',
      });
      expect(atLimit.status, atLimit.text).toBe(200);
      expect(atLimit.body.data.name).toBe('Deep');

      const before = await counts(t);
      const over = await t.request('POST', `/api/wallet/${wallet.id}/update`, {
        token: alice.token,
        rawBody: `{"name":"Deeper","x":${nestedObjects(MAX_JSON_DEPTH)}}`,
        contentType: 'application/json',
      });
      expectValidationError(over, { x: [`The x field must not be nested more than ${MAX_JSON_DEPTH} levels deep.`] });
      expect(await counts(t)).toEqual(before);
    });

    it('answers a charge content nested 5,000 levels with 422 on content, and writes nothing', async () => {
      const before = await counts(t);
      const res = await t.request('POST', `/api/wallet/${wallet.id}/charge/create`, {
        token: alice.token,
        rawBody: `{"amount":"1","token":"ETH","content":${nestedObjects(5000)}}`,
        contentType: 'application/json',
      });
      expectValidationError(res, { content: [`The content field must not be nested more than ${MAX_JSON_DEPTH} levels deep.`] });
      expect(await counts(t)).toEqual(before);
    });

    it('puts the error on body when the body itself is the deep array', async () => {
      const res = await t.request('POST', '/api/wallet/create', {
        token: alice.token,
        rawBody: '['.repeat(200_000) + ']'.repeat(200_000),
        contentType: 'application/json',
      });
      expectValidationError(res, { body: [`The request body must not be nested more than ${MAX_JSON_DEPTH} levels deep.`] });
    });

    it('keeps the order of checks: 401, then 404 for the wallet, then the 422', async () => {
      const body = `{"amount":"1","token":"ETH","content":${nestedObjects(5000)}}`;
      const noToken = await t.request('POST', `/api/wallet/${wallet.id}/charge/create`, { rawBody: body, contentType: 'application/json' });
      expectError(noToken, 401, 'Unauthenticated');
      const notMine = await t.request('POST', `/api/wallet/${wallet.id}/charge/create`, {
        token: bob.token,
        rawBody: body,
        contentType: 'application/json',
      });
      expectError(notMine, 404, 'Wallet not found');
    });

    it('counts brackets inside strings as text, and still drops prototype-poisoning keys', async () => {
      const res = await t.request('POST', `/api/wallet/${wallet.id}/update`, {
        token: alice.token,
        rawBody: JSON.stringify({ name: 'Brackets', description: '['.repeat(500) + '{'.repeat(500) }).replace(
          '}',
          ',"constructor":{"prototype":{"polluted":true}}}',
        ),
        contentType: 'application/json',
      });
      expect(res.status, res.text).toBe(200);
      expect(res.body.data.description).toBe('['.repeat(500) + '{'.repeat(500));
      expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    });
  });

  describe('path ids the router cannot take as they are', () => {
    it('treats a bad percent-escape as a bad id: 401 without a token, else the object 404', async () => {
      expectError(await t.request('GET', '/api/wallet/%zz'), 401, 'Unauthenticated');
      for (const id of ['%zz', '%', '%ff', '%E0%A4%A', '1%zz']) {
        expectError(await t.request('GET', `/api/wallet/${id}`, { token: alice.token }), 404, 'Wallet not found');
      }
      expectError(await t.request('GET', `/api/wallet/${wallet.id}/charge/show/%zz`, { token: alice.token }), 404, 'Charge not found');
      expectError(await t.request('GET', `/api/wallet/${wallet.id}/token/%ff`, { token: alice.token }), 404, 'Token not found');
      expectError(await t.request('GET', '/api/nowhere/%zz', { token: alice.token }), 404, 'Route not found');
      // The query string is not the path: a bad escape there is not a bad id.
      const list = await t.request('GET', `/api/wallet/${wallet.id}/charge?x=%zz`, { token: alice.token });
      expect(list.status).toBe(200);
    });

    it(`treats an id up to ${MAX_PATH_PARAM_CHARS} characters as any bad id, and a longer one as 414`, async () => {
      expectError(await t.request('GET', `/api/wallet/${'9'.repeat(201)}`), 401, 'Unauthenticated');
      for (const length of [201, MAX_PATH_PARAM_CHARS]) {
        expectError(await t.request('GET', `/api/wallet/${'9'.repeat(length)}`, { token: alice.token }), 404, 'Wallet not found');
      }
      expectError(
        await t.request('GET', `/api/wallet/${'9'.repeat(MAX_PATH_PARAM_CHARS + 1)}`, { token: alice.token }),
        414,
        'URI too long',
      );
      expectError(
        await t.request('GET', `/api/wallet/${wallet.id}/charge/show/${'a'.repeat(5000)}`, { token: alice.token }),
        414,
        'URI too long',
      );
    });
  });

  describe("errors of Node's HTTP parser", () => {
    it('answers a 20 KiB header with 431 in the envelope and closes the connection', async () => {
      const res = await rawRequest(t.url, `GET /api/auth/me HTTP/1.1\r\nHost: localhost\r\nX-Big: ${'a'.repeat(20 * 1024)}\r\n\r\n`);
      expect(res.status).toBe(431);
      expect(res.headers['content-type']).toMatch(/^application\/json/);
      expect(res.headers.connection).toBe('close');
      expect(res.body).toEqual({ status: 'error', message: 'Request header fields too large', data: null });
    });

    it('cuts a request whose headers do not arrive within 10 s: 408 in the envelope, connection closed', async () => {
      const started = Date.now();
      const res = await rawRequest(t.url, 'GET /api/auth/me HTTP/1.1\r\nHost: localhost\r\nX-Slow: 1\r\n', 20_000);
      const tookMs = Date.now() - started;
      expect(res.status).toBe(408);
      expect(res.body).toEqual({ status: 'error', message: 'Request timeout', data: null });
      expect(tookMs).toBeGreaterThanOrEqual(SERVER_TIMEOUTS_MS.headers - 100);
      expect(tookMs).toBeLessThan(SERVER_TIMEOUTS_MS.headers + 4_000);
      // The whole request's limit and the idle keep-alive limit, as the server has them.
      expect(t.app.server.requestTimeout).toBe(30_000);
      expect(t.app.server.keepAliveTimeout).toBe(72_000);
      expect(t.app.server.headersTimeout).toBe(10_000);
    }, 30_000);

    it('answers conflicting Content-Length and Transfer-Encoding with 400 in the envelope', async () => {
      const res = await rawRequest(
        t.url,
        'POST /api/auth/login HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n',
      );
      expect(res.status).toBe(400);
      expect(res.headers['content-type']).toMatch(/^application\/json/);
      expect(res.headers.connection).toBe('close');
      expect(res.body).toEqual({ status: 'error', message: 'Bad request', data: null });
    });

    it('answers a malformed request line with 400 in the envelope', async () => {
      const res = await rawRequest(t.url, 'GET /api/auth/me HTTP/9\r\n\r\n');
      expect(res.status).toBe(400);
      expect(res.body).toEqual({ status: 'error', message: 'Bad request', data: null });
    });

    it('keeps serving after a parser error', async () => {
      const res = await t.request('GET', '/api/auth/me', { token: alice.token });
      expect(res.status).toBe(200);
    });
  });

  describe('amount decimal places', () => {
    const create = (amount: unknown) =>
      t.request('POST', `/api/wallet/${wallet.id}/charge/create`, { token: alice.token, body: { amount, token: 'TUSD' } });

    it('refuses more decimal places than the token has, trailing zeros included', async () => {
      const before = await counts(t);
      for (const amount of ['1.0000000', '1.5000000', '0.1234567']) {
        expectValidationError(await create(amount), { amount: ['The amount field must not have more than 6 decimal places.'] }, amount);
      }
      expect(await counts(t)).toEqual(before);
    });

    it('takes exactly as many places as the token has, zeros included', async () => {
      const res = await create('1.000000');
      expect(res.status, res.text).toBe(200);
      expect(res.body.data).toMatchObject({ amount: '1.000000000000000000', token: 'TUSD' });
    });
  });

  it('answers a dashboard asset named after an object\'s own property (toString, constructor, __proto__) 404, not 503 "not built"', async () => {
    for (const name of ['toString', 'constructor', 'hasOwnProperty', 'valueOf', '__proto__']) {
      expectError(await t.request('GET', `/dashboard/assets/${name}`), 404, 'Route not found');
    }
    const js = await t.request('GET', '/dashboard/assets/app.js');
    expect(js.status).toBe(200);
    expect(js.headers.get('content-type')).toBe('text/javascript; charset=utf-8');
  });
});
