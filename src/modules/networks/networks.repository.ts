import type { Executor } from '../../db/index.js';
import { prepare } from '../../db/prepared.js';
import type { NetworkRow } from '../../db/types.js';

export const NETWORK_COLUMNS = [
  'id',
  'name',
  'rpc_url',
  'rpc_urls',
  'chain_id',
  'currency_symbol',
  'block_explorer',
  'is_mainnet',
  'confirmations',
  'preset',
  'sweeper',
  'price_feeds',
  'created_at',
  'updated_at',
] as const;

export function listNetworks(db: Executor): Promise<NetworkRow[]> {
  return allNetworks.execute(db);
}

/** Read by the watcher and the charge worker at every tick: compiled once. */
const allNetworks = prepare((db: Executor) => db.selectFrom('networks').select(NETWORK_COLUMNS).orderBy('id', 'asc'));

/**
 * Every transfer, fee preview and watcher pass reads its network: compiled once and kept until
 * the networks table is written (src/db/read-cache.ts; on PostgreSQL by migration 009's NOTIFY).
 */
const networkById = prepare((db: Executor, id: number) => db.selectFrom('networks').select(NETWORK_COLUMNS).where('id', '=', id), {
  cache: { tables: ['networks'] },
});

export function findNetwork(db: Executor, id: number): Promise<NetworkRow | undefined> {
  return networkById.executeTakeFirst(db, id);
}

export function findNetworkByName(db: Executor, name: string): Promise<NetworkRow | undefined> {
  return db.selectFrom('networks').select(NETWORK_COLUMNS).where('name', '=', name).executeTakeFirst();
}

export interface NetworkInput {
  name: string;
  /** The first endpoint. */
  rpc_url: string;
  /** Every endpoint in order, `rpc_url` first; absent: `rpc_url` alone. */
  rpc_urls?: readonly string[];
  chain_id: number;
  currency_symbol: string;
  block_explorer: string;
  is_mainnet: boolean;
  confirmations: number;
  /** The preset it was registered from (presets.ts); absent or null: none. */
  preset?: string | null;
  /** Chainlink feeds by pair (`{"ETH/USD": address}`) beyond its preset's; null: none; absent: left as they are. */
  price_feeds?: Readonly<Record<string, string>> | null;
}

/** Inserts the network, or updates the one with the same name; returns the row. */
export async function upsertNetwork(db: Executor, n: NetworkInput, nowMs: number): Promise<NetworkRow> {
  const urls = n.rpc_urls && n.rpc_urls.length > 0 ? n.rpc_urls : [n.rpc_url];
  const values = {
    name: n.name,
    rpc_url: urls[0]!,
    // NULL for one endpoint: what the previous version wrote (migration 015).
    rpc_urls: urls.length > 1 ? JSON.stringify(urls) : null,
    chain_id: n.chain_id,
    currency_symbol: n.currency_symbol,
    block_explorer: n.block_explorer,
    is_mainnet: n.is_mainnet ? 1 : 0,
    confirmations: n.confirmations,
    preset: n.preset ?? null,
    ...(n.price_feeds === undefined ? {} : { price_feeds: n.price_feeds === null ? null : JSON.stringify(n.price_feeds) }),
  };
  await db
    .insertInto('networks')
    .values({ ...values, created_at: nowMs, updated_at: nowMs })
    .onConflict((oc) => oc.column('name').doUpdateSet({ ...values, updated_at: nowMs }))
    .execute();
  return (await findNetworkByName(db, n.name))!;
}

/** The network's own Chainlink feeds (beyond its preset's), replaced whole. */
export async function setPriceFeeds(
  db: Executor,
  networkId: number,
  feeds: Readonly<Record<string, string>>,
  nowMs: number,
): Promise<void> {
  await db
    .updateTable('networks')
    .set({ price_feeds: JSON.stringify(feeds), updated_at: nowMs })
    .where('id', '=', networkId)
    .execute();
}

// ---------------------------------------------------------------------------------------------
// The chain watcher's position on each network: its block cursor and the recent block hashes
// it has processed (to notice a reorg). Written only inside the watcher's fenced transactions.
// ---------------------------------------------------------------------------------------------

