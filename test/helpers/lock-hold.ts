/**
 * How long another connection holds a wallet's row lock on PostgreSQL, measured from outside:
 * `direct` (a store straight to the server) takes the wallet's lock, `start()` sets off the work
 * that will queue for it, and once a statement matching `waiting` (a LIKE pattern) waits for a
 * lock, `direct` lets it go and asks for the lock again: that request waits behind the work, so
 * the time until it is granted is how long the work held the lock. With a proxy that delays every
 * answer (test/helpers/delay-proxy.ts), that is the work's round trips after its grant.
 */
import { sql } from 'kysely';
import type { Store } from '../../src/db/index.js';
import { waitFor } from './wait.js';

export async function timeLockHold<T>(direct: Store, walletId: number, waiting: string, start: () => Promise<T>): Promise<{ heldForMs: number; result: T }> {
  const lockWallet = (trx: Store['db']) => sql`select id from wallets where id = ${walletId} for update`.execute(trx);
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
  await waitFor(
    async () => {
      const r = await sql<{ n: number }>`select count(*)::int as n from pg_stat_activity
        where datname = current_database() and wait_event_type = 'Lock' and query like ${waiting}`.execute(direct.db);
      return r.rows[0]!.n >= 1 ? true : null;
    },
    { timeoutMs: 30_000, message: `a statement like ${waiting} waiting for the wallet's lock` },
  );
  release();
  await holder;
  const t0 = performance.now();
  await direct.db.transaction().execute((trx) => lockWallet(trx));
  const heldForMs = performance.now() - t0;
  return { heldForMs, result: await work };
}
