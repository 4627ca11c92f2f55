/**
 * payouts and payout_items (migration 021), each item read with its transaction (when it has
 * one): an item's status is its transaction's, never stored twice.
 */
import { sql } from 'kysely';
import { prepare } from '../../db/prepared.js';
import type { Executor } from '../../db/index.js';

export type PayoutState = 'approval' | 'sending' | 'rejected' | 'expired';

export interface PayoutRow {
  id: number;
  wallet_id: number;
  token_id: number;
  total: bigint;
  fee_level: string | null;
  state: PayoutState;
  created_at: number;
  updated_at: number;
  /** The token's `approval_above` its total was over when it was held; null if never held (or held before migration 039). */
  held_limit: bigint | null;
  /** Joined: the token. */
  symbol: string;
  decimals: number;
}

export interface ItemRow {
  id: number;
  payout_id: number;
  seq: number;
  address: string;
  amount: bigint;
  reference: string | null;
  transaction_id: number | null;
  error: string | null;
  refused_at: number | null;
  /** Joined: its transaction's status, hash, failure reason and when it became final. */
  tx_status: string | null;
  tx_hash: string | null;
  failure_reason: string | null;
  final_at: number | null;
}

export interface NewItem {
  address: string;
  amount: bigint;
  reference: string | null;
}

function payouts(db: Executor) {
  return db
    .selectFrom('payouts as p')
    .innerJoin('wallet_tokens as t', 't.id', 'p.token_id')
    .select([
      'p.id',
      'p.wallet_id',
      'p.token_id',
      'p.total',
      'p.fee_level',
      'p.state',
      'p.created_at',
      'p.updated_at',
      'p.held_limit',
      't.symbol',
      't.decimals',
    ]);
}

type RawPayout = Omit<PayoutRow, 'total' | 'state' | 'held_limit'> & { total: string; state: string; held_limit: string | null };
const toPayout = (r: RawPayout): PayoutRow => ({
  ...r,
  id: Number(r.id),
  wallet_id: Number(r.wallet_id),
  token_id: Number(r.token_id),
  total: BigInt(r.total),
  held_limit: r.held_limit === null ? null : BigInt(r.held_limit),
  state: r.state as PayoutState,
  created_at: Number(r.created_at),
  updated_at: Number(r.updated_at),
});

/** `item_fee_reserved`: the maximum fee of one item, reserved for each item until it is sent (`unsentItemReservations`). */
export async function insertPayout(
  trx: Executor,
  p: {
    wallet_id: number;
    token_id: number;
    total: bigint;
    item_fee_reserved: bigint;
    fee_level: string | null;
    state: PayoutState;
    held_limit: bigint | null;
  },
  items: NewItem[],
  nowMs: number,
): Promise<number> {
  const row = await trx
    .insertInto('payouts')
    .values({
      ...p,
      total: p.total.toString(),
      item_fee_reserved: p.item_fee_reserved.toString(),
      held_limit: p.held_limit === null ? null : p.held_limit.toString(),
      created_at: nowMs,
      updated_at: nowMs,
    })
    .returning('id')
    .executeTakeFirstOrThrow();
  const id = Number(row.id);
  // Chunks keep each statement's parameters well under SQLite's limit (8 columns an item).
  for (let i = 0; i < items.length; i += 100) {
    const chunk = items.slice(i, i + 100).map((it, k) => ({
      payout_id: id,
      wallet_id: p.wallet_id,
      seq: i + k,
      address: it.address,
      amount: it.amount.toString(),
      reference: it.reference,
      transaction_id: null,
      error: null,
      refused_at: null,
    }));
    await trx.insertInto('payout_items').values(chunk).execute();
  }
  return id;
}

/** The references among `refs` the wallet's payouts already use. */
export async function takenReferences(trx: Executor, walletId: number, refs: string[]): Promise<Set<string>> {
  if (refs.length === 0) return new Set();
  const rows = await trx
    .selectFrom('payout_items')
    .select('reference')
    .where('wallet_id', '=', walletId)
    .where('reference', 'in', refs)
    .execute();
  return new Set(rows.map((r) => r.reference!));
}

export async function findPayout(db: Executor, walletId: number, id: number): Promise<PayoutRow | undefined> {
  const r = await payouts(db).where('p.id', '=', id).where('p.wallet_id', '=', walletId).executeTakeFirst();
  return r ? toPayout(r as RawPayout) : undefined;
}

