/**
 * Leases: a named right to do some work alone, held by one process until it expires (the
 * chain watcher takes one per network, `watcher:<network id>`).
 *
 * Acquiring is one upsert that only overwrites a row that is ours or has expired, so of
 * several processes exactly one gets it. The holder renews it on every tick, and inside every
 * database transaction that does the guarded work (`fence`): a process that lost its lease
 * (paused past the expiry while another took over) fails that check and rolls its work back,
 * so two processes never both do it, whatever their clocks say.
 */
import type { Executor } from './index.js';
import { prepare } from './prepared.js';

/** Takes or renews the lease; true when this holder has it until now + ttl. */
export async function acquireLease(db: Executor, name: string, holder: string, nowMs: number, ttlMs: number): Promise<boolean> {
  const row = await takeLease.executeTakeFirst(db, name, holder, nowMs + ttlMs, nowMs);
  return row?.holder === holder;
}

/** The watcher takes its lease at every tick: compiled once (prepared.ts). */
const takeLease = prepare((db: Executor, name: string, holder: string, expiresAt: number, nowMs: number) =>
  db
    .insertInto('leases')
    .values({ name, holder, expires_at: expiresAt })
    .onConflict((oc) =>
      oc
        .column('name')
        .doUpdateSet({ holder, expires_at: expiresAt })
        .where((eb) => eb.or([eb('leases.holder', '=', holder), eb('leases.expires_at', '<', nowMs)])),
    )
    .returning('holder'),
);

/** Inside a transaction: renews the lease if this holder still has it; false if it was lost. */
export async function fence(db: Executor, name: string, holder: string, nowMs: number, ttlMs: number): Promise<boolean> {
  const r = await db
    .updateTable('leases')
    .set({ expires_at: nowMs + ttlMs })
    .where('name', '=', name)
    .where('holder', '=', holder)
    .where('expires_at', '>=', nowMs)
    .executeTakeFirst();
  return Number(r.numUpdatedRows) === 1;
}

export async function releaseLease(db: Executor, name: string, holder: string): Promise<void> {
  await db.deleteFrom('leases').where('name', '=', name).where('holder', '=', holder).execute();
}
