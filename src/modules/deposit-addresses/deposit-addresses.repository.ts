/** deposit_addresses rows, their receipts (transactions.deposit_address_id) and their sweep schedule (the charge row behind each). */
import { sql } from 'kysely';
import type { Executor } from '../../db/index.js';

export interface DepositAddressRow {
  id: number;
  wallet_id: number;
  reference: string;
  label: string | null;
  sub_wallet_id: number;
  charge_id: number;
  created_at: number;
  /** Joined: the address and its kind. */
  address: string;
  deposit_kind: 'keyed' | 'keyless';
}

/** What a deposit address received, confirmed, per token. */
export interface ReceivedTotal {
  token_id: number;
  symbol: string;
  decimals: number;
  amount: bigint;
}

function rows(db: Executor) {
  return db
    .selectFrom('deposit_addresses as d')
    .innerJoin('sub_wallets as s', 's.id', 'd.sub_wallet_id')
    .select(['d.id', 'd.wallet_id', 'd.reference', 'd.label', 'd.sub_wallet_id', 'd.charge_id', 'd.created_at', 's.address', 's.kind']);
}

type Raw = Awaited<ReturnType<ReturnType<typeof rows>['executeTakeFirstOrThrow']>>;

const toRow = (r: Raw): DepositAddressRow => ({
  id: Number(r.id),
  wallet_id: Number(r.wallet_id),
  reference: r.reference,
  label: r.label,
  sub_wallet_id: Number(r.sub_wallet_id),
  charge_id: Number(r.charge_id),
  created_at: Number(r.created_at),
  address: r.address,
  deposit_kind: r.kind === 'keyless' ? 'keyless' : 'keyed',
});

export async function insertDepositAddress(
  db: Executor,
  d: { wallet_id: number; reference: string; label: string | null; sub_wallet_id: number; charge_id: number },
  nowMs: number,
): Promise<number> {
  const r = await db
    .insertInto('deposit_addresses')
    .values({ ...d, created_at: nowMs })
    .returning('id')
    .executeTakeFirstOrThrow();
  return Number(r.id);
}

/** Whether the wallet already has a deposit address under `reference` (caller holds the wallet's lock). */
export async function referenceTaken(db: Executor, walletId: number, reference: string): Promise<boolean> {
  const r = await db
    .selectFrom('deposit_addresses')
    .select('id')
    .where('wallet_id', '=', walletId)
    .where('reference', '=', reference)
    .executeTakeFirst();
  return r !== undefined;
}

export async function findDepositAddress(db: Executor, walletId: number, id: number): Promise<DepositAddressRow | undefined> {
  const r = await rows(db).where('d.wallet_id', '=', walletId).where('d.id', '=', id).executeTakeFirst();
  return r ? toRow(r) : undefined;
}

export async function listDepositAddresses(
  db: Executor,
  walletId: number,
  page: { offset: number; limit: number },
): Promise<DepositAddressRow[]> {
  const r = await rows(db).where('d.wallet_id', '=', walletId).orderBy('d.id', 'desc').limit(page.limit).offset(page.offset).execute();
  return r.map(toRow);
}

export async function countDepositAddresses(db: Executor, walletId: number): Promise<number> {
  const r = await db
    .selectFrom('deposit_addresses')
    .select(db.fn.countAll<number>().as('n'))
    .where('wallet_id', '=', walletId)
    .executeTakeFirstOrThrow();
  return Number(r.n);
}

/**
 * The confirmed receipts of a deposit address, summed per token (in base units, exactly: the
 * amounts are added here, as SQLite holds them as text), in token order.
 */
export async function receivedTotals(db: Executor, depositAddressId: number): Promise<ReceivedTotal[]> {
  const r = await db
    .selectFrom('transactions as x')
    .innerJoin('wallet_tokens as t', 't.id', 'x.token_id')
    .select(['x.token_id', 'x.amount', 't.symbol', 't.decimals'])
    .where('x.deposit_address_id', '=', depositAddressId)
    .where('x.type', '=', 'receipt')
    .where('x.status', '=', 'confirmed')
    .orderBy('x.token_id', 'asc')
    .execute();
  const totals = new Map<number, ReceivedTotal>();
  for (const x of r) {
    const id = Number(x.token_id);
    const t = totals.get(id) ?? { token_id: id, symbol: x.symbol, decimals: Number(x.decimals), amount: 0n };
    t.amount += BigInt(x.amount);
    totals.set(id, t);
  }
  return [...totals.values()];
}

/** A receipt just recorded reached a deposit address: it carries the address and its reference (in the follower's transaction). */
export async function markReceipt(trx: Executor, transactionId: number, depositAddressId: number, reference: string): Promise<void> {
  await trx.updateTable('transactions').set({ deposit_address_id: depositAddressId, reference }).where('id', '=', transactionId).execute();
}

/**
 * The addresses (their charge rows) are due a sweep now, unless due sooner already (in the
 * transaction that recorded their money); `updated_at` moves, as a late payment moves a charge's,
 * so a token that cannot move is looked at again after its wait from this payment on
 * (charges.sweeps.ts `revertWaitMs`).
 */
export async function makeDue(trx: Executor, chargeIds: number[], nowMs: number): Promise<void> {
  if (chargeIds.length === 0) return;
  await trx
    .updateTable('charges')
    .set({
      sweep_due_at: sql<number>`CASE WHEN sweep_due_at IS NULL OR sweep_due_at > ${nowMs} THEN ${nowMs} ELSE sweep_due_at END`,
      updated_at: nowMs,
    })
    .where('id', 'in', chargeIds)
    .execute();
}
