/** prepare(): a query compiled once runs with each call's own values, on SQLite and PostgreSQL. */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createStore, type Store } from '../../src/db/index.js';
import { migrateToLatest } from '../../src/db/migrate.js';
import { prepare } from '../../src/db/prepared.js';
import { createTestDatabase, driverName, type TestDatabase } from '../helpers/db.js';

let database: TestDatabase;
let store: Store;

const usersBetween = prepare((db: Store['db'], minId: number, email: string) =>
  db
    .selectFrom('users')
    .select(['id', 'email'])
    .where('id', '>=', minId)
    .where('email', '!=', email)
    .where('name', '=', 'Prepared')
    .orderBy('id', 'asc'),
);

describe(`prepare (${driverName})`, () => {
  beforeAll(async () => {
    database = await createTestDatabase();
    store = createStore({ databaseUrl: database.databaseUrl, dataDir: database.dataDir, dbPoolSize: 2 });
    await migrateToLatest(store);
    for (const [name, email] of [['Prepared', 'a@example.com'], ['Prepared', 'b@example.com'], ['Other', 'c@example.com'], ['Prepared', 'd@example.com']]) {
      await store.db.insertInto('users').values({ name: name!, email: email!, password_hash: 'x', created_at: 1, updated_at: 1 }).execute();
    }
  });
  afterAll(async () => {
    await store?.destroy();
    await database?.drop();
  });

  it('substitutes each call its own values and keeps the constants of the query', async () => {
    const ids = await store.db.selectFrom('users').select(['id', 'email']).orderBy('id', 'asc').execute();
    const [a, b, , d] = ids;
    expect(await usersBetween.execute(store.db, a!.id, 'b@example.com')).toEqual([a, d]);
    expect(await usersBetween.execute(store.db, b!.id, 'd@example.com')).toEqual([b]);
    expect(await usersBetween.executeTakeFirst(store.db, d!.id, 'x@example.com')).toEqual(d);
    expect(await usersBetween.executeTakeFirst(store.db, d!.id + 1, 'x@example.com')).toBeUndefined();
  });

  it('runs inside a transaction and sees its uncommitted rows', async () => {
    await store.db
      .transaction()
      .execute(async (trx) => {
        const { id } = await trx.insertInto('users').values({ name: 'Prepared', email: 'e@example.com', password_hash: 'x', created_at: 1, updated_at: 1 }).returning('id').executeTakeFirstOrThrow();
        expect(await usersBetween.execute(trx, id, 'a@example.com')).toEqual([{ id, email: 'e@example.com' }]);
        throw new Error('roll back');
      })
      .catch((e: Error) => expect(e.message).toBe('roll back'));
    expect(await store.db.selectFrom('users').select('id').where('email', '=', 'e@example.com').execute()).toEqual([]);
  });

  it('executeArrays gives each row as its column values in select order; the object rows stay objects', async () => {
    const ids = await store.db.selectFrom('users').select(['id', 'email']).orderBy('id', 'asc').execute();
    const [a, b, , d] = ids;
    expect(await usersBetween.executeArrays(store.db, a!.id, 'b@example.com')).toEqual([
      [a!.id, a!.email],
      [d!.id, d!.email],
    ]);
    // The same query through execute: objects still (on SQLite a statement of its own).
    expect(await usersBetween.execute(store.db, b!.id, 'x@example.com')).toEqual([b, d]);
    expect(await usersBetween.executeArrays(store.db, d!.id + 1, 'x@example.com')).toEqual([]);
    await store.db
      .transaction()
      .execute(async (trx) => {
        const { id } = await trx.insertInto('users').values({ name: 'Prepared', email: 'f@example.com', password_hash: 'x', created_at: 1, updated_at: 1 }).returning('id').executeTakeFirstOrThrow();
        expect(await usersBetween.executeArrays(trx, id, 'a@example.com')).toEqual([[id, 'f@example.com']]);
        throw new Error('roll back');
      })
      .catch((e: Error) => expect(e.message).toBe('roll back'));
  });

  it('refuses a placeholder that the query does not bind as a parameter', async () => {
    const unbound = prepare((db: Store['db'], id: number, _unused: string) => db.selectFrom('users').select('id').where('id', '=', id));
    await expect(unbound.execute(store.db, 1, 'x')).rejects.toThrow('1 placeholder(s) not bound as parameters');
  });
});
