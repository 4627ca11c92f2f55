/** prepare() and prepareRow(): a query compiled once runs with each call's own values, on SQLite and PostgreSQL. */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createStore, type Store } from '../../src/db/index.js';
import { migrateToLatest } from '../../src/db/migrate.js';
import { prepare, prepareRow } from '../../src/db/prepared.js';
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
    for (const [name, email] of [
      ['Prepared', 'a@example.com'],
      ['Prepared', 'b@example.com'],
      ['Other', 'c@example.com'],
      ['Prepared', 'd@example.com'],
    ]) {
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
        const { id } = await trx
          .insertInto('users')
          .values({ name: 'Prepared', email: 'e@example.com', password_hash: 'x', created_at: 1, updated_at: 1 })
          .returning('id')
          .executeTakeFirstOrThrow();
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
        const { id } = await trx
          .insertInto('users')
          .values({ name: 'Prepared', email: 'f@example.com', password_hash: 'x', created_at: 1, updated_at: 1 })
          .returning('id')
          .executeTakeFirstOrThrow();
        expect(await usersBetween.executeArrays(trx, id, 'a@example.com')).toEqual([[id, 'f@example.com']]);
        throw new Error('roll back');
      })
      .catch((e: Error) => expect(e.message).toBe('roll back'));
  });

  it('refuses a placeholder that the query does not bind as a parameter', async () => {
    const unbound = prepare((db: Store['db'], id: number, _unused: string) => db.selectFrom('users').select('id').where('id', '=', id));
    await expect(unbound.execute(store.db, 1, 'x')).rejects.toThrow('1 placeholder(s) not bound as parameters');
  });
  describe('prepareRow', () => {
    const insertToken = prepareRow(
      (db: Store['db'], row: { user_id: number; token_hash: string; expires_at: number; created_at: number; revoked_at?: number | null }) =>
        db.insertInto('access_tokens').values(row).returning(['id', 'token_hash', 'expires_at', 'revoked_at']),
    );
    const changeToken = prepareRow(
      (db: Store['db'], { id, ...set }: { id: number; token_hash?: string; expires_at?: number; revoked_at?: number | null }) =>
        db
          .updateTable('access_tokens')
          .set(set)
          .where('id', '=', id)
          .where('token_hash', '!=', 'locked')
          .returning(['id', 'token_hash', 'expires_at', 'revoked_at']),
    );
    let userId: number;
    const row = (hash: string, extra: object = {}) => ({ user_id: userId, token_hash: hash, expires_at: 100, created_at: 5, ...extra });
    const plain = (t: { token_hash: string; expires_at: number; revoked_at: number | null } | undefined) => ({
      hash: t!.token_hash,
      expires: Number(t!.expires_at),
      revoked: t!.revoked_at === null ? null : Number(t!.revoked_at),
    });

    beforeAll(async () => {
      userId = (await store.db.selectFrom('users').select('id').orderBy('id', 'asc').executeTakeFirstOrThrow()).id;
    });

    it('inserts each row with its own values, one statement per set of keys; an undefined key is left out', async () => {
      const a = await insertToken.executeTakeFirst(store.db, row('hash-a'));
      const b = await insertToken.executeTakeFirst(store.db, row('hash-b', { revoked_at: 77, expires_at: 200 }));
      const c = await insertToken.executeTakeFirst(store.db, row('hash-c', { revoked_at: undefined }));
      const d = await insertToken.executeTakeFirst(store.db, row('hash-d', { revoked_at: null }));
      expect([a, b, c, d].map(plain)).toEqual([
        { hash: 'hash-a', expires: 100, revoked: null },
        { hash: 'hash-b', expires: 200, revoked: 77 },
        { hash: 'hash-c', expires: 100, revoked: null },
        { hash: 'hash-d', expires: 100, revoked: null },
      ]);
      expect(new Set([a!.id, b!.id, c!.id, d!.id]).size).toBe(4);
    });

    it("updates by the row, setting only the fields given, with the query's own constants kept", async () => {
      const t = (await insertToken.executeTakeFirst(store.db, row('hash-e')))!;
      expect((await changeToken.execute(store.db, { id: t.id, revoked_at: 9 })).map(plain)).toEqual([
        { hash: 'hash-e', expires: 100, revoked: 9 },
      ]);
      expect((await changeToken.execute(store.db, { id: t.id, expires_at: 300, revoked_at: null })).map(plain)).toEqual([
        { hash: 'hash-e', expires: 300, revoked: null },
      ]);
      expect((await changeToken.execute(store.db, { id: t.id, token_hash: 'locked' })).map(plain)).toEqual([
        { hash: 'locked', expires: 300, revoked: null },
      ]);
      // token_hash != 'locked' is a constant of the query, not the row's: the row is left as it is.
      expect(await changeToken.execute(store.db, { id: t.id, expires_at: 1 })).toEqual([]);
      const stored = await store.db
        .selectFrom('access_tokens')
        .select(['token_hash', 'expires_at', 'revoked_at'])
        .where('id', '=', t.id)
        .executeTakeFirst();
      expect(plain(stored)).toEqual({ hash: 'locked', expires: 300, revoked: null });
    });

    it('refuses a value that is not plain, and a field the query does not bind', async () => {
      await expect(
        insertToken.execute(store.db, { ...row('hash-f'), token_hash: { toString: () => 'x' } as unknown as string }),
      ).rejects.toThrow('field token_hash is not a plain value');
      const dropsHash = prepareRow((db: Store['db'], r: { id: number; token_hash: string }) =>
        db.selectFrom('access_tokens').select('id').where('id', '=', r.id),
      );
      await expect(dropsHash.execute(store.db, { id: 1, token_hash: 'x' })).rejects.toThrow('field(s) token_hash not bound as parameters');
    });
  });
});
