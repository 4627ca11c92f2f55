/**
 * How long a transfer creation holds its wallet's lock on PostgreSQL, counted in round trips: a
 * proxy in front of the server holds every answer for DELAY_MS (test/helpers/delay-proxy.ts), and
 * a second connection measures the span from the moment the create is granted the wallet's row
 * lock to the moment it lets it go. The create's id is drawn behind the lock statement
 * (transactions.repository.ts, `drawTransactionId`), so after the grant's answer it sends its
 * insert, its `transaction.created` and the commit together: one round trip under the lock, where
 * the event waited for the insert's answer (two). What it records is checked as well: the event
 * made before the insert answered names the row the insert wrote.
 */
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createStore, type Store } from '../../src/db/index.js';
import { startTestApp, type TestApp, type TestUser } from '../helpers/app.js';
import { startTestChain, type TestChain } from '../helpers/chain.js';
import { startDelayProxy, type DelayProxy } from '../helpers/delay-proxy.js';
import { waitFor } from '../helpers/wait.js';
import { ETH, eventsOf, fundedWallet, RECIPIENT, type FundedWallet } from './support.js';

// Large beside a saturated CI machine's scheduling noise (test/db/pipelined.test.ts).
const DELAY_MS = 200;

describe('a transfer creation holding its wallet lock (postgres)', () => {
  let t: TestApp;
  let chain: TestChain;
  let user: TestUser;
  let w: FundedWallet;
  let proxy: DelayProxy;
  /** The same service on the same database, every answer of the server held DELAY_MS. */
  let slow: TestApp;
  /** Straight to the server: holds and probes the wallet's lock. */
  let direct: Store;

  beforeAll(async () => {
    t = await startTestApp({ workers: false });
    chain = await startTestChain();
    const networkId = await chain.register(t);
    user = await t.createUser();
    w = await fundedWallet(t, chain, user, networkId, 5n * ETH);
    proxy = await startDelayProxy(t.database.databaseUrl!, DELAY_MS);
    slow = await startTestApp({ database: t.database, keepDatabase: true, workers: false, env: { DATABASE_URL: proxy.url } });
    direct = createStore({ databaseUrl: t.database.databaseUrl, dataDir: t.database.dataDir, dbPoolSize: 2 });
  });

  afterAll(async () => {
    await slow?.close();
    await proxy?.close();
    await direct?.destroy();
    await t?.close();
    await chain?.stop();
  });

  const lockWallet = (trx: Store['db']) => sql`select id from wallets where id = ${w.id} for update`.execute(trx);

  it('holds it for one round trip: the insert, the event and the commit sent together once it is granted', async () => {
    // Hold the wallet's lock, and let the create (through the slow proxy) queue for it.
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    let holding!: () => void;
    const held = new Promise<void>((resolve) => (holding = resolve));
    const holder = direct.db.transaction().execute(async (trx) => {
      await lockWallet(trx);
      holding();
      await released;
    });
    await held;
    const creating = slow.request('POST', `/api/wallet/${w.id}/transaction/create`, { token: user.token, body: { amount: '1', token: 'ETH', address: RECIPIENT } });
    await waitFor(
      async () => {
        const r = await sql<{ n: number }>`select count(*)::int as n from pg_stat_activity
          where datname = current_database() and wait_event_type = 'Lock' and query like '%wallet_nonces%for update%'`.execute(direct.db);
        return r.rows[0]!.n === 1 ? true : null;
      },
      { timeoutMs: 20_000, message: 'the create waiting for the wallet lock' },
    );

    // Let it go; the create is granted the lock at once, and our next request for it waits behind it.
    release();
    await holder;
    const t0 = performance.now();
    await direct.db.transaction().execute((trx) => lockWallet(trx));
    const heldFor = performance.now() - t0;

    const res = await creating;
    expect(res.status, res.text).toBe(200);
    // The grant's answer reaches the service one delay later; the insert, the event and the commit
    // then run on arrival: one round trip. Their answers come back with the lock already released.
    // Sent as two (the event after the insert's answer), the lock was held for two: 2 x DELAY_MS.
    expect(heldFor).toBeGreaterThanOrEqual(DELAY_MS);
    expect(heldFor).toBeLessThan(1.75 * DELAY_MS);

    const id = res.body.data.id as number;
    const [created] = await eventsOf(t, w.id, 'transaction.created');
    expect(created!.payload).toMatchObject({ transaction_id: id, wallet_id: w.id, amount: '1.000000000000000000', token: 'ETH', tx_hash: res.body.data.tx_hash, status: 'pending' });
    const row = await t.store.db.selectFrom('transactions').select(['id', 'status', 'nonce', 'seq']).where('wallet_id', '=', w.id).executeTakeFirstOrThrow();
    expect(row).toEqual({ id, status: 'pending', nonce: 0, seq: 1 });
  });
});
