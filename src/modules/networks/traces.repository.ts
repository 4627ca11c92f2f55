/**
 * The blocks whose call traces are still to be read (`trace_pending`, migration 027) and when an
 * endpoint of a network last answered a trace call (`network_traces`): the follower's record of
 * what it could not yet read inside a block (src/workers/watcher.traces.ts).
 */
import type { Executor } from '../../db/index.js';

export interface PendingTraceBlock {
  block_number: number;
  block_hash: string;
  attempts: number;
  created_at: number;
}

/** Inside the follower's block transaction: these blocks' traces are to be read again from `nextAtMs`. */
export async function addPendingTraces(
  trx: Executor,
  networkId: number,
  blocks: ReadonlyArray<{ number: number; hash: string }>,
  nextAtMs: number,
  nowMs: number,
): Promise<void> {
  if (blocks.length === 0) return;
  await trx
    .insertInto('trace_pending')
    .values(
      blocks.map((b) => ({
        network_id: networkId,
        block_number: b.number,
        block_hash: b.hash,
        attempts: 0,
        next_attempt_at: nextAtMs,
        created_at: nowMs,
      })),
    )
    .onConflict((oc) =>
      oc.columns(['network_id', 'block_number']).doUpdateSet((eb) => ({
        block_hash: eb.ref('excluded.block_hash'),
        attempts: 0,
        next_attempt_at: eb.ref('excluded.next_attempt_at'),
        created_at: eb.ref('excluded.created_at'),
      })),
    )
    .execute();
}

/** The oldest blocks of the network due a new read, at most `limit`. */
export async function listDuePendingTraces(db: Executor, networkId: number, nowMs: number, limit: number): Promise<PendingTraceBlock[]> {
  const rows = await db
    .selectFrom('trace_pending')
    .select(['block_number', 'block_hash', 'attempts', 'created_at'])
    .where('network_id', '=', networkId)
    .where('next_attempt_at', '<=', nowMs)
    .orderBy('block_number', 'asc')
    .limit(limit)
    .execute();
  return rows.map((r) => ({
    block_number: Number(r.block_number),
    block_hash: r.block_hash,
    attempts: Number(r.attempts),
    created_at: Number(r.created_at),
  }));
}

/** Every pending block of the network due now (traces are answered again: no backoff left to wait out). */
export async function makePendingTracesDue(db: Executor, networkId: number, nowMs: number): Promise<void> {
  await db
    .updateTable('trace_pending')
    .set({ next_attempt_at: nowMs })
    .where('network_id', '=', networkId)
    .where('next_attempt_at', '>', nowMs)
    .execute();
}

/** A read that did not get the block's traces: the next one at `nextAtMs`. */
export async function postponePendingTraces(db: Executor, networkId: number, blockNumber: number, nextAtMs: number): Promise<void> {
  await db
    .updateTable('trace_pending')
    .set((eb) => ({ attempts: eb('attempts', '+', 1), next_attempt_at: nextAtMs }))
    .where('network_id', '=', networkId)
    .where('block_number', '=', blockNumber)
    .execute();
}

/** Inside the transaction that records the block's traces: removes its row; false when it is gone (a reorg removed the block). */
export async function takePendingTraces(trx: Executor, networkId: number, blockNumber: number, blockHash: string): Promise<boolean> {
  const gone = await trx
    .deleteFrom('trace_pending')
    .where('network_id', '=', networkId)
    .where('block_number', '=', blockNumber)
    .where('block_hash', '=', blockHash)
    .executeTakeFirst();
  return Number(gone.numDeletedRows) > 0;
}

/** Inside the follower's reorg transaction: the blocks above `ancestor` are no longer on the chain. */
export async function deletePendingTracesAbove(trx: Executor, networkId: number, ancestor: number): Promise<void> {
  await trx.deleteFrom('trace_pending').where('network_id', '=', networkId).where('block_number', '>', ancestor).execute();
}

/** Gives up the blocks recorded before `beforeMs`; returns their numbers. */
export async function dropPendingTracesBefore(db: Executor, networkId: number, beforeMs: number): Promise<number[]> {
  const rows = await db
    .deleteFrom('trace_pending')
    .where('network_id', '=', networkId)
    .where('created_at', '<', beforeMs)
    .returning('block_number')
    .execute();
  return rows.map((r) => Number(r.block_number)).sort((a, b) => a - b);
}

/** The lowest block of the network whose traces are still to be read, or null. */
export async function lowestPendingTrace(db: Executor, networkId: number): Promise<number | null> {
  const row = await db
    .selectFrom('trace_pending')
    .select('block_number')
    .where('network_id', '=', networkId)
    .orderBy('block_number', 'asc')
    .limit(1)
    .executeTakeFirst();
  return row ? Number(row.block_number) : null;
}

/** When an endpoint of the network last answered a trace call, or null. */
export async function findTracesAnsweredAt(db: Executor, networkId: number): Promise<number | null> {
  const row = await db.selectFrom('network_traces').select('answered_at').where('network_id', '=', networkId).executeTakeFirst();
  return row ? Number(row.answered_at) : null;
}

export async function saveTracesAnsweredAt(db: Executor, networkId: number, atMs: number): Promise<void> {
  await db
    .insertInto('network_traces')
    .values({ network_id: networkId, answered_at: atMs })
    .onConflict((oc) => oc.column('network_id').doUpdateSet({ answered_at: atMs }))
    .execute();
}
