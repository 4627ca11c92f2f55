/**
 * A long list page's items as the database keeps them (transactions.item-json.repository.ts): on SQLite each
 * row's item JSON stored in `item_json` by triggers, renewed at start when they are not this
 * version's; on PostgreSQL formatted in the query (no column). Either way a long page has the bytes
 * of the short pages, which the route writes from the row itself, after any write: a token's symbol
 * and decimals changed, a row written by plain SQL (as a previous version would).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql } from 'kysely';
import { startTestApp, type TestApp, type TestUser } from '../helpers/app.js';
import { createWalletRow } from '../helpers/factories.js';
import { driverName } from '../helpers/db.js';
import { insertTransaction, type NewTx } from '../../src/modules/transactions/transactions.repository.js';
import { listPageJson } from '../../src/modules/transactions/transactions.list.repository.js';
import { itemJsonTriggers, syncStoredItemJson } from '../../src/modules/transactions/transactions.item-json.repository.js';
import { reactivateToken } from '../../src/modules/tokens/tokens.repository.js';

let t: TestApp;
let user: TestUser;
let walletId: number;
let tusd = 0;
const ids: number[] = [];
const T0 = Date.UTC(2025, 5, 1, 12, 0, 0, 250);
const hash = (n: number) => `0x${n.toString(16).padStart(64, '0')}`;

function row(i: number, token: { id: number; symbol: string }): NewTx {
  return {
    wallet_id: walletId,
    token_id: token.id,
    symbol: token.symbol,
    type: 'transfer',
    status: 'confirmed',
    amount: 1_234_567n * BigInt(i + 1),
    fee_reserved: 0n,
    from_address: '0x000000000000000000000000000000000000bEEF',
    to_address: '0xa0Ee7A142d267C1f36714E4a8F75612F20a79720',
    tx_hash: hash(i + 1),
    log_index: -1,
    block_number: 10 + i,
    block_hash: hash(500 + i),
    block_timestamp: T0 + i * 1_000,
    nonce: i,
    gas: 21000n,
    gas_price: 1_000_000_007n,
    gas_used: 21000n,
    cumulative_gas_used: 21000n,
    receipt_status: 1,
    raw_tx: null,
    confirmed_at: T0,
  };
}

beforeAll(async () => {
  t = await startTestApp();
  user = await t.createUser();
  walletId = (await createWalletRow(t, user.id)).id;
  const db = t.store.db;
  const now = Date.now();
  tusd = (
    await db
      .insertInto('wallet_tokens')
      .values({
        wallet_id: walletId,
        name: 'TUSD',
        symbol: 'TUSD',
        decimals: 6,
        contract: `0x${'ab'.repeat(20)}`,
        is_native: 0,
        is_active: 1,
        is_testnet: 1,
        created_at: now,
        updated_at: now,
      })
      .returning('id')
      .executeTakeFirstOrThrow()
  ).id;
  const eth = (
    await db.selectFrom('wallet_tokens').select('id').where('wallet_id', '=', walletId).where('is_native', '=', 1).executeTakeFirstOrThrow()
  ).id;
  for (let i = 0; i < 6; i++)
    ids.push((await insertTransaction(db, row(i, i % 2 === 0 ? { id: tusd, symbol: 'TUSD' } : { id: eth, symbol: 'ETH' }), T0 + i))!);
});

afterAll(async () => {
  await t?.close();
});

const get = async (qs: string) => (await t.request('GET', `/api/wallet/${walletId}/transaction${qs}`, { token: user.token })).text;
const inner = (text: string) => text.slice(text.indexOf('"data":[') + 8, text.lastIndexOf(']'));
/** The items of the short pages (the route's serializer over the rows), joined as a long page joins them. */
async function shortPages(): Promise<string> {
  const pieces: string[] = [];
  for (let page = 1; page <= Math.ceil(ids.length / 4); page++) pieces.push(inner(await get(`?limit=4&page=${page}`)));
  return pieces.join(',');
}
async function longPage(): Promise<string[]> {
  const page = await listPageJson(t.store.db, walletId, { page: 1, limit: 1000 });
  expect(page).not.toBeNull();
  return page!.json;
}

