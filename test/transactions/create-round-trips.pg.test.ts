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
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestApp } from '../helpers/app.js';
import { timeLockHold } from '../helpers/lock-hold.js';
import { startLockHoldSuite, type LockHoldSuite } from './lock-hold-suite.js';
import { eventsOf, RECIPIENT } from '../helpers/transfers.js';

// Large beside a saturated CI machine's scheduling noise (test/db/pipelined.pg.test.ts).
const DELAY_MS = 200;

describe('a transfer creation holding its wallet lock (postgres)', () => {
  let s: LockHoldSuite;
  /** The same service on the same database, every answer of the server held DELAY_MS. */
  let slow: TestApp;

  beforeAll(async () => {
    s = await startLockHoldSuite(DELAY_MS);
    slow = await s.slow({ workers: false });
  });

  afterAll(async () => {
    await s?.close();
  });

  it('holds it for one round trip: the insert, the event and the commit sent together once it is granted', async () => {
    // The create (through the slow proxy) queues for the wallet's lock while it is held here.
    const { t, user, w } = s;
    const { heldForMs: heldFor, result: res } = await timeLockHold(s.direct, w.id, '%from "wallets" as "w"%for update%', () =>
      slow.request('POST', `/api/wallet/${w.id}/transaction/create`, {
        token: user.token,
        body: { amount: '1', token: 'ETH', address: RECIPIENT },
      }),
    );
    expect(res.status, res.text).toBe(200);
    // The grant's answer reaches the service one delay later; the insert, the event and the commit
    // then run on arrival: one round trip. Their answers come back with the lock already released.
    // Sent as two (the event after the insert's answer), the lock was held for two: 2 x DELAY_MS.
    expect(heldFor).toBeGreaterThanOrEqual(DELAY_MS);
    expect(heldFor).toBeLessThan(1.75 * DELAY_MS);

    const id = res.body.data.id as number;
    const [created] = await eventsOf(t, w.id, 'transaction.created');
    expect(created!.payload).toMatchObject({
      transaction_id: id,
      wallet_id: w.id,
      amount: '1.000000000000000000',
      token: 'ETH',
      tx_hash: res.body.data.tx_hash,
      status: 'pending',
    });
    const row = await t.store.db
      .selectFrom('transactions')
      .select(['id', 'status', 'nonce', 'seq'])
      .where('wallet_id', '=', w.id)
      .executeTakeFirstOrThrow();
    expect(row).toEqual({ id, status: 'pending', nonce: 0, seq: 1 });
  });
});