export async function findPayoutById(db: Executor, id: number): Promise<PayoutRow | undefined> {
  const r = await payouts(db).where('p.id', '=', id).executeTakeFirst();
  return r ? toPayout(r as RawPayout) : undefined;
}

/** The wallet's payouts, newest first. */
export async function listPayouts(db: Executor, walletId: number, page: { offset: number; limit: number }): Promise<PayoutRow[]> {
  const rows = await payouts(db)
    .where('p.wallet_id', '=', walletId)
    .orderBy('p.id', 'desc')
    .offset(page.offset)
    .limit(page.limit)
    .execute();
  return rows.map((r) => toPayout(r as RawPayout));
}

/** The wallet's payouts with id above `afterId` and `created_at` in [fromMs, toMs), oldest first, at most `limit` (the CSV export's pages). */
export async function listPayoutsAfter(
  db: Executor,
  walletId: number,
  afterId: number,
  range: { fromMs: number; toMs: number },
  limit: number,
): Promise<PayoutRow[]> {
  const rows = await payouts(db)
    .where('p.wallet_id', '=', walletId)
    .where('p.id', '>', afterId)
    .where('p.created_at', '>=', range.fromMs)
    .where('p.created_at', '<', range.toMs)
    .orderBy('p.id', 'asc')
    .limit(limit)
    .execute();
  return rows.map((r) => toPayout(r as RawPayout));
}

export async function countPayouts(db: Executor, walletId: number): Promise<number> {
  const r = await db
    .selectFrom('payouts')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where('wallet_id', '=', walletId)
    .executeTakeFirstOrThrow();
  return Number(r.n);
}

/** The items of some payouts, in order, with their transactions. */
export async function listItems(db: Executor, payoutIds: number[]): Promise<ItemRow[]> {
  if (payoutIds.length === 0) return [];
  const rows = await db
    .selectFrom('payout_items as i')
    .leftJoin('transactions as tx', 'tx.id', 'i.transaction_id')
    .select([
      'i.id',
      'i.payout_id',
      'i.seq',
      'i.address',
      'i.amount',
      'i.reference',
      'i.transaction_id',
      'i.error',
      'i.refused_at',
      'tx.status as tx_status',
      'tx.tx_hash',
      'tx.failure_reason',
      'tx.confirmed_at',
      'tx.failed_at',
    ])
    .where('i.payout_id', 'in', payoutIds)
    .orderBy('i.payout_id', 'asc')
    .orderBy('i.seq', 'asc')
    .execute();
  return rows.map((r) => ({
    id: Number(r.id),
    payout_id: Number(r.payout_id),
    seq: Number(r.seq),
    address: r.address,
    amount: BigInt(r.amount),
    reference: r.reference,
    transaction_id: r.transaction_id === null ? null : Number(r.transaction_id),
    error: r.error,
    refused_at: r.refused_at === null ? null : Number(r.refused_at),
    tx_status: r.tx_status,
    tx_hash: r.tx_hash,
    failure_reason: r.failure_reason,
    final_at: r.tx_status === 'confirmed' ? Number(r.confirmed_at) : r.tx_status === 'failed' ? Number(r.failed_at) : null,
  }));
}

/** The next items of a payout to send, in order (lowest `seq` first, with neither a transaction nor a refusal). */
export async function nextUnsentMany(
  db: Executor,
  payoutId: number,
  limit: number,
): Promise<Array<{ id: number; address: string; amount: bigint; reference: string | null }>> {
  const rows = await db
    .selectFrom('payout_items')
    .select(['id', 'address', 'amount', 'reference'])
    .where('payout_id', '=', payoutId)
    .where('transaction_id', 'is', null)
    .where('error', 'is', null)
    .orderBy('seq', 'asc')
    .limit(limit)
    .execute();
  return rows.map((r) => ({ id: Number(r.id), address: r.address, amount: BigInt(r.amount), reference: r.reference }));
}

/** Under the wallet's lock: the item is still unsent (the guard against sending it twice). */
export async function isUnsent(trx: Executor, itemId: number): Promise<boolean> {
  const r = await trx
    .selectFrom('payout_items')
    .select('id')
    .where('id', '=', itemId)
    .where('transaction_id', 'is', null)
    .where('error', 'is', null)
    .executeTakeFirst();
  return r !== undefined;
}

