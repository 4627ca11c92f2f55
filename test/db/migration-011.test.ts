/**
 * 011_reconciliation is additive: rows mined before it keep their fields and have no `fee_paid`
 * (the reconciliation then counts gas used × the stored effective price), and the previous
 * version's writes, which know nothing of the new columns and tables, still work.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createStore, type Store } from '../../src/db/index.js';
import { migrateToLatest } from '../../src/db/migrate.js';
import { listTxMovements } from '../../src/modules/reconciliation/reconciliation.repository.js';
import { createTestDatabase, driverName, type TestDatabase } from '../helpers/db.js';

let database: TestDatabase;
let store: Store;

describe(`011_reconciliation (${driverName})`, () => {
  beforeAll(async () => {
    database = await createTestDatabase();
    store = createStore({ databaseUrl: database.databaseUrl, dataDir: database.dataDir, dbPoolSize: 2 });
    await migrateToLatest(store, '010_wallet_nonces');
  });
  afterAll(async () => {
    await store?.destroy();
    await database?.drop();
  });

  it('leaves fee_paid null on earlier rows (counted as gas used × price) and takes the previous version’s inserts', async () => {
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
        next_sub_index: 1,
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
    // What the previous version writes for a mined transfer: no fee_paid column.
    const row = {
      wallet_id: w.id,
      token_id: token.id,
      type: 'transfer',
      status: 'confirmed',
      amount: '1000',
      fee_reserved: '0',
      from_address: `0x${'1'.repeat(40)}`,
      to_address: `0x${'2'.repeat(40)}`,
      tx_hash: `0x${'a'.repeat(64)}`,
      log_index: -1,
      block_number: 5,
      gas_used: '21000',
      gas_price: '3000000007',
      receipt_status: 1,
      created_at: 1,
      updated_at: 1,
    };
    await db.insertInto('transactions').values(row).execute();
    await migrateToLatest(store);
    await db
      .insertInto('transactions')
      .values({ ...row, tx_hash: `0x${'b'.repeat(64)}`, block_number: 6 })
      .execute();

    const moved = await listTxMovements(db, w.id, 0, 10, 0);
    expect(moved.map((m) => [m.block_number, m.amount, m.fee])).toEqual([
      [5, 1000n, 21000n * 3000000007n],
      [6, 1000n, 21000n * 3000000007n],
    ]);
    const fees = await db.selectFrom('transactions').select('fee_paid').orderBy('id').execute();
    expect(fees).toEqual([{ fee_paid: null }, { fee_paid: null }]);
    expect(await db.selectFrom('reconciliation_checkpoints').select('id').execute()).toEqual([]);
    expect(await db.selectFrom('reconciliation_adjustments').select('id').execute()).toEqual([]);
  });
});
