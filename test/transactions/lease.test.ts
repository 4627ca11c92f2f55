/**
 * One watcher per network. The lease itself on either database (held by one holder, renewed,
 * taken over only once expired, and fenced: a holder that lost it cannot commit). On
 * PostgreSQL, with two real service processes on one database: only the holder watches, and
 * after `kill -9` of the holder the other process takes over within seconds and records the
 * blocks mined meanwhile exactly once.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { findFreePort } from '../../src/chain/devnet.js';
import { acquireLease, fence } from '../../src/chain/watcher.repository.js';
import { startTestApp, TEST_APP_KEY, type TestApp } from '../helpers/app.js';
import { startTestChain, type TestChain } from '../helpers/chain.js';
import { createTestDatabase, onPostgres, type TestDatabase } from '../helpers/db.js';
import { runTs, type Proc } from '../helpers/process.js';
import { waitFor } from '../helpers/wait.js';
import { ETH, sendFromOutsider, txRows } from './support.js';

let database: TestDatabase;
let t: TestApp;
let chain: TestChain;
let other: Proc | null = null;

beforeAll(async () => {
  database = await createTestDatabase();
  t = await startTestApp({ database, keepDatabase: true, env: { WATCHER_LEASE_MS: '2000' } });
  chain = await startTestChain();
});

afterAll(async () => {
  other?.child.kill('SIGKILL');
  await other?.exited;
  await t?.close();
  await database?.drop();
  await chain?.stop();
});

describe('watcher lease', () => {
  it('has one holder at a time, is renewed, taken over only after expiry, and fences a lost holder', async () => {
    const db = t.store.db;
    const name = `watcher:test-${randomBytes(3).toString('hex')}`;
    expect(await acquireLease(db, name, 'A', 1_000, 2_000)).toBe(true);
    expect(await acquireLease(db, name, 'B', 1_500, 2_000)).toBe(false);
    expect(await acquireLease(db, name, 'A', 2_500, 2_000)).toBe(true); // renewed until 4 500
    expect(await acquireLease(db, name, 'B', 4_000, 2_000)).toBe(false);
    expect(await acquireLease(db, name, 'B', 4_501, 2_000)).toBe(true); // expired: taken over
    expect(await db.transaction().execute((trx) => fence(trx, name, 'A', 4_600, 2_000))).toBe(false);
    expect(await db.transaction().execute((trx) => fence(trx, name, 'B', 4_600, 2_000))).toBe(true);
  });

  it.runIf(onPostgres)('two processes: one watches; after kill -9 the other takes over within seconds and misses nothing', async () => {
    const port = await findFreePort();
    other = runTs('src/server.ts', [], {
      NODE_ENV: 'test',
      PORT: String(port),
      DATA_DIR: database.dataDir,
      DATABASE_URL: database.databaseUrl!,
      DEVNET_RPC_URL: chain.rpcUrl,
      APP_KEY: TEST_APP_KEY,
      WATCHER_POLL_MS: '100',
      WATCHER_LEASE_MS: '2000',
      LOG_LEVEL: 'info',
    });
    const pid = other.child.pid!;
    const db = t.store.db;
    const network = await waitFor(() => db.selectFrom('networks').select(['id']).where('name', '=', 'Local devnet').executeTakeFirst(), {
      timeoutMs: 30_000,
      message: 'the other process registers the devnet',
    });
    const holder = () => db.selectFrom('leases').select(['holder', 'expires_at']).where('name', '=', `watcher:${network.id}`).executeTakeFirst();
    await waitFor(async () => (await holder())?.holder.includes(`:${pid}:`), { timeoutMs: 30_000, message: `lease held by pid ${pid}` });
    const cursor = await waitFor(() => db.selectFrom('chain_cursors').select('block_number').where('network_id', '=', network.id).executeTakeFirst(), { timeoutMs: 10_000 });
    const startCursor = Number(cursor.block_number);

    // This process runs its watcher too, but only the holder records blocks.
    t.startWorkers();
    const user = await t.createUser();
    const created = await t.request('POST', '/api/wallet/create', { token: user.token, body: { name: 'Shared', network_id: network.id } });
    const wallet = created.body.data as { id: number; address: `0x${string}` };
    const first = await sendFromOutsider(chain.rpcUrl, wallet.address, ETH);
    await waitFor(async () => (await txRows(t, wallet.id)).some((r) => r.tx_hash === first));
    expect((await holder())!.holder).toContain(`:${pid}:`);
    expect(t.logs.some((l) => l.includes('lease acquired'))).toBe(false);

    // The holder dies without a word; blocks keep coming.
    other.child.kill('SIGKILL');
    await other.exited;
    const killedAt = Date.now();
    const second = await sendFromOutsider(chain.rpcUrl, wallet.address, 2n * ETH);
    await chain.mine(3);
    await waitFor(async () => (await holder())?.holder.includes(`:${process.pid}:`), { timeoutMs: 10_000, message: 'takeover' });
    const takeoverMs = Date.now() - killedAt;
    expect(takeoverMs).toBeLessThan(5_000);

    const head = await chain.blockNumber();
    await waitFor(async () => {
      const c = await db.selectFrom('chain_cursors').select('block_number').where('network_id', '=', network.id).executeTakeFirst();
      return Number(c?.block_number) >= head;
    });
    const rows = await txRows(t, wallet.id);
    expect(rows.map((r) => [r.tx_hash, r.type, r.status])).toEqual([
      [first, 'receipt', 'confirmed'],
      [second, 'receipt', 'confirmed'],
    ]);
    const blocks = await db
      .selectFrom('chain_blocks')
      .select('block_number')
      .where('network_id', '=', network.id)
      .where('block_number', '>', startCursor)
      .orderBy('block_number', 'asc')
      .execute();
    expect(blocks.map((b) => Number(b.block_number))).toEqual(Array.from({ length: head - startCursor }, (_, i) => startCursor + 1 + i));
  });
});