export async function setItemTransaction(trx: Executor, itemId: number, txId: number): Promise<boolean> {
  const r = await trx
    .updateTable('payout_items')
    .set({ transaction_id: txId })
    .where('id', '=', itemId)
    .where('transaction_id', 'is', null)
    .where('error', 'is', null)
    .executeTakeFirst();
  return Number(r.numUpdatedRows) === 1;
}

/** The id of an unsent item's reservation: the item's id negated. The item's transfer takes it over (CreateOptions.spends). */
export function itemReservationId(itemId: number): number {
  return -itemId;
}

/**
 * What the wallet's payouts still reserve: every item of a payout awaiting approval or being
 * sent that has neither a transaction nor a refusal reserves its amount and the payout's
 * `item_fee_reserved`, as a held transfer reserves its amount and maximum fee, until it is
 * sent (its transaction reserves from then on), refused, or its payout rejected or expired.
 * Shaped as the outgoing transaction rows it is read with (transactions.repository.ts,
 * `outgoingRows`): the id `itemReservationId` (never a transaction's id), no nonce, no block,
 * and the status of a held transfer, which reserves whatever the mined nonce.
 */
export function unsentItemReservations(db: Executor, walletId: number) {
  return db
    .selectFrom('payout_items as i')
    .innerJoin('payouts as p', 'p.id', 'i.payout_id')
    .select([
      sql<number>`0 - i.id`.as('id'),
      'p.token_id',
      'i.amount',
      'p.item_fee_reserved as fee_reserved',
      sql<number | null>`null`.as('nonce'),
      sql<string>`'awaiting_approval'`.as('status'),
      sql<number | null>`null`.as('block_number'),
      sql<number | null>`null`.as('call_token_id'),
      sql<string | null>`null`.as('call_spend'),
    ])
    .where('i.wallet_id', '=', walletId)
    .where('i.transaction_id', 'is', null)
    .where('i.error', 'is', null)
    .where('p.state', 'in', ['approval', 'sending']);
}

/** The item's create was refused (balance, policy): it fails with that reason, the others go on. */
export async function refuseItem(db: Executor, itemId: number, error: string, nowMs: number): Promise<void> {
  await db
    .updateTable('payout_items')
    .set({ error: error.slice(0, 300), refused_at: nowMs })
    .where('id', '=', itemId)
    .where('transaction_id', 'is', null)
    .where('error', 'is', null)
    .execute();
}

/** Payouts whose items may go out and one of which is unsent (bounded, oldest first). */
export async function listSending(db: Executor, limit: number): Promise<number[]> {
  const rows = await sendingPayouts.execute(db, limit);
  return rows.map((r) => Number(r.id));
}

/** Read by the payout worker at every tick: compiled once (src/db/prepared.ts). */
const sendingPayouts = prepare((db: Executor, limit: number) =>
  db
    .selectFrom('payouts as p')
    .select('p.id')
    .where('p.state', '=', 'sending')
    .where((eb) =>
      eb.exists(
        eb
          .selectFrom('payout_items as i')
          .select('i.id')
          .whereRef('i.payout_id', '=', 'p.id')
          .where('i.transaction_id', 'is', null)
          .where('i.error', 'is', null),
      ),
    )
    .orderBy('p.id', 'asc')
    .limit(limit),
);

/** Moves a payout from one decision state to another; false when it was no longer in `from`. */
export async function moveState(trx: Executor, id: number, from: PayoutState, to: PayoutState, nowMs: number): Promise<boolean> {
  const r = await trx
    .updateTable('payouts')
    .set({ state: to, updated_at: nowMs })
    .where('id', '=', id)
    .where('state', '=', from)
    .executeTakeFirst();
  return Number(r.numUpdatedRows) === 1;
}

/** Payouts awaiting approval since before `cutoffMs` (bounded). */
export async function listApprovalExpired(db: Executor, cutoffMs: number, limit: number): Promise<{ id: number; wallet_id: number }[]> {
  const rows = await db
    .selectFrom('payouts')
    .select(['id', 'wallet_id'])
    .where('state', '=', 'approval')
    .where('created_at', '<=', cutoffMs)
    .orderBy('id', 'asc')
    .limit(limit)
    .execute();
  return rows.map((r) => ({ id: Number(r.id), wallet_id: Number(r.wallet_id) }));
}