export interface ChainCursor {
  block_number: number;
  block_hash: string;
}

export function findCursor(db: Executor, networkId: number): Promise<ChainCursor | undefined> {
  return cursorOf.executeTakeFirst(db, networkId);
}

/** Read by the watcher several times a round: compiled once (src/db/prepared.ts). */
const cursorOf = prepare((db: Executor, networkId: number) =>
  db.selectFrom('chain_cursors').select(['block_number', 'block_hash']).where('network_id', '=', networkId),
);

/** The first cursor of a network (no-op if one exists). */
export async function initCursor(db: Executor, networkId: number, c: ChainCursor, nowMs: number): Promise<void> {
  await db
    .insertInto('chain_cursors')
    .values({ network_id: networkId, block_number: c.block_number, block_hash: c.block_hash, updated_at: nowMs })
    .onConflict((oc) => oc.column('network_id').doNothing())
    .execute();
}

/** Moves the cursor from `from` to `to`; false if it was not at `from` any more (someone else moved it). */
export async function moveCursor(db: Executor, networkId: number, from: ChainCursor, to: ChainCursor, nowMs: number): Promise<boolean> {
  const r = await db
    .updateTable('chain_cursors')
    .set({ block_number: to.block_number, block_hash: to.block_hash, updated_at: nowMs })
    .where('network_id', '=', networkId)
    .where('block_number', '=', from.block_number)
    .where('block_hash', '=', from.block_hash)
    .executeTakeFirst();
  return Number(r.numUpdatedRows) === 1;
}

/** Stores the hashes of some blocks of a network (one statement; a height stored before takes the new hash). */
export async function saveBlocks(
  db: Executor,
  networkId: number,
  blocks: ReadonlyArray<{ number: number; hash: string; parentHash: string }>,
  nowMs: number,
): Promise<void> {
  if (blocks.length === 0) return;
  await db
    .insertInto('chain_blocks')
    .values(
      blocks.map((b) => ({
        network_id: networkId,
        block_number: b.number,
        block_hash: b.hash,
        parent_hash: b.parentHash,
        created_at: nowMs,
      })),
    )
    .onConflict((oc) =>
      oc.columns(['network_id', 'block_number']).doUpdateSet((eb) => ({
        block_hash: eb.ref('excluded.block_hash'),
        parent_hash: eb.ref('excluded.parent_hash'),
        created_at: eb.ref('excluded.created_at'),
      })),
    )
    .execute();
}

/** Keeps the newest `keep` block hashes of a network. */
export async function pruneBlocks(db: Executor, networkId: number, newest: number, keep: number): Promise<void> {
  await blocksUpTo.execute(db, networkId, newest - keep);
}

const blocksUpTo = prepare((db: Executor, networkId: number, upTo: number) =>
  db.deleteFrom('chain_blocks').where('network_id', '=', networkId).where('block_number', '<=', upTo),
);

export async function deleteBlocksAbove(db: Executor, networkId: number, block: number): Promise<void> {
  await db.deleteFrom('chain_blocks').where('network_id', '=', networkId).where('block_number', '>', block).execute();
}

/** Stored block hashes at or below `maxBlock`, newest first. */
export function listBlocks(db: Executor, networkId: number, maxBlock: number): Promise<ChainCursor[]> {
  return db
    .selectFrom('chain_blocks')
    .select(['block_number', 'block_hash'])
    .where('network_id', '=', networkId)
    .where('block_number', '<=', maxBlock)
    .orderBy('block_number', 'desc')
    .execute();
}

export async function findBlockHash(db: Executor, networkId: number, block: number): Promise<string | undefined> {
  const r = await db
    .selectFrom('chain_blocks')
    .select('block_hash')
    .where('network_id', '=', networkId)
    .where('block_number', '=', block)
    .executeTakeFirst();
  return r?.block_hash;
}

/** Records the network's Sweeper (src/chain/sweeper.ts): its address once its code is on the chain; null when it is not. */
export async function setSweeper(db: Executor, networkId: number, address: string | null, nowMs: number): Promise<void> {
  await db.updateTable('networks').set({ sweeper: address, updated_at: nowMs }).where('id', '=', networkId).execute();
}
