/**
 * How long the chain watcher's batch holds a wallet's lock on PostgreSQL, counted in round trips:
 * the service runs with its workers on a connection whose every answer a proxy holds for DELAY_MS
 * (test/helpers/delay-proxy.ts), and a second connection, straight to the server, holds the
 * wallet's lock while the batch queues for it, lets it go, and times how long the batch keeps it.
 * A hot wallet's creates queue for the same lock, so each round trip the batch makes while
 * holding it is a round trip every create behind it waits. The batch sends what touches no
 * wallet (the cursor, the blocks' hashes and times, the pruning) with its lock statements, and
 * the users' event orders with the wallets' locks (src/workers/watcher.ts, `recordBlocks`): after
 * the grant come the attach, the settling pass's read, its updates and its events, then the
 * commit (five round trips, where they were nine: measured 1,054 ms against 1,821).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { timeLockHold } from '../helpers/lock-hold.js';
import { waitFor } from '../helpers/wait.js';
import { startLockHoldSuite, type LockHoldSuite } from './lock-hold-suite.js';
import { RECIPIENT, waitForStatus } from '../helpers/transfers.js';

// Large beside a saturated CI machine's scheduling noise (test/db/pipelined.pg.test.ts).
const DELAY_MS = 200;

describe('the watcher recording a block of a locked wallet (postgres)', () => {
  let s: LockHoldSuite;

  beforeAll(async () => {
    s = await startLockHoldSuite(DELAY_MS);
  });

  afterAll(async () => {
    await s?.close();
  });

  it('holds it for five round trips after the grant: attach, settle (read, updates, events), commit', async () => {
    const { t, chain, user, w, direct } = s;
    await chain.rpc('evm_setAutomine', [false]);
    const res = await t.request('POST', `/api/wallet/${w.id}/transaction/create`, {
      token: user.token,
      body: { amount: '1', token: 'ETH', address: RECIPIENT },
    });
    expect(res.status, res.text).toBe(200);
    const id = res.body.data.id as number;

    // The slow service's watcher starts at the head, below the block that will mine the transfer.
    await s.slow({ workers: true });
    await waitFor(async () => (await direct.db.selectFrom('chain_cursors').select('block_number').executeTakeFirst()) ?? null, {
      timeoutMs: 30_000,
      message: 'the watcher’s cursor',
    });

    // The batch recording the next block queues for the wallet's lock while it is held here.
    const { heldForMs: heldFor } = await timeLockHold(direct, w.id, '%from "wallets"%for update%', () => chain.mine(1));

    // Five answers awaited while it holds the lock (the grant's with the event order, the attach,
    // the settling read, its updates, its events); the commit then runs on arrival. With the
    // hashes, the block times and the pruning after the grant, and the event order after the
    // wallets' answers: nine.
    expect(heldFor).toBeGreaterThanOrEqual(5 * DELAY_MS);
    expect(heldFor).toBeLessThan(6.5 * DELAY_MS);

    const done = await waitForStatus(t, user, w.id, id, 'confirmed', 30_000);
    expect(done.status).toBe('confirmed');
    const cursor = await direct.db.selectFrom('chain_cursors').select('block_number').executeTakeFirstOrThrow();
    expect(Number(cursor.block_number)).toBe(Number(done.block_number));
  });
});
