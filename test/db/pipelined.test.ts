/**
 * pipelinedTransaction (src/db/pipelined.ts). What it writes is atomic like any transaction's, on
 * SQLite and PostgreSQL: a failed statement or a throw rolls every write back, `end(last)`
 * commits with its last statements or not at all, and the pooled connection comes back outside
 * any transaction. PostgreSQL's own (a statement after the commit refused, round trips, locks,
 * `coalesceWrites`): pipelined.pg.test.ts.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createStore, type Store } from '../../src/db/index.js';
import { migrateToLatest } from '../../src/db/migrate.js';
import { pipelinedTransaction } from '../../src/db/pipelined.js';
import { createTestDatabase, driverName, type TestDatabase } from '../helpers/db.js';
import { holderOf, insertLease, leaseNames, openTransactions } from './leases.js';

const UNIQUE = /unique|UNIQUE|duplicate/;

let database: TestDatabase;
let store: Store;

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

  it('commits what the body wrote; statements issued together run in the order issued', async () => {
    const out = await pipelinedTransaction(store.db, async (trx) => {
      const [, , seen] = await Promise.all([insertLease(trx, 'a', 'first'), insertLease(trx, 'b'), holderOf(trx, 'a')]);
      return seen;
    });
    expect(out).toBe('first');
    expect(await leaseNames(store.db)).toEqual(['a', 'b', 'taken']);
    expect(await openTransactions(store.db)).toBe(0);
  });

  it('rolls back every write when one statement issued with them fails, and throws its error', async () => {
    const attempt = pipelinedTransaction(store.db, (trx) =>
      Promise.all([insertLease(trx, 'c'), insertLease(trx, 'taken'), insertLease(trx, 'd')]),
    );
    await expect(attempt).rejects.toThrow(UNIQUE);
    expect(await leaseNames(store.db)).toEqual(['a', 'b', 'taken']);
    expect(await openTransactions(store.db)).toBe(0);
  });

  it('rolls back when the body throws after writing', async () => {
    const attempt = pipelinedTransaction(store.db, async (trx) => {
      await insertLease(trx, 'e');
      throw new Error('step failed');
    });
    await expect(attempt).rejects.toThrow('step failed');
    expect(await leaseNames(store.db)).toEqual(['a', 'b', 'taken']);
  });

  it('end(last) commits with its statement, or on its failure commits nothing and throws', async () => {
    const ok = await pipelinedTransaction(store.db, async (trx, end) => {
      await insertLease(trx, 'before end');
      return end((t) => t.insertInto('leases').values({ name: 'one x', holder: 'test', expires_at: 1 }).returning('name').execute());
    });
    expect(ok).toEqual([{ name: 'one x' }]);
    const failing = pipelinedTransaction(store.db, async (trx, end) => {
      await insertLease(trx, 'read-wrote');
      return end((t) =>
        t
          .insertInto('leases')
          .values([
            { name: 'h', holder: 'test', expires_at: 1 },
            { name: 'taken', holder: 'test', expires_at: 1 },
          ])
          .execute(),
      );
    });
    await expect(failing).rejects.toThrow(UNIQUE);
    expect(await leaseNames(store.db)).toEqual(['a', 'b', 'before end', 'one x', 'taken']);
    expect(await openTransactions(store.db)).toBe(0);
    await store.db.deleteFrom('leases').where('name', 'in', ['one x', 'before end']).execute();
  });

  it('end(last) that throws before issuing its statement commits nothing', async () => {
    const attempt = pipelinedTransaction(store.db, async (trx, end) => {
      await insertLease(trx, 'kept only with its event');
      return end(async () => {
        throw new Error('payload could not be built');
      });
    });
    await expect(attempt).rejects.toThrow('payload could not be built');
    expect(await leaseNames(store.db)).toEqual(['a', 'b', 'taken']);
    expect(await openTransactions(store.db)).toBe(0);
  });

  it('end(last) that awaits before its statement commits after it, as without end', async () => {
    await pipelinedTransaction(store.db, async (trx, end) =>
      end(async (t) => {
        await Promise.resolve(); // nothing issued at the call
        await insertLease(t, 'awaited first');
        await insertLease(t, 'then this');
      }),
    );
    expect(await leaseNames(store.db)).toEqual(['a', 'awaited first', 'b', 'taken', 'then this']);
    await store.db.deleteFrom('leases').where('name', 'in', ['awaited first', 'then this']).execute();
  });

  it('rolls back when an early statement fails, and the connection is outside any transaction after', async () => {
    const attempt = pipelinedTransaction(store.db, async (trx) => {
      await insertLease(trx, 'f');
      await insertLease(trx, 'taken');
    });
    await expect(attempt).rejects.toThrow(UNIQUE);
    // The pool's one connection: a statement now commits on its own and is seen from elsewhere.
    await insertLease(store.db, 'g');
    expect(await leaseNames(store.db)).toEqual(['a', 'b', 'g', 'taken']);
    expect(await openTransactions(store.db)).toBe(0);
  });
});
