/**
 * The state changes of a transfer held for approval (docs/money-out.md,
 * "Approvals"), one function each. Every change is conditional on the row still awaiting
 * approval, so an approve, a reject and the expiry racing each other change it once: the
 * callers hold the wallet's lock, and a change that finds the row decided does nothing.
 */
import type { Executor } from '../../db/index.js';
import { findRecord, insertTransaction, setNextNonce, type ApprovalFailure, type NewTx, type TxRecord } from './transactions.repository.js';
import { AWAITING } from './transactions.create.repository.js';

/** Records the transfer as awaiting approval: no nonce, no hash, no signed bytes; it reserves its amount and `fee_reserved`. */
export async function insertHeld(
  trx: Executor,
  t: Omit<NewTx, 'status' | 'nonce' | 'raw_tx' | 'tx_hash'>,
  nowMs: number,
): Promise<TxRecord> {
  const id = await insertTransaction(
    trx,
    { ...t, status: AWAITING as NewTx['status'], nonce: null, raw_tx: null, tx_hash: null, broadcast_attempts: 0 },
    nowMs,
  );
  return (await findRecord(trx, id!))!;
}

/** The signed version an approval gives the held row. */
export interface SignedApproval {
  nonce: number;
  txHash: string;
  raw: string;
  gas: bigint;
  gasPrice: bigint;
  txKind: 'legacy' | 'eip1559';
  maxFeePerGas: bigint | null;
  maxPriorityFeePerGas: bigint | null;
  l1Fee: bigint;
  feeReserved: bigint;
}

/**
 * The held row becomes a pending transfer signed at `nonce` (its first send counted, as a
 * create counts it), and the wallet's next nonce moves past it. False when it was no longer
 * awaiting approval (nothing written).
 */
export async function approveHeld(trx: Executor, walletId: number, id: number, s: SignedApproval, nowMs: number): Promise<boolean> {
  const r = await trx
    .updateTable('transactions')
    .set({
      status: 'pending',
      nonce: s.nonce,
      tx_hash: s.txHash,
      raw_tx: s.raw,
      gas: s.gas.toString(),
      gas_price: s.gasPrice.toString(),
      tx_kind: s.txKind,
      max_fee_per_gas: s.maxFeePerGas === null ? null : s.maxFeePerGas.toString(),
      max_priority_fee_per_gas: s.maxPriorityFeePerGas === null ? null : s.maxPriorityFeePerGas.toString(),
      l1_fee: s.l1Fee.toString(),
      fee_reserved: s.feeReserved.toString(),
      broadcast_attempts: 1,
      requested_fees: null,
      updated_at: nowMs,
    })
    .where('id', '=', id)
    .where('status', '=', AWAITING)
    .executeTakeFirst();
  if (Number(r.numUpdatedRows) !== 1) return false;
  await setNextNonce(trx, walletId, s.nonce + 1);
  return true;
}

/** The held row fails unsigned (rejected, or not decided in time), which releases its reservation. False when it was already decided. */
export async function failHeld(trx: Executor, id: number, reason: ApprovalFailure, nowMs: number): Promise<boolean> {
  const error = reason === 'rejected_by_approver' ? 'rejected by the approver' : 'not approved in time';
  const r = await trx
    .updateTable('transactions')
    .set({ status: 'failed', failure_reason: reason, error, failed_at: nowMs, requested_fees: null, updated_at: nowMs })
    .where('id', '=', id)
    .where('status', '=', AWAITING)
    .executeTakeFirst();
  return Number(r.numUpdatedRows) === 1;
}

/** Held rows created before `createdBeforeMs` (their approval time is over), oldest first, at most `limit`. */
export async function listExpiredHeld(
  db: Executor,
  createdBeforeMs: number,
  limit: number,
): Promise<Array<{ id: number; wallet_id: number }>> {
  return db
    .selectFrom('transactions')
    .select(['id', 'wallet_id'])
    .where('status', '=', AWAITING)
    .where('created_at', '<', createdBeforeMs)
    .orderBy('id', 'asc')
    .limit(limit)
    .execute();
}

/** The fee choice a held row was created with (JSON), or null. */
export async function findRequestedFees(db: Executor, id: number): Promise<string | null> {
  const row = await db.selectFrom('transactions').select('requested_fees').where('id', '=', id).executeTakeFirst();
  return row?.requested_fees ?? null;
}
