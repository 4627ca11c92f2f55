/**
 * The read cache across processes on PostgreSQL (src/db/read-cache.ts, read-cache-postgres.ts,
 * migration 009): two real service processes on one database, each serving the token, the
 * wallet guard and the balance rows from its own cache.
 * - a logout answered by one process is refused by the other on the very next request (the
 *   bearer token is not cached on PostgreSQL);
 * - a process sees its own writes at once; another process's, and changes made outside any
 *   service (psql, the CLI), as soon as the NOTIFY arrives (milliseconds);
 * - with its LISTEN connection cut, a process serves nothing from the cache (it could miss a
 *   change), and after reconnecting it serves what the database holds;
 * - every table a cached query reads announces its writes (the trigger of migration 009).
 * PostgreSQL only (collected when DATABASE_URL is set).
 */
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cachedTables } from '../../src/db/prepared.js';
import '../../src/modules/auth/auth.repository.js';
import '../../src/modules/wallets/balances.repository.js';
import '../../src/modules/wallets/wallets.repository.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { createTestDatabase, type TestDatabase } from '../helpers/db.js';
import { startService, stop, type Service } from '../helpers/process.js';
import { waitFor } from '../helpers/wait.js';

let database: TestDatabase;
let seed: TestApp;
let a: Service;
let b: Service;
let networkId: number;

beforeAll(async () => {
  database = await createTestDatabase();
  seed = await startTestApp({ database, keepDatabase: true });
  const n = await seed.store.db
    .insertInto('networks')
    .values({
      name: 'Offline',
      rpc_url: 'http://127.0.0.1:9',
      chain_id: 31337,
      currency_symbol: 'ETH',
      block_explorer: '',
      is_mainnet: 0,
      confirmations: 1,
      created_at: 1,
      updated_at: 1,
    })
    .returning('id')
    .executeTakeFirstOrThrow();
  networkId = n.id;
  [a, b] = await Promise.all([startService(database), startService(database)]);
}, 150_000);

afterAll(async () => {
  await Promise.all([stop(a), stop(b)]);
  await seed?.close();
});

async function api(s: Service, method: string, path: string, token: string | null, body?: unknown) {
  const res = await fetch(`${s.url}/api${path}`, {
    method,
    headers: { ...(token ? { authorization: `Bearer ${token}` } : {}), ...(body ? { 'content-type': 'application/json' } : {}) },
    body: body ? JSON.stringify(body) : undefined,
  });
  return { status: res.status, body: (await res.json()) as { message: string; data: any } };
}

async function userWithWallet(s: Service) {
  const u = await seed.createUser();
  const w = await api(s, 'POST', '/wallet/create', u.token, { name: 'Cached', network_id: networkId });
  expect(w.status).toBe(200);
  return { token: u.token, userId: u.id, walletId: w.body.data.id as number };
}

/** Uses the token and the wallet on both processes a few times, so both have them cached. */
async function warm(token: string, walletId: number) {
  for (let i = 0; i < 3; i++) {
    for (const s of [a, b]) expect((await api(s, 'GET', `/wallet/${walletId}`, token)).status).toBe(200);
  }
}

describe('read cache across processes (PostgreSQL)', () => {
  it('a logout answered by one process is refused by the other on the next request', async () => {
    for (let round = 0; round < 5; round++) {
      const { token, walletId } = await userWithWallet(a);
      await warm(token, walletId);
      expect((await api(a, 'POST', '/auth/logout', token)).status).toBe(200);
      const next = await api(b, 'GET', `/wallet/${walletId}`, token);
      expect(next.status).toBe(401);
      expect((await api(a, 'GET', `/wallet/${walletId}`, token)).status).toBe(401);
    }
  });

  it('a rename through one process and a change made in psql are seen by both', async () => {
    const { token, walletId } = await userWithWallet(a);
    await warm(token, walletId);
    expect((await api(a, 'POST', `/wallet/${walletId}/update`, token, { name: 'Renamed' })).status).toBe(200);
    expect((await api(a, 'GET', `/wallet/${walletId}`, token)).body.data.name).toBe('Renamed'); // its own write: at once
    await waitFor(async () => (await api(b, 'GET', `/wallet/${walletId}`, token)).body.data.name === 'Renamed', {
      timeoutMs: 2_000,
      message: 'the rename on b',
    });
    // Outside any service: the trigger's NOTIFY reaches both at commit.
    await sql`UPDATE wallets SET name = 'From psql' WHERE id = ${walletId}`.execute(seed.store.db);
    for (const s of [a, b]) {
      await waitFor(async () => (await api(s, 'GET', `/wallet/${walletId}`, token)).body.data.name === 'From psql', {
        timeoutMs: 2_000,
        message: 'the psql rename',
      });
    }
    await sql`UPDATE access_tokens SET revoked_at = 1 WHERE user_id = (SELECT user_id FROM wallets WHERE id = ${walletId})`.execute(
      seed.store.db,
    );
    for (const s of [a, b]) {
      await waitFor(async () => (await api(s, 'GET', `/wallet/${walletId}`, token)).status === 401, {
        timeoutMs: 2_000,
        message: 'the psql revocation',
      });
    }
  });

  it('with its LISTEN connection cut, a process serves nothing from the cache', async () => {
    const { token, walletId } = await userWithWallet(a);
    await warm(token, walletId);
    const db = seed.store.db;
    const listeners = () =>
      sql<{
        pid: number;
      }>`SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND application_name = 'wallet-service-listen:wallet_cache'`.execute(
        db,
      );
    const before = (await listeners()).rows.map((r) => r.pid);
    expect(before.length).toBeGreaterThanOrEqual(3); // a, b and the seed app
    // Cut every cache listener, then change the wallet while they are down: the NOTIFY is lost.
    // The timeout makes pg_terminate_backend wait until each backend has exited (its socket
    // closed): without it the function returns once the signal is sent, and on a loaded machine
    // a backend could still be alive at the UPDATE and die after it, its NOTIFY lost, before its
    // process could know the connection had gone (one CI run served 'Cached' that way).
    await sql`SELECT pg_terminate_backend(pid, 10000) FROM pg_stat_activity WHERE pid IN (${sql.join(before)})`.execute(db);
    await sql`UPDATE wallets SET name = 'While deaf' WHERE id = ${walletId}`.execute(db);
    for (const s of [a, b]) expect((await api(s, 'GET', `/wallet/${walletId}`, token)).body.data.name).toBe('While deaf');
    // They listen again (after about a second) and go on serving what the database holds.
    await waitFor(async () => (await listeners()).rows.filter((r) => !before.includes(r.pid)).length >= 3, {
      timeoutMs: 10_000,
      message: 'listeners back',
    });
    await sql`UPDATE wallets SET name = 'Heard again' WHERE id = ${walletId}`.execute(db);
    for (const s of [a, b]) {
      await waitFor(async () => (await api(s, 'GET', `/wallet/${walletId}`, token)).body.data.name === 'Heard again', {
        timeoutMs: 2_000,
        message: 'rename after reconnect',
      });
    }
  });

  it('every table a cached query reads announces its writes', async () => {
    const triggers = await sql<{ table: string }>`
      SELECT c.relname AS table FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid
      WHERE NOT t.tgisinternal AND t.tgname = c.relname || '_cache_notify'`.execute(seed.store.db);
    expect([...cachedTables].sort()).toEqual(['networks', 'wallet_balances', 'wallet_tokens', 'wallets']);
    const notifying = triggers.rows.map((r) => r.table);
    for (const table of cachedTables) expect(notifying).toContain(table);
  });
});
