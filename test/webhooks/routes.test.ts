import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { expectValidationError } from '../helpers/expect.js';
import { createWalletRow } from '../helpers/factories.js';
import { EVENTS_BY_TYPE, EVENT_NAMES } from '../../src/modules/events/events.catalogue.js';
import { dispatchEvents } from '../../src/workers/deliveries/dispatch.js';
import { createWebhook, emit, owner, type Owner } from './fixtures.js';
import { webhookPlace } from '../../src/modules/webhooks/webhooks.service.js';

const DATETIME = /^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}$/;
const AMOUNT = /^-?\d+\.\d{18}$/;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const ADDRESS = /^0x[0-9a-fA-F]{40}$/;

type Kind = 'int' | 'amount' | 'string' | 'datetime' | 'uuid' | 'address' | 'hash' | 'bool' | 'int|null' | 'payment' | 'refund' | 'null';
const CHARGE: Record<string, Kind> = {
  charge_id: 'int',
  wallet_id: 'int',
  amount: 'amount',
  token: 'string',
  uuid: 'uuid',
  status: 'string',
  expires: 'int',
  created_at: 'datetime',
};
const CHARGE_SETTLED = { ...CHARGE, address: 'address', paid_amount: 'amount' } as const;
const TX_CONFIRMED: Record<string, Kind> = {
  transaction_id: 'int',
  wallet_id: 'int',
  amount: 'amount',
  token: 'string',
  tx_hash: 'hash',
  block_number: 'int',
  status: 'string',
  confirmed_at: 'datetime',
};
const { confirmed_at: _c, ...TX_BASE } = TX_CONFIRMED;
// The original API listed no `type` for transaction.confirmed; the transactions module sends it on all three.
TX_CONFIRMED.type = 'string';
const TOKEN: Record<string, Kind> = {
  wallet_id: 'int',
  token_id: 'int',
  name: 'string',
  symbol: 'string',
  contract: 'address',
  decimals: 'int',
  is_native: 'bool',
};
const WALLET: Record<string, Kind> = {
  wallet_id: 'int',
  name: 'string',
  address: 'address',
  description: 'string',
  is_mainnet: 'bool',
  network: 'int',
};
/** The data fields of every event (docs/transactions.md, "Events"; docs/webhooks.md, "What a delivery looks like"). */
const SHAPES: Record<string, Record<string, Kind>> = {
  'charge.created': CHARGE,
  'charge.paid': { ...CHARGE_SETTLED, paid_at: 'datetime' },
  'charge.expired': { ...CHARGE_SETTLED, expired_at: 'datetime' },
  'charge.failed': { ...CHARGE_SETTLED, failed_at: 'datetime' },
  'charge.delayed': { ...CHARGE_SETTLED, payment: 'payment' },
  'charge.reopened': { ...CHARGE_SETTLED, reopened_at: 'datetime' },
  'charge.refunded': { ...CHARGE_SETTLED, refund: 'refund', refunded_at: 'datetime' },
  'charge.screened': { ...CHARGE_SETTLED, payment: 'payment' },
  'transaction.created': { ...TX_BASE, block_number: 'int|null', type: 'string', created_at: 'datetime' },
  'transaction.confirmed': TX_CONFIRMED,
  'transaction.failed': { ...TX_BASE, block_number: 'int|null', type: 'string', failed_at: 'datetime' },
  'transaction.reorged': { ...TX_BASE, type: 'string', reorged_at: 'datetime' },
  // Held for approval: nothing signed yet, so no hash and no block.
  'transaction.approval_required': { ...TX_BASE, tx_hash: 'null', block_number: 'null', type: 'string', created_at: 'datetime' },
  // Every endpoint refused its re-send for a reason other than its fee: pending, not mined.
  'transaction.stuck': { ...TX_BASE, block_number: 'null', type: 'string', stuck_reason: 'string', created_at: 'datetime' },
  'balance.updated': {
    wallet_id: 'int',
    token: 'string',
    old_balance: 'amount',
    new_balance: 'amount',
    change: 'amount',
    block_number: 'int',
    updated_at: 'datetime',
  },
  'token.added': { ...TOKEN, added_at: 'datetime' },
  'token.removed': { ...TOKEN, removed_at: 'datetime' },
  'wallet.created': { ...WALLET, created_at: 'datetime' },
  'wallet.updated': { ...WALLET, updated_at: 'datetime' },
};

