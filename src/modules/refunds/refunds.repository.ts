/**
 * refunds (migration 020), read with the transfer that pays each one (`transactions.refund_id`):
 * a refund's status is its transfer's, never stored twice.
 */
import { paymentTokenId } from '../charges/charges.payments.repository.js';
import type { Executor } from '../../db/index.js';

export interface RefundRow {
  id: number;
  uuid: string;
  charge_id: number;
  wallet_id: number;
  token_id: number;
  amount: bigint;
  address: string | null;
  reason: string | null;
  claim_expires_at: number | null;
  created_at: number;
  /** Joined: the token, and the transfer paying it (null while claimable or expired). */
  symbol: string;
  decimals: number;
  transaction_id: number | null;
  tx_hash: string | null;
  tx_status: string | null;
  /** Joined: the wallet's network, named on the claim page with its explorer. */
  network_name: string;
  block_explorer: string;
}

export type NewRefund = Pick<
  RefundRow,
  'uuid' | 'charge_id' | 'wallet_id' | 'token_id' | 'amount' | 'address' | 'reason' | 'claim_expires_at'
>;

function refunds(db: Executor) {
  return db
    .selectFrom('refunds as r')
    .innerJoin('wallet_tokens as t', 't.id', 'r.token_id')
    .leftJoin('transactions as tx', 'tx.refund_id', 'r.id')
    .innerJoin('wallets as w', 'w.id', 'r.wallet_id')
    .innerJoin('networks as n', 'n.id', 'w.network_id')
    .select([
      'r.id',
      'r.uuid',
      'r.charge_id',
      'r.wallet_id',
      'r.token_id',
      'r.amount',
      'r.address',
      'r.reason',
      'r.claim_expires_at',
      'r.created_at',
      't.symbol',
      't.decimals',
      'tx.id as transaction_id',
      'tx.tx_hash',
      'tx.status as tx_status',
      'n.name as network_name',
      'n.block_explorer',
    ]);
}

type RawRefund = Omit<RefundRow, 'amount'> & { amount: string };

const toRefund = (r: RawRefund): RefundRow => ({
  ...r,
  id: Number(r.id),
  charge_id: Number(r.charge_id),
  wallet_id: Number(r.wallet_id),
  token_id: Number(r.token_id),
  amount: BigInt(r.amount),
  claim_expires_at: r.claim_expires_at === null ? null : Number(r.claim_expires_at),
  created_at: Number(r.created_at),
  transaction_id: r.transaction_id === null ? null : Number(r.transaction_id),
});

/** The refunds of some charges, oldest first. */
export async function listRefunds(db: Executor, chargeIds: number[]): Promise<RefundRow[]> {
  if (chargeIds.length === 0) return [];
  const rows = await refunds(db).where('r.charge_id', 'in', chargeIds).orderBy('r.id', 'asc').execute();
  return rows.map((r) => toRefund(r as RawRefund));
}

export async function findRefund(db: Executor, id: number): Promise<RefundRow | undefined> {
  const r = await refunds(db).where('r.id', '=', id).executeTakeFirst();
  return r ? toRefund(r as RawRefund) : undefined;
}

export async function findRefundByUuid(db: Executor, uuid: string): Promise<RefundRow | undefined> {
  const r = await refunds(db).where('r.uuid', '=', uuid).executeTakeFirst();
  return r ? toRefund(r as RawRefund) : undefined;
}

export async function insertRefund(trx: Executor, r: NewRefund, nowMs: number): Promise<number> {
  const row = await trx
    .insertInto('refunds')
    .values({ ...r, amount: r.amount.toString(), created_at: nowMs, updated_at: nowMs })
    .returning('id')
    .executeTakeFirstOrThrow();
  return Number(row.id);
}

/** A claimable refund gets the payer's address; false when it already has one (nothing written). */
export async function setClaimAddress(trx: Executor, id: number, address: string, nowMs: number): Promise<boolean> {
  const r = await trx
    .updateTable('refunds')
    .set({ address, updated_at: nowMs })
    .where('id', '=', id)
    .where('address', 'is', null)
    .executeTakeFirst();
  return Number(r.numUpdatedRows) === 1;
}

/**
 * The amounts of the charge's confirmed payments that a refund may give back (in its token's base
 * units): not the screened ones (a sender on the SCREENING_FILE list, migration 030). They never
 * count toward `paid`, and refunding them would move a blocked sender's money out, perhaps to an
 * address not on the list; the operator handles them outside the API (docs/money-out.md, "Refunds").
 */
export async function confirmedPaymentAmounts(db: Executor, chargeId: number): Promise<Array<{ token_id: number; amount: bigint }>> {
  const rows = await db
    .selectFrom('charge_payments')
    .select([paymentTokenId.as('token_id'), 'amount'])
    .where('charge_id', '=', chargeId)
    .where('confirmed', '=', 1)
    .where('screened', '=', 0)
    .execute();
  return rows.map((r) => ({ token_id: Number(r.token_id), amount: BigInt(r.amount) }));
}
