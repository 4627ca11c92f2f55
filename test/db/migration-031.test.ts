/**
 * 031_secret_flags: a database with no encrypted value of the earlier, unbound format (`v1`)
 * refuses one from the migration on (`app_flags.secrets_unbound_refused`); one that still holds
 * such a value is left to keys:rotate, which sets the flag once it has rewritten them all.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { createStore, type Store } from '../../src/db/index.js';
import { migrateToLatest } from '../../src/db/migrate.js';
import { isUnboundRefused } from '../../src/modules/secrets/secrets.repository.js';
import { createTestDatabase, driverName, type TestDatabase } from '../helpers/db.js';

const opened: { database: TestDatabase; store: Store }[] = [];

/** A database at 029 with one wallet whose key is `keyEnc`. */
async function before031(keyEnc: string): Promise<Store> {
  const database = await createTestDatabase();
  const store = createStore({ databaseUrl: database.databaseUrl, dataDir: database.dataDir, dbPoolSize: 2 });
  opened.push({ database, store });
  await migrateToLatest(store, '029_token_calls');
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
  await db
    .insertInto('wallets')
    .values({
      user_id: user.id,
      network_id: net.id,
      name: 'W',
      description: '',
      address: `0x${'1'.repeat(40)}`,
      private_key_enc: keyEnc,
      mnemonic_enc: 'v2.k.n.c.t',
      next_sub_index: 1,
      created_at: 1,
      updated_at: 1,
    })
    .execute();
  return store;
}

describe(`031_secret_flags (${driverName})`, () => {
  afterEach(async () => {
    for (const { database, store } of opened.splice(0)) {
      await store.destroy();
      await database.drop();
    }
  });

  it('refuses unbound values at once where none is left', async () => {
    const store = await before031('v2.k.n.c.t');
    await migrateToLatest(store);
    expect(await isUnboundRefused(store.db)).toBe(true);
  });

  it('leaves a database that still holds an unbound value to keys:rotate', async () => {
    const store = await before031('v1.k.n.c.t');
    await migrateToLatest(store);
    expect(await isUnboundRefused(store.db)).toBe(false);
  });
});
