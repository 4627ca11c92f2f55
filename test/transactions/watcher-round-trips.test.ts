/**
 * The watcher's writes of a batch on PostgreSQL travel together (src/db/pipelined.ts, the
 * follower's fenced transactions): six of our transfers mined in one block are attached in one
 * round trip, their six wallets locked in one, and settled, each with its
 * `transaction.confirmed`, in two, where each took one (the attach, a wallet's lock) and two (the
 * settle, its event). Measured through a proxy that holds every answer of the server for
 * DELAY_MS (test/helpers/delay-proxy.ts). What they write is checked on both databases.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createStore, type Store } from '../../src/db/index.js';
import { pipelinedTransaction } from '../../src/db/pipelined.js';
import {
  attachMinedTransfers,
  loadWatched,
  ownersOf,
  readBlockTransfers,
  type BlockTransfers,
} from '../../src/modules/transactions/transactions.chain-sync.js';
import { listSettleable } from '../../src/modules/transactions/transactions.watch.repository.js';
import { lockWalletsAndEvents, settleMinedAll } from '../../src/modules/transactions/transactions.state.js';
import { driverName } from '../helpers/db.js';
import { startDelayProxy, type DelayProxy } from '../helpers/delay-proxy.js';
import { ETH, fundedWallet, RECIPIENT } from '../helpers/transfers.js';
import { startStepSuite, syncScope, type StepSuite } from './watcher-steps.js';

// Large beside a saturated CI machine's scheduling noise (test/db/pipelined.pg.test.ts).
const DELAY_MS = 200;
const TRANSFERS = 6;

const postgres = driverName === 'postgres';

describe(`the watcher recording a batch (${driverName})`, () => {
  let s: StepSuite;
  let proxy: DelayProxy | undefined;
  /** PostgreSQL: a store whose every answer is held DELAY_MS by the proxy; SQLite: the app's (no round trips to count). */
  let slow: Store;
  let read: BlockTransfers;
  let ids: number[];
  let blockNumber: number;

  beforeAll(async () => {
    s = await startStepSuite();
    const { t, chain, user, networkId } = s;
    ids = [];
    for (let i = 0; i < TRANSFERS; i++) {
      const w = await fundedWallet(t, chain, user, networkId, 5n * ETH);
      const res = await t.request('POST', `/api/wallet/${w.id}/transaction/create`, {
        token: user.token,
        body: { amount: '1', token: 'ETH', address: RECIPIENT },
      });
      expect(res.status, res.text).toBe(200);
      ids.push(res.body.data.id as number);
    }
    await chain.mine(1);
    const scope = syncScope(s);
    const block = await scope.client.getBlock({ blockTag: 'latest', includeTransactions: true });
    blockNumber = Number(block.number);
    read = await readBlockTransfers(scope, block, await loadWatched(t.store.db, networkId));
    expect(read.ours.map((o) => o.rec.id).sort((a, b) => a - b)).toEqual(ids);

    if (!postgres) {
      slow = t.store;
      return;
    }
    proxy = await startDelayProxy(t.database.databaseUrl!, DELAY_MS);
    slow = createStore({ databaseUrl: proxy.url, dataDir: t.database.dataDir, dbPoolSize: 1 });
    await slow.db.selectFrom('leases').select('name').execute(); // connected
  });

  afterAll(async () => {
    if (postgres) await slow?.destroy();
    await proxy?.close();
    await s?.close();
  });

  it('attaches the block to six transfers in one round trip, then the commit', async () => {
    const t0 = performance.now();
    await pipelinedTransaction(slow.db, (trx) => attachMinedTransfers(trx, [read], Date.now(), s.t.ctx.log));
    const took = performance.now() - t0;
    if (postgres) {
      // begin and the six updates together, then the commit: two round trips (one each, begin sent with the first: seven).
      expect(took).toBeGreaterThanOrEqual(2 * DELAY_MS);
      expect(took).toBeLessThan(3.5 * DELAY_MS);
    }
    const rows = await s.t.store.db
      .selectFrom('transactions')
      .select(['id', 'status', 'block_number'])
      .where('id', 'in', ids)
      .orderBy('id')
      .execute();
    expect(rows).toEqual(ids.map((id) => ({ id, status: 'pending', block_number: blockNumber })));
  });

  it('locks the six wallets and the event order of their user with one write, the commit behind them', async () => {
    const ready = await listSettleable(s.t.store.db, s.networkId, blockNumber, 100);
    const t0 = performance.now();
    // Every lock issued at the call: the commit can be queued right behind them (where the event
    // order waited for the wallets' answers, it came after the commit and was refused).
    await pipelinedTransaction(slow.db, (trx, end) => end((t) => lockWalletsAndEvents(t, ownersOf(ready))));
    const took = performance.now() - t0;
    if (postgres) {
      expect(took).toBeGreaterThanOrEqual(DELAY_MS);
      expect(took).toBeLessThan(1.75 * DELAY_MS);
    }
  });

  it('locks the six wallets and the event order of their user in one round trip, and settles them, each with its event in the order of the rows, in two more', async () => {
    const ready = await listSettleable(s.t.store.db, s.networkId, blockNumber, 100);
    expect(ready.map((r) => r.id)).toEqual(ids);
    const t0 = performance.now();
    const settled = await pipelinedTransaction(slow.db, async (trx) => {
      await lockWalletsAndEvents(trx, ownersOf(ready));
      return settleMinedAll(trx, ready, Date.now(), () => Promise.reject(new Error('no refund here')));
    });
    const took = performance.now() - t0;
    if (postgres) {
      // begin with the six wallets' locks and the user's event order, the six updates, the six
      // events, the commit: four round trips (one a lock and two a row: twenty; the event order
      // after the wallets' answers: five).
      expect(took).toBeGreaterThanOrEqual(4 * DELAY_MS);
      expect(took).toBeLessThan(5.5 * DELAY_MS);
    }
    expect(settled.map((r) => [r.id, r.status])).toEqual(ids.map((id) => [id, 'confirmed']));
    const events = await s.t.store.db
      .selectFrom('events')
      .select(['name', 'payload'])
      .where('name', '=', 'transaction.confirmed')
      .orderBy('id')
      .execute();
    expect(events.map((e) => (JSON.parse(e.payload) as { transaction_id: number }).transaction_id)).toEqual(ids);
  });
});