function checkKind(v: unknown, k: Kind): boolean {
  switch (k) {
    case 'int':
      return Number.isInteger(v);
    case 'int|null':
      return v === null || Number.isInteger(v);
    case 'null':
      return v === null;
    case 'amount':
      return typeof v === 'string' && AMOUNT.test(v);
    case 'datetime':
      return typeof v === 'string' && DATETIME.test(v);
    case 'uuid':
      return typeof v === 'string' && UUID.test(v);
    case 'address':
      return typeof v === 'string' && ADDRESS.test(v);
    case 'hash':
      return typeof v === 'string' && /^0x[0-9a-f]{64}$/.test(v);
    case 'bool':
      return typeof v === 'boolean';
    case 'payment': {
      const p = v as Record<string, unknown>;
      const fields: Record<string, Kind> = {
        tx_hash: 'hash',
        from: 'address',
        amount: 'amount',
        block_number: 'int',
        block_timestamp: 'datetime',
        late: 'bool',
        internal: 'bool',
        screened: 'bool',
      };
      return (
        Object.keys(p).sort().join() === Object.keys(fields).sort().join() && Object.entries(fields).every(([f, k]) => checkKind(p[f], k))
      );
    }
    case 'refund': {
      // docs/money-out.md, "Refunds": the charge's `refunds` entry (a confirmed one, sent with an address).
      const r = v as Record<string, unknown>;
      const fields: Record<string, Kind> = {
        id: 'int',
        uuid: 'uuid',
        amount: 'amount',
        address: 'address',
        status: 'string',
        transaction_id: 'int',
        tx_hash: 'hash',
        reason: 'string',
        claim_url: 'null',
        expires_at: 'null',
        created_at: 'datetime',
      };
      return (
        Object.keys(r).sort().join() === Object.keys(fields).sort().join() &&
        Object.entries(fields).every(([f, k]) => checkKind(r[f], k)) &&
        r.status === 'confirmed'
      );
    }
    case 'string':
      return typeof v === 'string' && v !== '';
  }
}

const WEBHOOK_KEYS = ['created_at', 'disabled_at', 'disabled_reason', 'events', 'headers', 'id', 'status', 'type', 'updated_at', 'url'];

