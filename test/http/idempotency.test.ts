/**
 * Idempotency-Key on every create route beyond transactions: wallet, webhook and charge. A
 * repeat returns the first response and creates nothing (no row, no event); another body is 422;
 * keys are per user. A create whose commit fails leaves its key retryable.
 */
import { sql } from 'kysely';
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
    {
      name: 'wallet',
      table: 'wallets' as const,
      path: '/api/wallet/create',
      body: { name: 'Twice', network_id: 1 },
      other: { name: 'Other', network_id: 1 },
    },
    {
      name: 'webhook',
      table: 'webhooks' as const,
      path: `/api/wallet/${walletId}/webhook/create`,
      body: { url: 'https://example.com/hook', type: 'wallet', events: ['created'] },
      other: { url: 'https://example.com/other', type: 'wallet', events: ['created'] },
    },
    {
      name: 'charge',
      table: 'charges' as const,
      path: `/api/wallet/${walletId}/charge/create`,
      body: { amount: '1', token: 'ETH' },
      other: { amount: '2', token: 'ETH' },
    },
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
      const stored = await t.store.db
        .selectFrom('idempotency_keys')
        .select(['response_status', 'response_body'])
        .where('key', '=', key)
        .executeTakeFirstOrThrow();
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
    const a = await t.request('POST', '/api/wallet/create', {
      token: u.token,
      body: { name: 'Mine', network_id: networkId },
      headers: { 'idempotency-key': 'shared' },
    });
    const b = await t.request('POST', '/api/wallet/create', {
      token: other.token,
      body: { name: 'Theirs', network_id: networkId },
      headers: { 'idempotency-key': 'shared' },
    });
    expect(a.status).toBe(200);
    expect(b.status).toBe(200);
    expect(b.headers.get('idempotent-replayed')).toBeNull();
    expect(b.body.data.id).not.toBe(a.body.data.id);
  });
});

/**
 * A create whose database COMMIT fails after its response was written into the transaction
 * (`commit`): nothing of it is saved, so the key must stay usable. The fault: a check deferred to
 * COMMIT that fails once the key's response is written — on SQLite a trigger inserting a row
 * whose deferred foreign key has no parent (which fails the whole commit group), on PostgreSQL a
 * deferred constraint trigger that raises.
 */
describe('Idempotency-Key when the commit fails', () => {
  let t: TestApp;
  let u: TestUser;
  let networkId: number;
  const KEY = 'doomed-key';

  beforeAll(async () => {
    t = await startTestApp();
    u = await t.createUser();
    networkId = (await ensureNetwork(t)).id;
  });
  afterAll(async () => t?.close());

  async function failCommitsOfKey(): Promise<void> {
    const { db } = t.store;
    if (t.store.dialect.driver === 'postgres') {
      await sql`create function test_fail_commit() returns trigger language plpgsql as $$ begin raise exception 'injected: the commit fails'; end $$`.execute(
        db,
      );
      await sql`create constraint trigger test_fail_commit after update on idempotency_keys deferrable initially deferred
        for each row when (new.key = ${sql.lit(KEY)} and new.response_status is not null) execute function test_fail_commit()`.execute(db);
    } else {
      await sql`create table test_fault_parent (id integer primary key)`.execute(db);
      await sql`create table test_fault_child (parent_id integer not null references test_fault_parent (id) deferrable initially deferred)`.execute(
        db,
      );
      await sql`create trigger test_fail_commit after update of response_status on idempotency_keys
        when new.key = ${sql.lit(KEY)} and new.response_status is not null begin insert into test_fault_child (parent_id) values (1); end`.execute(
        db,
      );
    }
  }

  async function healCommits(): Promise<void> {
    if (t.store.dialect.driver === 'postgres') await sql`drop trigger test_fail_commit on idempotency_keys`.execute(t.store.db);
    else await sql`drop trigger test_fail_commit`.execute(t.store.db);
  }

  const walletsNamed = async (name: string) =>
    (await t.store.db.selectFrom('wallets').select('id').where('name', '=', name).execute()).length;

  it('leaves the key retryable, and a retry with the same key runs', async () => {
    await failCommitsOfKey();
    const body = { name: 'Doomed once', network_id: networkId };
    const first = await t.request('POST', '/api/wallet/create', { token: u.token, body, headers: { 'idempotency-key': KEY } });
    expect(first.status).toBe(500);
    expect(first.body).toEqual({ status: 'error', message: 'Internal server error', data: null });
    // Nothing of it was saved: no wallet, and no key (no stored response, no claim left behind).
    expect(await walletsNamed('Doomed once')).toBe(0);
    expect(await t.store.db.selectFrom('idempotency_keys').select('id').where('key', '=', KEY).execute()).toEqual([]);

    await healCommits();
    const retry = await t.request('POST', '/api/wallet/create', { token: u.token, body, headers: { 'idempotency-key': KEY } });
    expect(retry.status).toBe(200);
    expect(retry.headers.get('idempotent-replayed')).toBeNull();
    expect(retry.body.data.name).toBe('Doomed once');
    expect(await walletsNamed('Doomed once')).toBe(1);

    // From now on the key replays the response that was committed.
    const again = await t.request('POST', '/api/wallet/create', { token: u.token, body, headers: { 'idempotency-key': KEY } });
    expect(again.status).toBe(200);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(again.body).toEqual(retry.body);
    expect(await walletsNamed('Doomed once')).toBe(1);
  });
});
