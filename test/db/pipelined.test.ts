/**
 * pipelinedTransaction (src/db/pipelined.ts): a read step queued with `begin`, a write step, a
 * commit. What it writes is atomic like any transaction's, on SQLite and PostgreSQL: a failed
 * statement or step rolls every write back, and the pooled connection comes back outside any
 * transaction.
 */
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createStore, type Store } from '../../src/db/index.js';
import { migrateToLatest } from '../../src/db/migrate.js';
import { pipelinedTransaction } from '../../src/db/pipelined.js';
import { createTestDatabase, driverName, type TestDatabase } from '../helpers/db.js';

let database: TestDatabase;
let store: Store;

const leaseNames = async () => (await store.db.selectFrom('leases').select('name').orderBy('name').execute()).map((r) => r.name);
const insertLease = (db: Store['db'], name: string, holder = 'test') => db.insertInto('leases').values({ name, holder, expires_at: 1 }).execute();

describe(`pipelinedTransaction (${driverName})`, () => {
  beforeAll(async () => {
    database = await createTestDatabase();
    // One connection: a connection left inside a transaction would be the next caller's.
    store = createStore({ databaseUrl: database.databaseUrl, dataDir: database.dataDir, dbPoolSize: 1 });
    await migrateToLatest(store);
    await store.db.deleteFrom('leases').execute();
    await insertLease(store.db, 'taken');
  });
  afterAll(async () => {
    await store?.destroy();
    await database?.drop();
  });

  it('commits the write step, which gets what the read step read', async () => {
    const out = await pipelinedTransaction(
      store.db,
      (trx) => trx.selectFrom('leases').select('holder').where('name', '=', 'taken').execute(),
      async (trx, rows) => {
        await Promise.all([insertLease(trx, 'a', `after ${rows[0]!.holder}`), insertLease(trx, 'b')]);
        return rows.length;
      },
    );
    expect(out).toBe(1);
    expect(await store.db.selectFrom('leases').select(['name', 'holder']).where('name', 'in', ['a', 'b']).orderBy('name').execute()).toEqual([
      { name: 'a', holder: 'after test' },
      { name: 'b', holder: 'test' },
    ]);
  });

  it('rolls back every write of the step when one statement fails', async () => {
    const attempt = pipelinedTransaction(
      store.db,
      async () => null,
      (trx) => Promise.all([insertLease(trx, 'c'), insertLease(trx, 'taken'), insertLease(trx, 'd')]),
    );
    await expect(attempt).rejects.toThrow(/unique|UNIQUE|duplicate/);
    expect(await leaseNames()).toEqual(['a', 'b', 'taken']);
  });

  it('rolls back when the write step throws after writing', async () => {
    const attempt = pipelinedTransaction(
      store.db,
      async () => null,
      async (trx) => {
        await insertLease(trx, 'e');
        throw new Error('step failed');
      },
    );
    await expect(attempt).rejects.toThrow('step failed');
    expect(await leaseNames()).toEqual(['a', 'b', 'taken']);
  });

  it('with a one-statement write, commits it, or on its failure commits nothing and throws', async () => {
    const ok = await pipelinedTransaction(
      store.db,
      async () => 'x',
      (trx, r) => trx.insertInto('leases').values({ name: `one ${r}`, holder: 'test', expires_at: 1 }).returning('name').execute(),
      { oneStatementWrite: true },
    );
    expect(ok).toEqual([{ name: 'one x' }]);
    const failing = pipelinedTransaction(
      store.db,
      (trx) => insertLease(trx, 'read-wrote'),
      (trx) =>
        trx
          .insertInto('leases')
          .values([
            { name: 'h', holder: 'test', expires_at: 1 },
            { name: 'taken', holder: 'test', expires_at: 1 },
          ])
          .execute(),
      { oneStatementWrite: true },
    );
    await expect(failing).rejects.toThrow(/unique|UNIQUE|duplicate/);
    expect(await leaseNames()).toEqual(['a', 'b', 'one x', 'taken']);
    await store.db.deleteFrom('leases').where('name', '=', 'one x').execute();
  });

  it('rolls back when the read step fails, and the connection is outside any transaction after', async () => {
    const attempt = pipelinedTransaction(
      store.db,
      async (trx) => {
        await insertLease(trx, 'f');
        await insertLease(trx, 'taken');
      },
      async () => undefined,
    );
    await expect(attempt).rejects.toThrow(/unique|UNIQUE|duplicate/);
    // The pool's one connection: a statement now commits on its own and is seen from elsewhere.
    await insertLease(store.db, 'g');
    expect(await leaseNames()).toEqual(['a', 'b', 'g', 'taken']);
    if (driverName === 'postgres') {
      const open = await sql<{ n: number }>`select count(*)::int as n from pg_stat_activity where datname = current_database() and state like 'idle in transaction%'`.execute(store.db);
      expect(open.rows[0]!.n).toBe(0);
    }
  });
});
