/** Migrations that move data: a database made by the previous schema keeps what it held. */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql } from 'kysely';
import { createStore, type Store } from '../../src/db/index.js';
import { migrateToLatest } from '../../src/db/migrate.js';
import { setNextNonce } from '../../src/modules/transactions/transactions.repository.js';
import { createTestDatabase, driverName, type TestDatabase } from '../helpers/db.js';

let database: TestDatabase;
let store: Store;

describe(`010_wallet_nonces (${driverName})`, () => {
  beforeAll(async () => {
    database = await createTestDatabase();
    store = createStore({ databaseUrl: database.databaseUrl, dataDir: database.dataDir, dbPoolSize: 2 });
    await migrateToLatest(store, '009_read_cache_notify');
  });
  afterAll(async () => {
    await store?.destroy();
    await database?.drop();
  });

  it("copies each wallet's next nonce to wallet_nonces, none for a wallet that never sent, and keeps the old column for the previous version", async () => {
    const db = store.db;
    const user = await db
      .insertInto('users')
      .values({ name: 'M', email: 'm@example.com', password_hash: 'x', created_at: 1, updated_at: 1 })
      .returning('id')
      .executeTakeFirstOrThrow();
    const net = await db
      .insertInto('networks')
      .values({
        name: 'N',
        rpc_url: 'http://127.0.0.1:1',
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
    const ids: number[] = [];
    for (const nonce of [7, null, 0]) {
      const r = await sql<{
        id: number;
      }>`INSERT INTO wallets (user_id, network_id, name, description, address, private_key_enc, mnemonic_enc, next_sub_index, next_nonce, created_at, updated_at)
        VALUES (${user.id}, ${net.id}, 'W', '', ${`0x${String(ids.length).padStart(40, '0')}`}, 'k', 'm', 1, ${nonce}, 1, 1) RETURNING id`.execute(
        db,
      );
      ids.push(Number(r.rows[0]!.id));
    }
    await migrateToLatest(store);
    const rows = await db.selectFrom('wallet_nonces').select(['wallet_id', 'next_nonce']).orderBy('wallet_id').execute();
    expect(rows.map((r) => [Number(r.wallet_id), Number(r.next_nonce)])).toEqual([
      [ids[0], 7],
      [ids[2], 0],
    ]);
    // Additive: the previous version, still running during a rolling restart, reads its column.
    const kept = await sql<{ next_nonce: number | null }>`SELECT next_nonce FROM wallets ORDER BY id`.execute(db);
    expect(kept.rows.map((r) => (r.next_nonce === null ? null : Number(r.next_nonce)))).toEqual([7, null, 0]);
    // A wallet created by this version leaves it null and writes only wallet_nonces.
    const w = await db
      .insertInto('wallets')
      .values({
        user_id: user.id,
        network_id: net.id,
        name: 'New',
        description: '',
        address: `0x${'9'.repeat(40)}`,
        private_key_enc: 'k',
        mnemonic_enc: 'm',
        next_sub_index: 1,
        created_at: 1,
        updated_at: 1,
      })
      .returning('id')
      .executeTakeFirstOrThrow();
    await setNextNonce(db, w.id, 3);
    expect(
      Number(
        (await db.selectFrom('wallet_nonces').select('next_nonce').where('wallet_id', '=', w.id).executeTakeFirstOrThrow()).next_nonce,
      ),
    ).toBe(3);
    expect(
      (await sql<{ next_nonce: number | null }>`SELECT next_nonce FROM wallets WHERE id = ${w.id}`.execute(db)).rows[0]!.next_nonce,
    ).toBeNull();
    await db.deleteFrom('wallets').where('id', '=', w.id).execute();
    // A wallet deleted takes its nonce with it.
    if (store.driver === 'sqlite') await sql`PRAGMA foreign_keys = ON`.execute(db);
    await db.deleteFrom('wallets').where('id', '=', ids[0]!).execute();
    expect(await db.selectFrom('wallet_nonces').select('wallet_id').execute()).toEqual([{ wallet_id: ids[2] }]);
  });
});
