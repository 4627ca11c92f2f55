/**
 * The late-payment announcement takes its locks in the one order of the chain follower's
 * transactions (PostgreSQL): the user's event order before the payment's row. A reorg's
 * rollback holds the user's event order (it wrote `transaction.reorged`) when it deletes the
 * payments above the common ancestor; an announcement that had locked the payment's row
 * (marking it notified) and then waited for that event order deadlocked with it.
 *
 * A second connection, straight to the server, plays the rollback: it takes the user's event
 * order, the settlement tick starts and queues for it, and the connection then deletes the
 * payment. Before the fix the tick held the payment's row: PostgreSQL found the deadlock and
 * aborted the tick's transaction. Now the tick waits before touching the row, the delete goes
 * through, and the tick, granted the lock after the commit, finds the payment gone and writes
 * no `charge.delayed`.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql } from 'kysely';
import { parseEther } from 'viem';
import { createStore, type Store } from '../../src/db/index.js';
import { ManualClock, startTestApp, type TestApp, type TestUser } from '../helpers/app.js';
import { startTestChain, type TestChain } from '../helpers/chain.js';
import { waitFor } from '../helpers/wait.js';
import { waitForCursor } from '../helpers/transfers.js';
import { chargeApi, clockToChain, events, pay } from './support.js';

/** events.repository.ts: the advisory lock namespace of a user's event order ('EVNT'). */
const EVENT_ORDER_LOCK = 0x45564e54;

describe('a late payment announced while a rollback deletes it (postgres)', () => {
  const clock = new ManualClock();
  let chain: TestChain;
  let t: TestApp;
  let alice: TestUser;
  let networkId: number;
  let direct: Store;

  beforeAll(async () => {
    chain = await startTestChain();
    t = await startTestApp({ clock, env: { CHARGES_POLL_MS: '50', WATCHER_POLL_MS: '50' } });
    networkId = await chain.register(t);
    alice = await t.createUser();
    t.startWorkers();
    await waitForCursor(t, networkId);
    direct = createStore({ databaseUrl: t.database.databaseUrl, dataDir: t.database.dataDir, dbPoolSize: 3 });
  });
  afterAll(async () => {
    await direct?.destroy();
    await t?.close();
    await chain?.stop();
  });

  const deadlocks = async () =>
    Number(
      (await sql<{ n: string }>`select deadlocks::text as n from pg_stat_database where datname = current_database()`.execute(direct.db))
        .rows[0]!.n,
    );
  const advisoryWaiters = async () =>
    (
      await sql<{
        n: number;
      }>`select count(*)::int as n from pg_stat_activity where datname = current_database() and wait_event_type = 'Lock' and wait_event = 'advisory'`.execute(
        direct.db,
      )
    ).rows[0]!.n;

  it('takes the event order before the payment’s row: the rollback’s delete goes through, no deadlock', async () => {
    const wallet = (await t.request('POST', '/api/wallet/create', { token: alice.token, body: { name: 'Shop', network_id: networkId } }))
      .body.data as { id: number };
    const api = chargeApi(t, wallet.id, alice.token);
    await clockToChain(clock, chain);
    const c = await api.create({ amount: '0.1', token: 'ETH', expires: 600 });
    await pay(chain.rpcUrl, c.address, parseEther('0.1'));
    await api.until(c.id, (x) => x.status === 'paid', 'paid');
    await t.workers!.list.find((w) => w.name === 'charges')!.stop(); // the tick is driven by hand below

    const late = await pay(chain.rpcUrl, c.address, parseEther('0.05'));
    const payment = await waitFor(
      () =>
        t.store.db
          .selectFrom('charge_payments')
          .select(['id', 'block_number'])
          .where('charge_id', '=', c.id)
          .where('tx_hash', '=', late)
          .executeTakeFirst(),
      { message: 'the follower recorded the late payment' },
    );
    await waitForCursor(t, networkId, Number(payment.block_number));
    const before = await deadlocks();

    let release!: () => void;
    const released = new Promise<void>((r) => (release = r));
    let holding!: () => void;
    const held = new Promise<void>((r) => (holding = r));
    let deleted = -1;
    const rollback = direct.db.transaction().execute(async (trx) => {
      await sql`select pg_advisory_xact_lock(${EVENT_ORDER_LOCK}::int4, ${alice.id}::int4)`.execute(trx);
      holding();
      await released;
      const r = await trx.deleteFrom('charge_payments').where('id', '=', payment.id).executeTakeFirst();
      deleted = Number(r.numDeletedRows);
    });
    await held;
    const settling = t.services.charges.settle();
    settling.catch(() => undefined); // awaited below
    await waitFor(async () => ((await advisoryWaiters()) >= 1 ? true : null), { message: 'the tick waiting for the user’s event order' });
    release();
    await rollback;
    await settling;

    expect(deleted).toBe(1);
    expect(await deadlocks()).toBe(before);
    expect((await events(t, 'charge.delayed')).filter((e) => e.charge_id === c.id)).toEqual([]);
  });
});
