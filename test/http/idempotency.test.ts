/**
 * Idempotency-Key on every create route beyond transactions: wallet, webhook and charge. A
 * repeat returns the first response and creates nothing (no row, no event); another body is 422;
 * keys are per user.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp, type TestUser } from '../helpers/app.js';
import { expectValidationError } from '../helpers/expect.js';
import { ensureNetwork } from '../helpers/factories.js';

async function count(t: TestApp, table: 'wallets' | 'webhooks' | 'charges' | 'events') {
  const r = await t.store.db.selectFrom(table).select(t.store.db.fn.countAll<number>().as('n')).executeTakeFirstOrThrow();
  return Number(r.n);
}

describe('Idempotency-Key on create routes', () => {
  let t: TestApp;
  let u: TestUser;
  let walletId: number;

  beforeAll(async () => {
    t = await startTestApp();
    u = await t.createUser();
    const networkId = (await ensureNetwork(t)).id;
    const w = await t.request('POST', '/api/wallet/create', { token: u.token, body: { name: 'Base', network_id: networkId } });
    walletId = w.body.data.id;
  });
  afterAll(async () => t?.close());

  const routes = () => [
    { name: 'wallet', table: 'wallets' as const, path: '/api/wallet/create', body: { name: 'Twice', network_id: 1 }, other: { name: 'Other', network_id: 1 } },
    {
      name: 'webhook',
      table: 'webhooks' as const,
      path: `/api/wallet/${walletId}/webhook/create`,
      body: { url: 'https://example.com/hook', type: 'wallet', events: ['created'] },
      other: { url: 'https://example.com/other', type: 'wallet', events: ['created'] },
    },
    { name: 'charge', table: 'charges' as const, path: `/api/wallet/${walletId}/charge/create`, body: { amount: '1', token: 'ETH' }, other: { amount: '2', token: 'ETH' } },
  ];

  it('replays the first response, creates nothing more, and refuses the key for another body', async () => {
    for (const r of routes()) {
      const key = `key-${r.name}`;
      const rows = await count(t, r.table);
      const events = await count(t, 'events');
      const first = await t.request('POST', r.path, { token: u.token, body: r.body, headers: { 'idempotency-key': key } });
      expect(first.status, r.name).toBe(200);
      expect(await count(t, r.table)).toBe(rows + 1);
      const eventsAfterFirst = await count(t, 'events');

      // The stored response is the one the client got.
      const stored = await t.store.db.selectFrom('idempotency_keys').select(['response_status', 'response_body']).where('key', '=', key).executeTakeFirstOrThrow();
      expect(stored.response_status).toBe(200);
      expect(JSON.parse(stored.response_body!)).toEqual(first.body);

      const again = await t.request('POST', r.path, { token: u.token, body: r.body, headers: { 'idempotency-key': key } });
      expect(again.status).toBe(200);
      expect(again.headers.get('idempotent-replayed')).toBe('true');
      expect(again.body).toEqual(first.body);
      expect(await count(t, r.table)).toBe(rows + 1);
      expect(await count(t, 'events')).toBe(eventsAfterFirst);
      expect(eventsAfterFirst).toBeGreaterThanOrEqual(events);

      const other = await t.request('POST', r.path, { token: u.token, body: r.other, headers: { 'idempotency-key': key } });
      expectValidationError(other, { 'Idempotency-Key': ['Idempotency-Key already used with a different request.'] });
      expect(await count(t, r.table)).toBe(rows + 1);
    }
  });

  it('keeps keys per user', async () => {
    const other = await t.createUser();
    const networkId = (await ensureNetwork(t)).id;
    const a = await t.request('POST', '/api/wallet/create', { token: u.token, body: { name: 'Mine', network_id: networkId }, headers: { 'idempotency-key': 'shared' } });
    const b = await t.request('POST', '/api/wallet/create', { token: other.token, body: { name: 'Theirs', network_id: networkId }, headers: { 'idempotency-key': 'shared' } });
    expect(a.status).toBe(200);
    expect(b.status).toBe(200);
    expect(b.headers.get('idempotent-replayed')).toBeNull();
    expect(b.body.data.id).not.toBe(a.body.data.id);
  });
});
