import type { Executor } from '../../db/index.js';
import type { NetworkRow } from '../../db/types.js';

export const NETWORK_COLUMNS = [
  'id',
  'name',
  'rpc_url',
  'chain_id',
  'currency_symbol',
  'block_explorer',
  'is_mainnet',
  'confirmations',
  'created_at',
  'updated_at',
] as const;

export function listNetworks(db: Executor): Promise<NetworkRow[]> {
  return db.selectFrom('networks').select(NETWORK_COLUMNS).orderBy('id', 'asc').execute();
}

export function findNetwork(db: Executor, id: number): Promise<NetworkRow | undefined> {
  return db.selectFrom('networks').select(NETWORK_COLUMNS).where('id', '=', id).executeTakeFirst();
}

export function findNetworkByName(db: Executor, name: string): Promise<NetworkRow | undefined> {
  return db.selectFrom('networks').select(NETWORK_COLUMNS).where('name', '=', name).executeTakeFirst();
}

export interface NetworkInput {
  name: string;
  rpc_url: string;
  chain_id: number;
  currency_symbol: string;
  block_explorer: string;
  is_mainnet: boolean;
  confirmations: number;
}

/** Inserts the network, or updates the one with the same name; returns the row. */
export async function upsertNetwork(db: Executor, n: NetworkInput, nowMs: number): Promise<NetworkRow> {
  const values = {
    name: n.name,
    rpc_url: n.rpc_url,
    chain_id: n.chain_id,
    currency_symbol: n.currency_symbol,
    block_explorer: n.block_explorer,
    is_mainnet: n.is_mainnet ? 1 : 0,
    confirmations: n.confirmations,
  };
  await db
    .insertInto('networks')
    .values({ ...values, created_at: nowMs, updated_at: nowMs })
    .onConflict((oc) => oc.column('name').doUpdateSet({ ...values, updated_at: nowMs }))
    .execute();
  return (await findNetworkByName(db, n.name))!;
}
