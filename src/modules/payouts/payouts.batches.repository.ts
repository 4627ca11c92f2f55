/**
 * The rows of batched payouts (payouts.batches.ts, migration 034): each item's own `transfer`
 * row, which follows its batch's row, and the wallet's approval of the Sweeper.
 */
import type { Hex } from 'viem';
import type { Executor } from '../../db/index.js';
import type { WalletTokenRow } from '../../db/types.js';
import { findNativeToken } from '../tokens/tokens.repository.js';
import type { WalletView } from '../wallets/wallets.repository.js';
import { insertTransaction, records, toRecord, type TxRecord } from '../transactions/transactions.repository.js';

/** The wallet's native token (a batch and an approval are contract calls paid in it). */
export async function nativeToken(db: Executor, walletId: number): Promise<WalletTokenRow> {
  const native = await findNativeToken(db, walletId);
  if (!native) throw new Error(`wallet ${walletId} has no native token`);
  return native;
}

/**
 * An item's row, in the batch's recording transaction (the wallet's lock held): a pending
 * `transfer` under the batch's hash, with no nonce, nothing signed and no fee of its own.
 */
export async function insertItemRow(
  trx: Executor,
  i: {
    wallet: WalletView;
    token: WalletTokenRow;
    from: string;
    batch: TxRecord;
    index: number;
    payoutId: number;
    item: { address: string; amount: bigint; reference: string | null };
  },
  nowMs: number,
): Promise<number> {
  const id = await insertTransaction(
    trx,
    {
      wallet_id: i.wallet.id,
      token_id: i.token.id,
      symbol: i.token.symbol,
      type: 'transfer',
      status: 'pending',
      amount: i.item.amount,
      fee_reserved: 0n,
      from_address: i.from,
      to_address: i.item.address,
      tx_hash: i.batch.tx_hash,
      log_index: -1,
      block_number: null,
      block_hash: null,
      block_timestamp: null,
      nonce: null,
      gas: null,
      gas_price: null,
      gas_used: null,
      cumulative_gas_used: null,
      receipt_status: null,
      confirmed_at: null,
      raw_tx: null,
      payout_id: i.payoutId,
      reference: i.item.reference,
      batch_tx_id: i.batch.id,
      batch_index: i.index,
    },
    nowMs,
  );
  return id!;
}

/**
 * Batches whose items have to follow them: an item still pending while its batch is settled,
 * or under another hash than the batch's current one, or failed unmined while its batch is not
 * failed (bounded, oldest first).
 */
export async function listBatchesToFollow(db: Executor, limit: number): Promise<number[]> {
  const rows = await db
    .selectFrom('transactions as i')
    .innerJoin('transactions as b', 'b.id', 'i.batch_tx_id')
    .select('b.id')
    .distinct()
    .where('i.batch_tx_id', 'is not', null)
    .where((eb) =>
      eb.or([
        eb.and([
          eb('i.status', '=', 'pending'),
          eb.or([eb('b.status', 'in', ['confirmed', 'failed']), eb('b.tx_hash', '!=', eb.ref('i.tx_hash'))]),
        ]),
        // Failed unmined with their batch, which the chain has shown since (a refused first send
        // that another endpoint had): they come back with it.
        eb.and([eb('i.status', '=', 'failed'), eb('i.block_number', 'is', null), eb('b.status', '!=', 'failed')]),
      ]),
    )
    .orderBy('b.id', 'asc')
    .limit(limit)
    .execute();
  return rows.map((r) => Number(r.id));
}

/** The batch's items (those of `status`), in batch order. */
export async function listItems(db: Executor, batchId: number, status: TxRecord['status']): Promise<TxRecord[]> {
  const rows = await records(db).where('tx.batch_tx_id', '=', batchId).where('tx.status', '=', status).orderBy('tx.batch_index').execute();
  return rows.map(toRecord);
}

/** These item rows, in batch order. */
export async function listItemsById(db: Executor, ids: number[]): Promise<TxRecord[]> {
  if (ids.length === 0) return [];
  const rows = await records(db).where('tx.id', 'in', ids).orderBy('tx.batch_index').execute();
  return rows.map(toRecord);
}

/**
 * The batch's items failed unmined with it (its first send refused, or its nonce taken) while
 * the batch itself is not failed any more: a node that had it mined it after all. Pending again,
 * to follow it; how many.
 */
export async function reviveItems(db: Executor, batchId: number, nowMs: number): Promise<number> {
  const r = await db
    .updateTable('transactions')
    .set({ status: 'pending', failed_at: null, error: null, failure_reason: null, updated_at: nowMs })
    .where('batch_tx_id', '=', batchId)
    .where('status', '=', 'failed')
    .where('block_number', 'is', null)
    .executeTakeFirst();
  return Number(r.numUpdatedRows);
}

/** The batch's pending items under its new hash (a speed-up of the batch); how many moved. */
export async function setItemsHash(db: Executor, batchId: number, hash: string, nowMs: number): Promise<number> {
  const r = await db
    .updateTable('transactions')
    .set({ tx_hash: hash, updated_at: nowMs })
    .where('batch_tx_id', '=', batchId)
    .where('status', '=', 'pending')
    .where('tx_hash', '!=', hash)
    .executeTakeFirst();
  return Number(r.numUpdatedRows);
}

/**
 * Pending items settled with their batch: its block fields, and confirmed, or failed with
 * `failure` (the batch's own failure, or `refused`). A refused item is `receipt_status` 0: it
 * moved nothing. Rows no longer pending are left as they are.
 */
export async function settleItems(
  db: Executor,
  ids: number[],
  batch: TxRecord,
  failure: { reason: string; failure: TxRecord['failure_reason'] } | null,
  nowMs: number,
): Promise<void> {
  if (ids.length === 0) return;
  await db
    .updateTable('transactions')
    .set({
      tx_hash: batch.tx_hash,
      block_number: batch.block_number,
      block_hash: batch.block_hash,
      block_timestamp: batch.block_timestamp,
      receipt_status: batch.block_number === null ? null : failure ? 0 : 1,
      ...(failure
        ? { status: 'failed', failed_at: nowMs, error: failure.reason.slice(0, 300), failure_reason: failure.failure }
        : { status: 'confirmed', confirmed_at: nowMs }),
      updated_at: nowMs,
    })
    .where('id', 'in', ids)
    .where('status', '=', 'pending')
    .execute();
}

/** The wallet's approval of the Sweeper for a token (`data` the approve call): confirmed, pending, or none. */
export async function approvalState(db: Executor, walletId: number, contract: string, data: Hex): Promise<'confirmed' | 'pending' | null> {
  const rows = await db
    .selectFrom('transactions')
    .select('status')
    .where('wallet_id', '=', walletId)
    .where('type', '=', 'contract')
    .where('to_address', '=', contract)
    .where('data', '=', data)
    .where('status', 'in', ['confirmed', 'pending'])
    .execute();
  if (rows.some((r) => r.status === 'confirmed')) return 'confirmed';
  return rows.length > 0 ? 'pending' : null;
}
