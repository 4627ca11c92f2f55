/** The supervisor's reads: a database round trip, the watcher's cursors, the delivery queue's counts. */
import { sql } from 'kysely';
import type { Executor } from '../../db/index.js';

/** One round trip to the database. */
export async function ping(db: Executor): Promise<void> {
  await sql`select 1`.execute(db);
}

/** The last block the watcher processed, by network id. */
export async function listSyncedBlocks(db: Executor): Promise<Map<number, number>> {
  const rows = await db.selectFrom('chain_cursors').select(['network_id', 'block_number']).execute();
  return new Map(rows.map((c) => [c.network_id, c.block_number]));
}

/** Blocks whose call traces are still to be read (`trace_pending`, src/workers/watcher.traces.ts), by network id. */
export async function countPendingTraces(db: Executor): Promise<Map<number, number>> {
  const rows = await db
    .selectFrom('trace_pending')
    .select(['network_id', db.fn.countAll<number>().as('n')])
    .groupBy('network_id')
    .execute();
  return new Map(rows.map((r) => [Number(r.network_id), Number(r.n)]));
}

/** The user's outgoing transactions not final, and those of them the watcher marked stuck (pending longer than TX_STUCK_AFTER_S). */
export async function countPendingOutgoing(db: Executor, userId: number): Promise<{ pending: number; stuck: number }> {
  const row = await db
    .selectFrom('transactions')
    .select((eb) => [eb.fn.countAll<number>().as('pending'), eb.fn.countAll<number>().filterWhere('stuck_at', 'is not', null).as('stuck')])
    .where('status', '=', 'pending')
    .where('type', 'in', ['transfer', 'contract'])
    .where('wallet_id', 'in', (eb) => eb.selectFrom('wallets').select('id').where('user_id', '=', userId))
    .executeTakeFirstOrThrow();
  return { pending: Number(row.pending), stuck: Number(row.stuck) };
}

export interface DeliveryCounts {
  pending: number;
  retrying: number;
  failed: number;
  delivered_last_hour: number;
}

/** The user's deliveries by open or failed status, and those delivered since `sinceMs`. */
export async function countDeliveries(db: Executor, userId: number, sinceMs: number): Promise<DeliveryCounts> {
  const usersWebhooks = db
    .selectFrom('webhooks')
    .innerJoin('wallets', 'wallets.id', 'webhooks.wallet_id')
    .select('webhooks.id')
    .where('wallets.user_id', '=', userId);
  const byStatus = await db
    .selectFrom('webhook_deliveries')
    .select(['status', db.fn.countAll<number>().as('n')])
    .where('status', 'in', ['pending', 'retrying', 'failed'])
    .where('webhook_id', 'in', usersWebhooks)
    .groupBy('status')
    .execute();
  const delivered = await db
    .selectFrom('webhook_deliveries')
    .select(db.fn.countAll<number>().as('n'))
    .where('status', '=', 'delivered')
    .where('delivered_at', '>=', sinceMs)
    .where('webhook_id', 'in', usersWebhooks)
    .executeTakeFirst();
  const count = (s: string) => Number(byStatus.find((r) => r.status === s)?.n ?? 0);
  return {
    pending: count('pending'),
    retrying: count('retrying'),
    failed: count('failed'),
    delivered_last_hour: Number(delivered?.n ?? 0),
  };
}
