/**
 * Scale-out on PostgreSQL: several service processes over one database. Collected only when
 * DATABASE_URL is set (vitest.config.ts); on SQLite the service is a single process.
 * - No double spend across instances: 20 concurrent creates on two service instances (each its
 *   own connection pool), a balance that covers 5: exactly 5 accepted (the wallet row lock).
 * - One watcher per network: with two real service processes only the lease holder watches;
 *   after `kill -9` of the holder the other takes over within seconds and records the blocks
 *   mined meanwhile exactly once.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { findFreePort } from '../../src/chain/devnet.js';
import { startTestApp, TEST_APP_KEY, type TestApp, type TestUser } from '../helpers/app.js';
import { startTestChain, type TestChain } from '../helpers/chain.js';
import { createTestDatabase, type TestDatabase } from '../helpers/db.js';
import { runTs, type Proc } from '../helpers/process.js';
import { waitFor } from '../helpers/wait.js';
import { expectExactlyFive, race, START } from './race.js';
import { ETH, fundedWallet, sendFromOutsider, txRows, waitForCursor } from '../helpers/transfers.js';

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

describe('two service instances, one PostgreSQL', () => {
  let a: TestApp;
  let user: TestUser;
  let networkId: number;
  beforeAll(async () => {
    a = await startTestApp({ workers: true });
    networkId = await chain.register(a);
    await waitForCursor(a, networkId);
    user = await a.createUser();
  });
  afterAll(async () => {
    await a?.close();
  });

  it('accept exactly as many as the balance covers', async () => {
    const b = await startTestApp({ database: a.database, keepDatabase: true });
    try {
      const w = await fundedWallet(a, chain, user, networkId, START);
      const results = await race([a, b], user, w);
      // Whichever instance answered each request, 5 are accepted in all.
      await expectExactlyFive(a, chain, w, results);
    } finally {
      await b.close();
    }
  });
});

describe('watcher takeover between processes', () => {
  it('two processes: one watches; after kill -9 the other takes over within seconds and misses nothing', async () => {
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
    const holder = () =>
      db.selectFrom('leases').select(['holder', 'expires_at']).where('name', '=', `watcher:${network.id}`).executeTakeFirst();
    await waitFor(async () => (await holder())?.holder.includes(`:${pid}:`), { timeoutMs: 30_000, message: `lease held by pid ${pid}` });
    const cursor = await waitFor(
      () => db.selectFrom('chain_cursors').select('block_number').where('network_id', '=', network.id).executeTakeFirst(),
      { timeoutMs: 10_000 },
    );
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
