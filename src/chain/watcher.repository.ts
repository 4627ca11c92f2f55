/**
 * The chain watcher's own rows: its lease, its block cursor and the recent block hashes it has
 * processed (for noticing a reorg), one set per network.
 *
 * Lease. A row `watcher:<network id>` names the process that may watch that network and until
 * when. Acquiring is one upsert that only overwrites a row that is ours or has expired, so of
 * several processes exactly one gets it. The holder renews it on every tick, and inside every
 * database transaction that records a block (`fence`): a process that lost its lease (paused
 * past the expiry while another took over) fails that check and rolls the block back, so two
 * processes never both record a network's blocks, whatever their clocks say.
 */
import type { Executor } from '../db/index.js';

export const leaseName = (networkId: number) => `watcher:${networkId}`;

/** Takes or renews the lease; true when this holder has it until now + ttl. */
export async function acquireLease(db: Executor, name: string, holder: string, nowMs: number, ttlMs: number): Promise<boolean> {
  const row = await db
    .insertInto('leases')
    .values({ name, holder, expires_at: nowMs + ttlMs })
    .onConflict((oc) =>
      oc
        .column('name')
        .doUpdateSet({ holder, expires_at: nowMs + ttlMs })
        .where((eb) => eb.or([eb('leases.holder', '=', holder), eb('leases.expires_at', '<', nowMs)])),
    )
    .returning('holder')
    .executeTakeFirst();
  return row?.holder === holder;
}

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

export interface Cursor {
  block_number: number;
  block_hash: string;
}

export function findCursor(db: Executor, networkId: number): Promise<Cursor | undefined> {
  return db.selectFrom('chain_cursors').select(['block_number', 'block_hash']).where('network_id', '=', networkId).executeTakeFirst();
}

/** The first cursor of a network (no-op if one exists). */
export async function initCursor(db: Executor, networkId: number, c: Cursor, nowMs: number): Promise<void> {
  await db
    .insertInto('chain_cursors')
    .values({ network_id: networkId, block_number: c.block_number, block_hash: c.block_hash, updated_at: nowMs })
    .onConflict((oc) => oc.column('network_id').doNothing())
    .execute();
}

/** Moves the cursor from `from` to `to`; false if it was not at `from` any more (someone else moved it). */
export async function moveCursor(db: Executor, networkId: number, from: Cursor, to: Cursor, nowMs: number): Promise<boolean> {
  const r = await db
    .updateTable('chain_cursors')
    .set({ block_number: to.block_number, block_hash: to.block_hash, updated_at: nowMs })
    .where('network_id', '=', networkId)
    .where('block_number', '=', from.block_number)
    .where('block_hash', '=', from.block_hash)
    .executeTakeFirst();
  return Number(r.numUpdatedRows) === 1;
}

export async function saveBlock(db: Executor, networkId: number, b: { number: number; hash: string; parentHash: string }, nowMs: number): Promise<void> {
  await db
    .insertInto('chain_blocks')
    .values({ network_id: networkId, block_number: b.number, block_hash: b.hash, parent_hash: b.parentHash, created_at: nowMs })
    .onConflict((oc) => oc.columns(['network_id', 'block_number']).doUpdateSet({ block_hash: b.hash, parent_hash: b.parentHash, created_at: nowMs }))
    .execute();
}

/** Keeps the newest `keep` block hashes of a network. */
export async function pruneBlocks(db: Executor, networkId: number, newest: number, keep: number): Promise<void> {
  await db.deleteFrom('chain_blocks').where('network_id', '=', networkId).where('block_number', '<=', newest - keep).execute();
}

export async function deleteBlocksAbove(db: Executor, networkId: number, block: number): Promise<void> {
  await db.deleteFrom('chain_blocks').where('network_id', '=', networkId).where('block_number', '>', block).execute();
}

/** Stored block hashes at or below `maxBlock`, newest first. */
export function listBlocks(db: Executor, networkId: number, maxBlock: number) {
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

export interface WatchedWallet {
  id: number;
  user_id: number;
  network_id: number;
  address: string;
}

export interface WatchedToken {
  id: number;
  wallet_id: number;
  symbol: string;
  decimals: number;
  contract: string;
  is_native: number;
}

/** The wallets of a network and their active tokens (the watcher matches blocks against them). */
export async function watchedOnNetwork(db: Executor, networkId: number): Promise<{ wallets: WatchedWallet[]; tokens: WatchedToken[] }> {
  const wallets = await db.selectFrom('wallets').select(['id', 'user_id', 'network_id', 'address']).where('network_id', '=', networkId).execute();
  const tokens = await db
    .selectFrom('wallet_tokens as wt')
    .innerJoin('wallets as w', 'w.id', 'wt.wallet_id')
    .select(['wt.id', 'wt.wallet_id', 'wt.symbol', 'wt.decimals', 'wt.contract', 'wt.is_native'])
    .where('w.network_id', '=', networkId)
    .where('wt.is_active', '=', 1)
    .execute();
  return { wallets, tokens };
}
