/**
 * The read cache (src/db/read-cache.ts) never serves what the database no longer holds:
 * - which statements stamp which tables;
 * - through HTTP, with the token, the wallet guard and the balance rows served from the cache:
 *   a logout, a token added or removed, a balance re-read and another connection's commit
 *   (as the CLI would make) are all seen by the very next request that may see them;
 * - cached rows are frozen (a caller cannot change what the next request gets);
 * - inside a transaction nothing is cached.
 * Other processes on PostgreSQL: test/db/read-cache.pg.test.ts.
 */
import Database from 'better-sqlite3';
import type { Address } from 'viem';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sqlitePath } from '../../src/db/index.js';
import { DATA_VERSION_CHECK_MS, tableVersionsOf, writtenTables } from '../../src/db/read-cache.js';
import { findUserByTokenHash } from '../../src/modules/auth/auth.repository.js';
import { findWalletForUser } from '../../src/modules/wallets/wallets.repository.js';
import { sha256Hex } from '../../src/lib/crypto.js';
import { startTestApp, type TestApp, type TestUser } from '../helpers/app.js';
import { startTestChain, type TestChain } from '../helpers/chain.js';
import { driverName } from '../helpers/db.js';
import { deployErc20, mintErc20 } from '../helpers/erc20.js';
import { waitFor } from '../helpers/wait.js';
import { createWallet } from '../wallets/support.js';

describe('writtenTables', () => {
  it('names the table of an INSERT or UPDATE, nothing for reads, every table for the rest', () => {
    expect(writtenTables('select * from "users" where "id" = ?')).toEqual([]);
    expect(writtenTables('  SELECT 1')).toEqual([]);
    expect(writtenTables('/* array rows */ select "id" from "transactions"')).toEqual([]);
    expect(writtenTables('/* a */ /* b */ update "wallets" set "name" = ?')).toEqual(['wallets']);
    expect(writtenTables('begin immediate')).toEqual([]);
    expect(writtenTables('commit')).toEqual([]);
    expect(writtenTables('with x as (select 1) select * from x')).toEqual([]);
    expect(writtenTables('insert into "access_tokens" ("user_id") values (?) returning "id"')).toEqual(['access_tokens']);
    expect(writtenTables('update "wallet_balances" set "refreshed_at" = ? where "id" = ?')).toEqual(['wallet_balances']);
    expect(writtenTables('INSERT INTO rate_limits (key) VALUES ($1) ON CONFLICT (key) DO UPDATE SET points = 1')).toEqual(['rate_limits']);
    // A delete may cascade through foreign keys; REPLACE deletes; DDL changes anything.
    expect(writtenTables('delete from "wallets" where "id" = ?')).toBe('all');
    expect(writtenTables('insert or replace into "users" values (?)')).toBe('all');
    expect(writtenTables('replace into "users" values (?)')).toBe('all');
    expect(writtenTables('with x as (select 1) update "users" set "name" = ?')).toEqual(['users']);
    expect(
      writtenTables(
        'with t as (select 1), hit as (insert into rate_limits (key) select 1 on conflict (key) do update set points = 1 returning points) select 1',
      ),
    ).toEqual(['rate_limits']);
    expect(writtenTables('with gone as (delete from "wallets" returning id) select * from gone')).toBe('all');
    expect(writtenTables('alter table "users" add column "x" integer')).toBe('all');
    expect(writtenTables('pragma foreign_keys = off')).toBe('all');
  });
});

