/**
 * 026_late_money: `charge_payments` keeps every row and both its indexes (SQLite copies the table
 * into one without the NOT NULL on tx_hash, from_address and block_hash), takes a payment found
 * by the balance (those three null), still refuses a second row of one transaction and log, and
 * the previous version's inserts still work. `charge_late_announcements` is unique per charge,
 * transaction and place.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createStore, type Store } from '../../src/db/index.js';
import { migrateToLatest } from '../../src/db/migrate.js';
import { listPayments, recordAnnouncement } from '../../src/modules/charges/charges.payments.repository.js';
import { createTestDatabase, driverName, type TestDatabase } from '../helpers/db.js';

let database: TestDatabase;
let store: Store;

describe(`026_late_money (${driverName})`, () => {
  beforeAll(async () => {
    database = await createTestDatabase();
    store = createStore({ databaseUrl: database.databaseUrl, dataDir: database.dataDir, dbPoolSize: 2 });
    await migrateToLatest(store, '023_transaction_item_json');
  });
  afterAll(async () => {
    await store?.destroy();
    await database?.drop();
  });

  async function aCharge(): Promise<number> {
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
    const w = await db
      .insertInto('wallets')
      .values({
        user_id: user.id,
        network_id: net.id,
        name: 'W',
        description: '',
        address: `0x${'1'.repeat(40)}`,
        private_key_enc: 'k',
        mnemonic_enc: 'm',
        next_sub_index: 2,
        created_at: 1,
        updated_at: 1,
      })
      .returning('id')
      .executeTakeFirstOrThrow();
    const token = await db
      .insertInto('wallet_tokens')
      .values({
        wallet_id: w.id,
        name: 'Ether',
        symbol: 'ETH',
        decimals: 18,
        contract: `0x${'0'.repeat(40)}`,
        is_native: 1,
        is_active: 1,
        is_testnet: 1,
        created_at: 1,
        updated_at: 1,
      })
      .returning('id')
      .executeTakeFirstOrThrow();
    const sub = await db
      .insertInto('sub_wallets')
      .values({ wallet_id: w.id, derivation_index: 1, address: `0x${'3'.repeat(40)}`, private_key_enc: 'k', created_at: 1 })
      .returning('id')
      .executeTakeFirstOrThrow();
    const c = await db
      .insertInto('charges')
      .values({
        uuid: 'u',
        wallet_id: w.id,
        sub_wallet_id: sub.id,
        token_id: token.id,
        amount: '10',
        paid_amount: '10',
        status: 'paid',
        mode: 'test',
        expires: 60,
        expires_at: 60_000,
        paid_at: 1,
        content: null,
        info: null,
        swept_tx_hash: null,
        watch_until: 70_000,
        created_at: 1,
        updated_at: 1,
      })
      .returning('id')
      .executeTakeFirstOrThrow();
    return c.id;
  }

  it('keeps the rows and the unique index, takes a payment without a transaction, and the previous version’s inserts', async () => {
    const db = store.db;
    const chargeId = await aCharge();
    const row = {
      charge_id: chargeId,
      network_id: 1,
      tx_hash: `0x${'a'.repeat(64)}`,
      log_index: -1,
      from_address: `0x${'2'.repeat(40)}`,
      amount: '10',
      block_number: 5,
      block_hash: `0x${'b'.repeat(64)}`,
      block_timestamp: 5_000,
      confirmed: 1,
      notified: 0,
      created_at: 1,
    };
    await db
      .insertInto('charge_payments')
      .values({ ...row, internal: 1 })
      .execute();
    await migrateToLatest(store);

    await db
      .insertInto('charge_payments')
      .values({ ...row, tx_hash: `0x${'c'.repeat(64)}`, block_number: 6 })
      .execute(); // the previous version's insert
    await expect(
      db
        .insertInto('charge_payments')
        .values({ ...row, block_number: 7 })
        .execute(),
    ).rejects.toThrow(/unique|UNIQUE/);
    await db
      .insertInto('charge_payments')
      .values({ ...row, tx_hash: null, from_address: null, block_hash: null, amount: '3', block_number: 90 })
      .execute();
    await db
      .insertInto('charge_payments')
      .values({ ...row, tx_hash: null, from_address: null, block_hash: null, amount: '4', block_number: 91 })
      .execute();

    const payments = await listPayments(db, [chargeId], { confirmedOnly: true });
    expect(payments.map((p) => [p.tx_hash, p.from_address, p.amount, p.block_number, p.internal])).toEqual([
      [row.tx_hash, row.from_address, 10n, 5, 1],
      [`0x${'c'.repeat(64)}`, row.from_address, 10n, 6, 0],
      [null, null, 3n, 90, 0],
      [null, null, 4n, 91, 0],
    ]);

    const now = 1;
    expect(await recordAnnouncement(db, { charge_id: chargeId, tx_hash: row.tx_hash, log_index: -1 }, now)).toBe(true);
    expect(await recordAnnouncement(db, { charge_id: chargeId, tx_hash: row.tx_hash, log_index: -1 }, now)).toBe(false);
  });
});
