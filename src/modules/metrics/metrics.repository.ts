/** The database reads behind /metrics: counts only, each one query. */
import type { Executor } from '../../db/index.js';

/** Webhook attempts ever made, by outcome: `success` (2xx), `http_error` (another status), `network_error` (no answer). */
export async function countWebhookAttempts(db: Executor): Promise<Record<'success' | 'http_error' | 'network_error', number>> {
  const row = await db
    .selectFrom('webhook_attempts')
    .select((eb) => [
      eb.fn.countAll<number>().as('total'),
      eb.fn
        .count<number>('response_status')
        .filterWhere('response_status', '>=', 200)
        .filterWhere('response_status', '<', 300)
        .as('success'),
      eb.fn.count<number>('response_status').as('answered'),
    ])
    .executeTakeFirstOrThrow();
  const total = Number(row.total);
  const success = Number(row.success);
  const answered = Number(row.answered);
  return { success, http_error: answered - success, network_error: total - answered };
}

/** Pending transactions, and those pending since before `stuckBeforeMs`. */
export async function countPendingTransactions(db: Executor, stuckBeforeMs: number): Promise<{ pending: number; stuck: number }> {
  const row = await db
    .selectFrom('transactions')
    .select((eb) => [
      eb.fn.countAll<number>().as('pending'),
      eb.fn.countAll<number>().filterWhere('created_at', '<', stuckBeforeMs).as('stuck'),
    ])
    .where('status', '=', 'pending')
    .executeTakeFirstOrThrow();
  return { pending: Number(row.pending), stuck: Number(row.stuck) };
}

/** The last block the watcher processed, per network. */
export function listSyncedBlocks(db: Executor): Promise<{ network_id: number; block_number: number }[]> {
  return db.selectFrom('chain_cursors').select(['network_id', 'block_number']).execute();
}