describe(`read cache through HTTP (${driverName})`, () => {
  let t: TestApp;
  let chain: TestChain;
  let networkId: number;
  let user: TestUser;

  beforeAll(async () => {
    t = await startTestApp({ env: { BALANCE_MAX_AGE_S: '3600' } });
    chain = await startTestChain();
    networkId = await chain.register(t);
    user = await t.createUser();
  });
  afterAll(async () => {
    await t?.close();
    await chain?.stop();
  });

  const balance = (token: string, walletId: number) => t.request('GET', `/api/wallet/${walletId}/balance`, { token });

  it('serves the same frozen rows again, and never inside a transaction', async () => {
    expect(tableVersionsOf(t.store.db)).toBeDefined();
    const w = await createWallet(t, user, networkId);
    const first = await findWalletForUser(t.store.db, user.id, w.id);
    const second = await findWalletForUser(t.store.db, user.id, w.id);
    expect(second).toBe(first); // the same rows, not read again
    expect(Object.isFrozen(second)).toBe(true);
    expect(() => {
      (second as { name: string }).name = 'changed';
    }).toThrow(TypeError);
    expect((await findWalletForUser(t.store.db, user.id, w.id))?.name).toBe('Main');
    await t.store.db.transaction().execute(async (trx) => {
      expect(tableVersionsOf(trx)).toBeUndefined();
      const inside = await findWalletForUser(trx, user.id, w.id);
      expect(inside).toEqual(first);
      expect(inside).not.toBe(first);
    });
  });

  it('a logout is seen by the next request, however often the token was used before', async () => {
    const other = await t.createUser();
    const w = await createWallet(t, other, networkId);
    for (let i = 0; i < 5; i++) expect((await balance(other.token, w.id)).status).toBe(200);
    expect((await t.request('POST', '/api/auth/logout', { token: other.token })).status).toBe(200);
    const after = await balance(other.token, w.id);
    expect(after.status).toBe(401);
    expect(after.body.message).toBe('Invalid token');
  });

  it('an expired token is refused at once, though its row is cached', async () => {
    const other = await t.createUser();
    const w = await createWallet(t, other, networkId);
    expect((await balance(other.token, w.id)).status).toBe(200);
    const row = await findUserByTokenHash(t.store.db, sha256Hex(other.token), Date.now());
    expect(row?.id).toBe(other.id);
    const { expires_at } = await t.store.db
      .selectFrom('access_tokens')
      .select('expires_at')
      .where('id', '=', row!.token_id)
      .executeTakeFirstOrThrow();
    expect(await findUserByTokenHash(t.store.db, sha256Hex(other.token), expires_at - 1)).toBeDefined();
    expect(await findUserByTokenHash(t.store.db, sha256Hex(other.token), expires_at)).toBeUndefined();
  });

  it('a token added, a balance re-read and a token removed show in the next balance answer', async () => {
    const w = await createWallet(t, user, networkId);
    const usd: Address = await deployErc20(chain.rpcUrl, { name: 'Cache USD', symbol: 'CUSD', decimals: 6 });
    await mintErc20(chain.rpcUrl, usd, w.address, 1_250_000n);
    const before = await balance(user.token, w.id);
    expect(before.body.data.tokens.map((x: { symbol: string }) => x.symbol)).toEqual(['ETH']);
    await balance(user.token, w.id); // served from the cache

    const added = await t.request('POST', `/api/wallet/${w.id}/token/add`, { token: user.token, body: { contract: usd } });
    expect(added.status, added.text).toBe(200);
    const withToken = await balance(user.token, w.id);
    expect(withToken.body.data.tokens.map((x: { symbol: string; balance: string }) => [x.symbol, x.balance])).toEqual([
      ['ETH', '0.000000000000000000'],
      ['CUSD', '1.250000000000000000'],
    ]);

    // New money on chain, the cached balance made stale by hand (as BALANCE_MAX_AGE_S would):
    // the next answer re-reads the chain and the one after it serves the new cached rows.
    await chain.rpc('anvil_setBalance', [w.address, '0xde0b6b3a7640000']);
    await t.store.db.updateTable('wallet_balances').set({ refreshed_at: 0 }).where('wallet_id', '=', w.id).execute();
    expect((await balance(user.token, w.id)).body.data.balance).toBe('1.000000000000000000');
    expect((await balance(user.token, w.id)).body.data.balance).toBe('1.000000000000000000');

    const removed = await t.request('GET', `/api/wallet/${w.id}/token/remove/${added.body.data.id}`, { token: user.token });
    expect(removed.status, removed.text).toBe(200);
    const without = await balance(user.token, w.id);
    expect(without.body.data.tokens.map((x: { symbol: string }) => x.symbol)).toEqual(['ETH']);
  });

  // SQLite only (a second connection to the same file); PostgreSQL: read-cache.pg.test.ts.
  if (driverName !== 'sqlite') return;
  it("another connection's commit (the CLI) is seen within DATA_VERSION_CHECK_MS", async () => {
    const other = await t.createUser();
    const w = await createWallet(t, other, networkId);
    expect((await balance(other.token, w.id)).status).toBe(200);
    expect((await balance(other.token, w.id)).status).toBe(200);
    // A second connection to the same file revokes every token of the user, as another process would.
    const cli = new Database(sqlitePath({ dataDir: t.config.dataDir }));
    try {
      cli.prepare('UPDATE access_tokens SET revoked_at = ? WHERE user_id = ?').run(Date.now(), other.id);
    } finally {
      cli.close();
    }
    const since = performance.now();
    await waitFor(() => performance.now() - since > DATA_VERSION_CHECK_MS, { timeoutMs: 1000, message: 'a millisecond' });
    expect((await balance(other.token, w.id)).status).toBe(401);
  });
});
