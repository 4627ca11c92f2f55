/** Manual exchange rates (`rate:set`, `rate:clear`). */
import type { Executor } from '../../db/index.js';

/** `network_id` 0: a rate for every network. */
export const EVERY_NETWORK = 0;

export interface ManualRateRow {
  network_id: number;
  symbol: string;
  currency: string;
  value: string;
  updated_at: number;
}

const COLUMNS = ['network_id', 'symbol', 'currency', 'value', 'updated_at'] as const;

/** Sets (or replaces) a manual rate. */
export async function setManualRate(
  db: Executor,
  r: { network_id: number; symbol: string; currency: string; value: string },
  nowMs: number,
): Promise<void> {
  await db
    .insertInto('rates')
    .values({ ...r, created_at: nowMs, updated_at: nowMs })
    .onConflict((oc) => oc.columns(['network_id', 'symbol', 'currency']).doUpdateSet({ value: r.value, updated_at: nowMs }))
    .execute();
}

/** Clears a manual rate; false when there was none. */
export async function clearManualRate(db: Executor, r: { network_id: number; symbol: string; currency: string }): Promise<boolean> {
  const d = await db
    .deleteFrom('rates')
    .where('network_id', '=', r.network_id)
    .where('symbol', '=', r.symbol)
    .where('currency', '=', r.currency)
    .executeTakeFirst();
  return Number(d.numDeletedRows) > 0;
}

/** The manual rates that hold on a network: its own and those for every network. */
export async function listManualRates(db: Executor, networkId: number): Promise<ManualRateRow[]> {
  const rows = await db
    .selectFrom('rates')
    .select(COLUMNS)
    .where('network_id', 'in', [EVERY_NETWORK, networkId])
    .orderBy('symbol')
    .orderBy('currency')
    .orderBy('network_id', 'desc')
    .execute();
  return rows.map((r) => ({ ...r, network_id: Number(r.network_id), updated_at: Number(r.updated_at) }));
}