describe(`a long page's stored items (${driverName})`, () => {
  it("follows a token's symbol and decimals, and a row written by plain SQL", async () => {
    const before = await longPage();
    expect(before[5]).toContain('"amount":"1.234567000000000000"');
    await reactivateToken(t.store.db, tusd, { name: 'Tether', symbol: 'USDT', decimals: 2 }, T0 + 60_000);
    const after = await longPage();
    expect(after[5]).toContain('"amount":"12345.670000000000000000"');
    expect(after[5]).toContain('"symbol":"USDT"');
    expect(after.join(',')).toBe(await shortPages());
    expect(inner(await get('?limit=1000'))).toBe(await shortPages());
    // A previous version's write: no repository involved.
    await sql`UPDATE transactions SET status = 'failed', failure_reason = 'out of gas', receipt_status = 0, updated_at = ${T0 + 90_000} WHERE id = ${ids[1]!}`.execute(
      t.store.db,
    );
    const failed = await longPage();
    expect(failed[4]).toContain('"status":"failed","tx_hash"');
    expect(failed[4]).toContain('"failure_reason":"out of gas"');
    expect(failed.join(',')).toBe(await shortPages());
  });

  it(
    driverName === 'sqlite'
      ? "reads the stored item, and renews triggers that are not this version's with every row"
      : 'formats the item in the query: no stored column, nothing to renew',
    async () => {
      const db = t.store.db;
      if (driverName !== 'sqlite') {
        expect(await syncStoredItemJson(db, 'postgres')).toBeNull();
        const cols = await sql<{
          n: number;
        }>`SELECT count(*)::int AS n FROM information_schema.columns WHERE table_name = 'transactions' AND column_name = 'item_json'`.execute(
          db,
        );
        expect(cols.rows[0]!.n).toBe(0);
        return;
      }
      const triggers = async () =>
        Object.fromEntries(
          (
            await sql<{
              name: string;
              sql: string;
            }>`SELECT name, sql FROM sqlite_master WHERE type = 'trigger' AND name LIKE '%item_json%' ORDER BY name`.execute(db)
          ).rows.map((r) => [r.name, r.sql]),
        );
      expect(await triggers()).toEqual(itemJsonTriggers());
      expect(await syncStoredItemJson(db, 'sqlite')).toBe(0);
      const good = await longPage();
      // The page serves the stored text as it is (an UPDATE of item_json alone fires no trigger),
      // its closing addresses checksummed; a text without them is not this version's: read the usual way.
      const ends = '"from":"0x000000000000000000000000000000000000bEEF","to":"0xa0Ee7A142d267C1f36714E4a8F75612F20a79720"}';
      await sql`UPDATE transactions SET item_json = ${`{"stale":true,${ends.toLowerCase()}`} WHERE id = ${ids[0]!}`.execute(db);
      expect((await longPage())[5]).toBe(`{"stale":true,${ends}`);
      await sql`UPDATE transactions SET item_json = '{"stale":true}' WHERE id = ${ids[0]!}`.execute(db);
      expect(await listPageJson(db, walletId, { page: 1, limit: 1000 })).toBeNull();
      // Triggers of another version: replaced, and every row written again.
      await sql`DROP TRIGGER transactions_item_json_update`.execute(db);
      await sql`CREATE TRIGGER transactions_item_json_update AFTER UPDATE OF status ON transactions BEGIN SELECT 1; END`.execute(db);
      expect(await syncStoredItemJson(db, 'sqlite')).toBe(ids.length);
      expect(await triggers()).toEqual(itemJsonTriggers());
      expect(await longPage()).toEqual(good);
      expect(await syncStoredItemJson(db, 'sqlite')).toBe(0);
    },
  );
});
