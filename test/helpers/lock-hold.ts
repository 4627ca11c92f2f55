/**
 * How long another connection holds a wallet's row lock on PostgreSQL, measured from outside:
 * `direct` (a store straight to the server, three connections) takes the wallet's lock, `start()`
 * sets off the work that will queue for it, and once a statement matching `waiting` (a LIKE
 * pattern) waits for the lock, a probe on a second connection asks for the lock too and queues
 * behind the work. Then `direct` lets its lock go: the work is granted it first, and the probe's
 * grant comes when the work lets it go, so the time from the release to the probe's grant is how
 * long the work held the lock. With a proxy that delays every answer (test/helpers/delay-proxy.ts),
 * that is the work's round trips after its grant.
 *
 * The probe is queued before the release, not sent after it: PostgreSQL does not hand a row lock
 * to its waiters in order when a newcomer arrives between the holder's commit and the woken
 * waiter's taking the row (the newcomer finds the row free and takes it; on a busy machine the
 * woken backend may not have run yet). A waiter that queued while the row was held waits behind
 * the first waiter's tuple lock, so its turn comes strictly after the work's.
 */
import { sql } from 'kysely';
import type { Store } from '../../src/db/index.js';
import { waitFor } from './wait.js';

const PROBE = 'lock-hold probe';

export async function timeLockHold<T>(
  direct: Store,
  walletId: number,
  waiting: string,
  start: () => Promise<T>,
): Promise<{ heldForMs: number; result: T }> {
  const lockWallet = (trx: Store['db']) => sql`select id from wallets where id = ${walletId} for update /* lock-hold probe */`.execute(trx);
  const waiters = async (pattern: string): Promise<number> => {
    const r = await sql<{ n: number }>`select count(*)::int as n from pg_stat_activity
      where datname = current_database() and wait_event_type = 'Lock' and query like ${pattern}`.execute(direct.db);
    return r.rows[0]!.n;
  };
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
  const work = start();
  work.catch(() => undefined); // awaited below
  await waitFor(async () => ((await waiters(waiting)) >= 1 ? true : null), {
    timeoutMs: 30_000,
    message: `a statement like ${waiting} waiting for the wallet's lock`,
  });
  let grantedAt = 0;
  const probe = direct.db.transaction().execute(async (trx) => {
    await lockWallet(trx);
    grantedAt = performance.now();
  });
  await waitFor(async () => ((await waiters(`%${PROBE}%`)) >= 1 ? true : null), {
    timeoutMs: 30_000,
    message: 'the probe waiting for the wallet’s lock behind the work',
  });
  const t0 = performance.now();
  release();
  await holder;
  await probe;
  return { heldForMs: grantedAt - t0, result: await work };
}
