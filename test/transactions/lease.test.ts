/**
 * One watcher per network: the lease itself on either database (held by one holder, renewed,
 * taken over only once expired, and fenced: a holder that lost it cannot commit). The takeover
 * between two real service processes is in scale-out.pg.test.ts.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { acquireLease, fence } from '../../src/db/leases.repository.js';
import { startTestApp, type TestApp } from '../helpers/app.js';

let t: TestApp;

beforeAll(async () => {
  t = await startTestApp();
});

afterAll(async () => {
  await t?.close();
});

describe('watcher lease', () => {
  it('has one holder at a time, is renewed, taken over only after expiry, and fences a lost holder', async () => {
    const db = t.store.db;
    const name = `watcher:test-${randomBytes(3).toString('hex')}`;
    expect(await acquireLease(db, name, 'A', 1_000, 2_000)).toBe(true);
    expect(await acquireLease(db, name, 'B', 1_500, 2_000)).toBe(false);
    expect(await acquireLease(db, name, 'A', 2_500, 2_000)).toBe(true); // renewed until 4 500
    expect(await acquireLease(db, name, 'B', 4_000, 2_000)).toBe(false);
    expect(await acquireLease(db, name, 'B', 4_501, 2_000)).toBe(true); // expired: taken over
    expect(await db.transaction().execute((trx) => fence(trx, name, 'A', 4_600, 2_000))).toBe(false);
    expect(await db.transaction().execute((trx) => fence(trx, name, 'B', 4_600, 2_000))).toBe(true);
  });
});