describe('webhook routes', () => {
  let t: TestApp;
  let a: Owner;
  let b: Owner;
  const base = () => `/api/wallet/${a.walletId}/webhook`;

  beforeAll(async () => {
    t = await startTestApp();
    a = await owner(t);
    b = await owner(t);
  });
  afterAll(async () => {
    await t?.close();
  });

  it('needs authentication', async () => {
    const res = await t.request('GET', base());
    expect(res.status).toBe(401);
    expect(res.body).toEqual({ status: 'error', message: 'Unauthenticated', data: null });
  });

  it('documents every webhook route in the OpenAPI document', async () => {
    const res = await t.request('GET', '/api/openapi.json', { token: a.user.token });
    expect(res.status).toBe(200);
    const paths = Object.keys((res.body as any).paths);
    for (const p of [
      '/api/wallet/{wallet}/webhook',
      '/api/wallet/{wallet}/webhook/types',
      '/api/wallet/{wallet}/webhook/event/{event}',
      '/api/wallet/{wallet}/webhook/create',
      '/api/wallet/{wallet}/webhook/delete/{webhook}',
      '/api/wallet/{wallet}/webhook/{webhook}/update',
      '/api/wallet/{wallet}/webhook/{webhook}/deliveries',
      '/api/wallet/{wallet}/webhook/{webhook}/deliveries/{delivery}/retry',
    ]) {
      expect(paths).toContain(p);
    }
  });

  it('lists the five types', async () => {
    const res = await t.request('GET', `${base()}/types`, { token: a.user.token });
    expect(res.status).toBe(200);
    expect(res.body.status).toBe('success');
    expect(res.body.data).toEqual(['charge', 'transaction', 'balance', 'token', 'wallet']);
  });

  it('describes every event of every type with a sample payload of the documented shape', async () => {
    expect(Object.keys(SHAPES).sort()).toEqual([...EVENT_NAMES].sort());
    for (const [type, names] of Object.entries(EVENTS_BY_TYPE)) {
      for (const name of names) {
        const res = await t.request('GET', `${base()}/event/${name}`, { token: a.user.token });
        expect(res.status, name).toBe(200);
        const data = res.body.data;
        expect(Object.keys(data).sort()).toEqual(['description', 'event_name', 'payload']);
        expect(data.event_name).toBe(name);
        expect(name.startsWith(`${type}.`)).toBe(true);
        expect(data.description.length).toBeGreaterThan(10);
        const shape = SHAPES[name]!;
        expect(Object.keys(data.payload).sort(), name).toEqual(Object.keys(shape).sort());
        for (const [field, kind] of Object.entries(shape)) {
          expect(checkKind(data.payload[field], kind), `${name}.${field} = ${JSON.stringify(data.payload[field])}`).toBe(true);
        }
        if (type === 'charge') {
          expect(data.payload.expires).toBe(300);
          // delayed: a late payment to a settled charge; refunded: a refund of a paid one; screened: a pending one's
          const settled = name === 'charge.delayed' ? 'expired' : name === 'charge.refunded' ? 'paid' : name.split('.')[1];
          expect(data.payload.status).toBe(['charge.created', 'charge.reopened', 'charge.screened'].includes(name) ? 'pending' : settled);
        }
      }
    }
    expect((await t.request('GET', `${base()}/event/transaction.confirmed`, { token: a.user.token })).body.data.payload.status).toBe(
      'confirmed',
    );
  });

  it('answers 404 Event not found for an unknown event', async () => {
    for (const name of ['charge.unknown', 'created', 'charge.confirmed', 'nope']) {
      const res = await t.request('GET', `${base()}/event/${name}`, { token: a.user.token });
      expect(res.status, name).toBe(404);
      expect(res.body).toEqual({ status: 'error', message: 'Event not found', data: null });
    }
  });

  it('creates an active webhook: stored names, headers {} in the response, secrets encrypted at rest', async () => {
    const res = await t.request('POST', `${base()}/create`, {
      token: a.user.token,
      body: {
        url: 'https://example.com/hooks/charge',
        type: 'charge',
        events: ['created', 'confirmed', 'charge.expired', 'created'],
        signature: 'whsec_create_secret',
        with_headers: { 'X-Api-Key': 'key-123', Authorization: 'Bearer xyz' },
      },
    });
    expect(res.status, res.text).toBe(200);
    expect(res.body.message).toBe('Webhook created');
    const w = res.body.data;
    expect(Object.keys(w).sort()).toEqual(WEBHOOK_KEYS);
    expect(w).toMatchObject({
      url: 'https://example.com/hooks/charge',
      type: 'charge',
      status: 'active',
      events: ['charge.created', 'charge.paid', 'charge.expired'],
      headers: {},
    });
    expect(w.created_at).toMatch(DATETIME);
    expect(res.text).not.toContain('whsec_create_secret');

    const row = await t.store.db.selectFrom('webhooks').selectAll().where('id', '=', w.id).executeTakeFirstOrThrow();
    expect(row.signature_enc).not.toContain('whsec');
    expect(row.headers_enc).not.toContain('key-123');
    expect(t.ctx.secrets.decrypt(row.signature_enc!, webhookPlace(w.id, 'signature_enc'))).toBe('whsec_create_secret');
    expect(JSON.parse(row.events)).toEqual(['charge.created', 'charge.paid', 'charge.expired']);

    const wild = await createWebhook(t, a, { url: 'http://example.com/all', type: 'transaction', events: ['created', '*'] });
    expect(wild.events).toEqual(['*']);
  });

  it('lists webhooks newest first with their headers decrypted', async () => {
    const o = await owner(t);
    const first = await createWebhook(t, o, { url: 'http://example.com/1', type: 'wallet', events: ['*'], with_headers: { 'X-One': '1' } });
    const second = await createWebhook(t, o, { url: 'http://example.com/2', type: 'token', events: ['added'] });
    const res = await t.request('GET', `/api/wallet/${o.walletId}/webhook`, { token: o.user.token });
    expect(res.status).toBe(200);
    expect(res.body.data.map((w: { id: number }) => w.id)).toEqual([second.id, first.id]);
    expect(res.body.data[1].headers).toEqual({ 'X-One': '1' });
    expect(res.body.data[0].headers).toEqual({});
    for (const w of res.body.data) expect(Object.keys(w).sort()).toEqual(WEBHOOK_KEYS);
  });

  describe('create validation', () => {
    async function create(body: unknown) {
      return t.request('POST', `${base()}/create`, { token: a.user.token, body });
    }

    it('requires url, type and events', async () => {
      const res = await create({});
      expectValidationError(res, {
        url: ['The url field is required.'],
        type: ['The type field is required.'],
        events: ['The events field is required.'],
      });
    });

    it('refuses an invalid url, an unknown type and an empty events list with the contract messages', async () => {
      const url = await create({ url: 'not a url', type: 'charge', events: ['created'] });
      expectValidationError(url, { url: ['The url field must be a valid URL.'] });
      for (const bad of ['ftp://example.com/x', 'mailto:a@example.com', 'http://user:pw@example.com/x', 'javascript:alert(1)']) {
        const r = await create({ url: bad, type: 'charge', events: ['created'] });
        expectValidationError(r, { url: ['The url field must be a valid URL.'] }, bad);
      }
      const type = await create({ url: 'https://example.com', type: 'payments', events: ['created'] });
      expectValidationError(type, { type: ['The selected type is invalid.'] });
      const events = await create({ url: 'https://example.com', type: 'charge', events: [] });
      expectValidationError(events, { events: ['The events field is required.'] });
      const long = await create({ url: `https://example.com/${'a'.repeat(2048)}`, type: 'charge', events: ['created'] });
      expectValidationError(long, { url: ['The url field must not be greater than 2048 characters.'] });
    });

    it('names each event that is not of the type as events.N', async () => {
      const res = await create({ url: 'https://example.com', type: 'charge', events: ['created', 'bogus', 'transaction.created', 'paid'] });
      expectValidationError(res, {
        'events.1': ['The selected events.1 is invalid.'],
        'events.2': ['The selected events.2 is invalid.'],
      });
      const typed = await create({ url: 'https://example.com', type: 'charge', events: ['created', 5] });
      expectValidationError(typed, { 'events.1': ['The events.1 field must be a string.'] });
      const alias = await create({ url: 'https://example.com', type: 'transaction', events: ['confirmed', 'paid'] });
      expectValidationError(alias, { 'events.1': ['The selected events.1 is invalid.'] });
      const notArray = await create({ url: 'https://example.com', type: 'charge', events: 'created' });
      expectValidationError(notArray, { events: ['The events field must be an array.'] });
    });

    it('refuses reserved, malformed and non-string with_headers as with_headers.<name>', async () => {
      const res = await create({
        url: 'https://example.com',
        type: 'charge',
        events: ['*'],
        with_headers: {
          'Content-Type': 'text/plain',
          'content-length': '1',
          Host: 'evil',
          'User-Agent': 'x',
          'X-Webhook-Signature': 'forged',
          'webhook-id': 'x',
          'Bad Name': 'v',
          'X-Newline': 'a\r\nInjected: 1',
          'X-Fine': 'ok',
        },
      });
      expectValidationError(res, {
        'with_headers.Content-Type': ['The with_headers.Content-Type header cannot be set.'],
        'with_headers.content-length': ['The with_headers.content-length header cannot be set.'],
        'with_headers.Host': ['The with_headers.Host header cannot be set.'],
        'with_headers.User-Agent': ['The with_headers.User-Agent header cannot be set.'],
        'with_headers.X-Webhook-Signature': ['The with_headers.X-Webhook-Signature header cannot be set.'],
        'with_headers.webhook-id': ['The with_headers.webhook-id header cannot be set.'],
        'with_headers.Bad Name': ['The with_headers.Bad Name field must be a valid header name.'],
        'with_headers.X-Newline': ['The with_headers.X-Newline field must be a valid header value.'],
      });
      const typed = await create({ url: 'https://example.com', type: 'charge', events: ['*'], with_headers: { 'X-A': 5 } });
      expectValidationError(typed, { 'with_headers.X-A': ['The with_headers.X-A field must be a string.'] });
      const notObject = await create({ url: 'https://example.com', type: 'charge', events: ['*'], with_headers: ['x'] });
      expectValidationError(notObject, { with_headers: ['The with_headers field must be an object.'] });
      const sig = await create({ url: 'https://example.com', type: 'charge', events: ['*'], signature: 42 });
      expectValidationError(sig, { signature: ['The signature field must be a string.'] });
    });

    it('checks the wallet (404) before the body (422)', async () => {
      const res = await t.request('POST', '/api/wallet/999999/webhook/create', { token: a.user.token, body: {} });
      expect(res.status).toBe(404);
      expect(res.body.message).toBe('Wallet not found');
      const notInt = await t.request('POST', '/api/wallet/abc/webhook/create', { token: a.user.token, body: {} });
      expect(notInt.status).toBe(404);
    });
  });

  it('deletes with GET: returns the secret and deleted_at once, then the webhook is gone', async () => {
    const w = await createWebhook(t, a, {
      url: 'https://example.com/del',
      type: 'balance',
      events: ['updated'],
      signature: 'whsec_delete_me',
    });
    const res = await t.request('GET', `${base()}/delete/${w.id}`, { token: a.user.token });
    expect(res.status).toBe(200);
    expect(Object.keys(res.body.data).sort()).toEqual(['deleted_at', 'events', 'id', 'signature', 'status', 'type', 'url']);
    expect(res.body.data).toMatchObject({
      id: w.id,
      url: 'https://example.com/del',
      type: 'balance',
      events: ['balance.updated'],
      signature: 'whsec_delete_me',
      status: 'active',
    });
    expect(res.body.data.deleted_at).toMatch(DATETIME);
    const list = await t.request('GET', base(), { token: a.user.token });
    expect(list.body.data.map((x: { id: number }) => x.id)).not.toContain(w.id);
    const again = await t.request('GET', `${base()}/delete/${w.id}`, { token: a.user.token });
    expect(again.status).toBe(404);
    expect(again.body.message).toBe('Webhook not found');
    const update = await t.request('POST', `${base()}/${w.id}/update`, { token: a.user.token, body: { status: 'inactive' } });
    expect(update.status).toBe(404);

    const plain = await createWebhook(t, a, { url: 'https://example.com/del2', type: 'balance', events: ['updated'] });
    const noSecret = await t.request('GET', `${base()}/delete/${plain.id}`, { token: a.user.token });
    expect(noSecret.body.data.signature).toBeNull();
  });

  it('updates url, events, status, secret and headers; validates like create', async () => {
    const w = await createWebhook(t, a, {
      url: 'https://example.com/u',
      type: 'charge',
      events: ['created'],
      with_headers: { 'X-Old': 'o' },
    });
    const res = await t.request('POST', `${base()}/${w.id}/update`, {
      token: a.user.token,
      body: {
        url: 'https://example.org/new',
        events: ['paid', 'expired'],
        status: 'inactive',
        signature: 'whsec_new',
        with_headers: { 'X-New': 'n' },
      },
    });
    expect(res.status, res.text).toBe(200);
    expect(res.body.message).toBe('Webhook updated');
    expect(Object.keys(res.body.data).sort()).toEqual(WEBHOOK_KEYS);
    expect(res.body.data).toMatchObject({
      id: w.id,
      url: 'https://example.org/new',
      type: 'charge',
      status: 'inactive',
      events: ['charge.paid', 'charge.expired'],
      headers: { 'X-New': 'n' },
    });
    expect(res.text).not.toContain('whsec_new');

    const bad = await t.request('POST', `${base()}/${w.id}/update`, {
      token: a.user.token,
      body: { events: ['transaction.created'], url: 'gopher://x' },
    });
    expectValidationError(bad, { url: ['The url field must be a valid URL.'], 'events.0': ['The selected events.0 is invalid.'] });
    const status = await t.request('POST', `${base()}/${w.id}/update`, { token: a.user.token, body: { status: 'paused' } });
    expectValidationError(status, { status: ['The selected status is invalid.'] });

    const back = await t.request('POST', `${base()}/${w.id}/update`, {
      token: a.user.token,
      body: { status: 'active', with_headers: null, signature: null },
    });
    expect(back.body.data).toMatchObject({ status: 'active', headers: {} });
    const del = await t.request('GET', `${base()}/delete/${w.id}`, { token: a.user.token });
    expect(del.body.data.signature).toBeNull();
  });

  it('caps a wallet at 100 live webhooks (400), counting only those not deleted', async () => {
    const o = await owner(t);
    let last = 0;
    for (let i = 0; i < 100; i++) last = (await createWebhook(t, o, { url: `https://example.com/${i}`, type: 'wallet', events: ['*'] })).id;
    const body = { url: 'https://example.com/101', type: 'wallet', events: ['*'] };
    const over = await t.request('POST', `/api/wallet/${o.walletId}/webhook/create`, { token: o.user.token, body });
    expect(over.status).toBe(400);
    expect(over.body).toEqual({ status: 'error', message: 'A wallet can have at most 100 webhooks', data: null });
    await t.request('GET', `/api/wallet/${o.walletId}/webhook/delete/${last}`, { token: o.user.token });
    expect((await t.request('POST', `/api/wallet/${o.walletId}/webhook/create`, { token: o.user.token, body })).status).toBe(200);
  });

  it('keeps static segments apart from :webhook (find-my-way prefers static)', async () => {
    const types = await t.request('GET', `${base()}/types`, { token: a.user.token });
    expect(types.status).toBe(200);
    const createGet = await t.request('GET', `${base()}/create`, { token: a.user.token });
    expect(createGet.status).toBe(405);
    expect(createGet.headers.get('allow')).toContain('POST');
    const delBad = await t.request('GET', `${base()}/delete/abc`, { token: a.user.token });
    expect(delBad.status).toBe(404);
    expect(delBad.body.message).toBe('Webhook not found');
    const deliveriesBad = await t.request('GET', `${base()}/types/deliveries`, { token: a.user.token });
    expect(deliveriesBad.status).toBe(404);
    expect(deliveriesBad.body.message).toBe('Webhook not found');
    const updateBad = await t.request('POST', `${base()}/0/update`, { token: a.user.token, body: { status: 'nope' } });
    expect(updateBad.status).toBe(404);
    expect(updateBad.body.message).toBe('Webhook not found');
  });

  describe('deliveries', () => {
    let o: Owner;
    let hookId: number;
    let otherHookId: number;

    beforeAll(async () => {
      o = await owner(t);
      hookId = (await createWebhook(t, o, { url: 'https://example.com/d', type: 'wallet', events: ['*'] })).id;
      otherHookId = (await createWebhook(t, o, { url: 'https://example.com/e', type: 'wallet', events: ['*'] })).id;
      for (let i = 0; i < 25; i++) await emit(t, o, i % 2 === 0 ? 'wallet.created' : 'wallet.updated');
      // Fan out without the worker, so nothing is sent and every delivery stays pending.
      await dispatchEvents(t.store.db, Date.now(), 200);
    });

    it('lists newest first, paginated with X-Pagination-* and Link headers', async () => {
      const path = `/api/wallet/${o.walletId}/webhook/${hookId}/deliveries`;
      const res = await t.request('GET', `${path}?page=2&limit=10`, { token: o.user.token });
      expect(res.status).toBe(200);
      expect(Array.isArray(res.body.data)).toBe(true);
      expect(res.body.data).toHaveLength(10);
      expect(res.headers.get('x-pagination-page')).toBe('2');
      expect(res.headers.get('x-pagination-limit')).toBe('10');
      expect(res.headers.get('x-pagination-total')).toBe('25');
      expect(res.headers.get('x-pagination-pages')).toBe('3');
      const link = res.headers.get('link')!;
      expect(link).toContain(`<${path}?page=3&limit=10>; rel="next"`);
      expect(link).toContain(`<${path}?page=1&limit=10>; rel="prev"`);
      const ids = res.body.data.map((d: { id: number }) => d.id);
      expect(ids).toEqual([...ids].sort((x: number, y: number) => y - x));

      const d = res.body.data[0];
      expect(Object.keys(d).sort()).toEqual([
        'attempts',
        'created_at',
        'delivered_at',
        'event',
        'id',
        'last_error',
        'next_attempt_at',
        'response_status',
        'status',
        'updated_at',
        'uuid',
      ]);
      expect(d).toMatchObject({ status: 'pending', attempts: 0, response_status: null, last_error: null, delivered_at: null });
      expect(d.uuid).toMatch(UUID);
      expect(d.next_attempt_at).toMatch(DATETIME);
      expect(['wallet.created', 'wallet.updated']).toContain(d.event);

      const first = await t.request('GET', path, { token: o.user.token });
      expect(first.body.data).toHaveLength(10);
      expect(first.headers.get('link')).not.toContain('rel="prev"');
      const last = await t.request('GET', `${path}?page=3&limit=10`, { token: o.user.token });
      expect(last.body.data).toHaveLength(5);
      expect(last.headers.get('link')).not.toContain('rel="next"');
      const past = await t.request('GET', `${path}?page=9&limit=10`, { token: o.user.token });
      expect(past.status).toBe(200);
      expect(past.body.data).toEqual([]);
    });

    it('validates page and limit', async () => {
      const path = `/api/wallet/${o.walletId}/webhook/${hookId}/deliveries`;
      const big = await t.request('GET', `${path}?limit=1001`, { token: o.user.token });
      expectValidationError(big, { limit: ['The limit field must not be greater than 1000.'] });
      const zero = await t.request('GET', `${path}?page=0`, { token: o.user.token });
      expectValidationError(zero, { page: ['The page field must be at least 1.'] });
      const word = await t.request('GET', `${path}?page=abc`, { token: o.user.token });
      expectValidationError(word, { page: ['The page field must be an integer.'] });
    });

    it('queues a delivery again on retry, keeping its attempt count', async () => {
      const [row] = await t.store.db.selectFrom('webhook_deliveries').select(['id']).where('webhook_id', '=', hookId).limit(1).execute();
      await t.store.db
        .updateTable('webhook_deliveries')
        .set({ status: 'failed', attempts: 4, last_error: 'HTTP 500', next_attempt_at: 0 })
        .where('id', '=', row!.id)
        .execute();
      const res = await t.request('POST', `/api/wallet/${o.walletId}/webhook/${hookId}/deliveries/${row!.id}/retry`, {
        token: o.user.token,
      });
      expect(res.status, res.text).toBe(200);
      expect(res.body.message).toBe('Delivery queued for retry');
      expect(res.body.data).toMatchObject({ id: row!.id, status: 'pending', attempts: 4 });
      expect(res.body.data.next_attempt_at).toMatch(DATETIME);

      const wrongHook = await t.request('POST', `/api/wallet/${o.walletId}/webhook/${otherHookId}/deliveries/${row!.id}/retry`, {
        token: o.user.token,
      });
      expect(wrongHook.status).toBe(404);
      expect(wrongHook.body.message).toBe('Delivery not found');
      const missing = await t.request('POST', `/api/wallet/${o.walletId}/webhook/${hookId}/deliveries/99999999/retry`, {
        token: o.user.token,
      });
      expect(missing.status).toBe(404);
      expect(missing.body.message).toBe('Delivery not found');

      await t.store.db
        .updateTable('webhook_deliveries')
        .set({ locked_by: 'w', locked_until: Date.now() + 60_000 })
        .where('id', '=', row!.id)
        .execute();
      const busy = await t.request('POST', `/api/wallet/${o.walletId}/webhook/${hookId}/deliveries/${row!.id}/retry`, {
        token: o.user.token,
      });
      expect(busy.status).toBe(400);
      expect(busy.body.message).toBe('The delivery is being sent right now');

      await t.request('POST', `/api/wallet/${o.walletId}/webhook/${hookId}/update`, { token: o.user.token, body: { status: 'inactive' } });
      const inactive = await t.request('POST', `/api/wallet/${o.walletId}/webhook/${hookId}/deliveries/${row!.id}/retry`, {
        token: o.user.token,
      });
      expect(inactive.status).toBe(400);
      expect(inactive.body).toEqual({ status: 'error', message: 'The webhook is inactive', data: null });
    });
  });

  describe("another user's wallet, webhook or delivery is invisible (404)", () => {
    let hook: number;
    let delivery: number;
    let bHook: number;

    beforeAll(async () => {
      hook = (await createWebhook(t, a, { url: 'https://example.com/private', type: 'token', events: ['*'], signature: 'whsec_a' })).id;
      bHook = (await createWebhook(t, b, { url: 'https://example.com/b', type: 'token', events: ['*'] })).id;
      await emit(t, a, 'token.added');
      await dispatchEvents(t.store.db, Date.now(), 200);
      delivery = (await t.store.db.selectFrom('webhook_deliveries').select('id').where('webhook_id', '=', hook).executeTakeFirstOrThrow())
        .id;
    });

    const walletRoutes: Array<[string, (w: number) => string, unknown?]> = [
      ['GET', (w) => `/api/wallet/${w}/webhook`],
      ['GET', (w) => `/api/wallet/${w}/webhook/types`],
      ['GET', (w) => `/api/wallet/${w}/webhook/event/charge.created`],
      ['POST', (w) => `/api/wallet/${w}/webhook/create`, { url: 'https://example.com', type: 'charge', events: ['*'] }],
    ];

    it.each(walletRoutes)("%s %s: B cannot use A's wallet", async (method, path, body) => {
      const res = await t.request(method, path(a.walletId), { token: b.user.token, body });
      expect(res.status).toBe(404);
      expect(res.body).toEqual({ status: 'error', message: 'Wallet not found', data: null });
    });

    const hookRoutes: Array<[string, (w: number, h: number) => string, unknown?]> = [
      ['GET', (w, h) => `/api/wallet/${w}/webhook/delete/${h}`],
      ['POST', (w, h) => `/api/wallet/${w}/webhook/${h}/update`, { status: 'inactive' }],
      ['GET', (w, h) => `/api/wallet/${w}/webhook/${h}/deliveries`],
      ['POST', (w, h) => `/api/wallet/${w}/webhook/${h}/deliveries/1/retry`],
    ];

    it.each(hookRoutes)("%s %s: B cannot reach A's webhook, through A's wallet or its own", async (method, path, body) => {
      const viaA = await t.request(method, path(a.walletId, hook), { token: b.user.token, body });
      expect(viaA.status).toBe(404);
      expect(viaA.body.message).toBe('Wallet not found');
      const viaB = await t.request(method, path(b.walletId, hook), { token: b.user.token, body });
      expect(viaB.status).toBe(404);
      expect(viaB.body).toEqual({ status: 'error', message: 'Webhook not found', data: null });
    });

    it("B cannot retry A's delivery through its own webhook", async () => {
      const res = await t.request('POST', `/api/wallet/${b.walletId}/webhook/${bHook}/deliveries/${delivery}/retry`, {
        token: b.user.token,
      });
      expect(res.status).toBe(404);
      expect(res.body.message).toBe('Delivery not found');
    });

    it("A's webhook does not appear in B's list, nor under A's other wallet", async () => {
      const list = await t.request('GET', `/api/wallet/${b.walletId}/webhook`, { token: b.user.token });
      expect(list.body.data.map((w: { id: number }) => w.id)).not.toContain(hook);
      const other = await createWalletRow(t, a.user.id);
      const res = await t.request('GET', `/api/wallet/${other.id}/webhook/${hook}/deliveries`, { token: a.user.token });
      expect(res.status).toBe(404);
      expect(res.body.message).toBe('Webhook not found');
      const still = await t.request('GET', `${base()}/${hook}/deliveries`, { token: a.user.token });
      expect(still.status).toBe(200);
      expect(still.body.data).toHaveLength(1);
    });
  });
});
