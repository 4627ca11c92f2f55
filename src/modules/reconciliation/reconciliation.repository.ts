/**
 * What reconciliation reads and writes: the wallet's records of money moving (transactions,
 * charge payments, charge sweeps) by block, its checkpoints and its adjustments. Amounts leave
 * as bigint; nothing is summed in SQL.
 */
import { sql } from 'kysely';
import { paymentTokenId } from '../charges/charges.payments.repository.js';
import type { Executor } from '../../db/index.js';
import { storedFeePaid } from '../transactions/transactions.repository.js';

/** Rows read per query of a paged scan. */
export const SCAN_PAGE = 5_000;

export interface Checkpoint {
  address: string;
  token_id: number;
  charge_id: number | null;
  block_number: number;
  balance: bigint;
  /** A reorg moved it back to the common ancestor: `balance` is to be read there again. */
  stale: boolean;
}

export interface DepositRow {
  charge_id: number;
  address: string;
  token_id: number;
  status: string;
  sweep_due_at: number | null;
  /** `expires_at` + CHARGE_WATCH_AFTER_S: the chain follower sees no payment in a block stamped later. */
  watch_until: number;
  live: boolean;
  /** The address's kind: a keyless one holds no native coin for fees, so nothing on it is dust. */
  kind: 'keyed' | 'keyless';
}

/** A transactions row of the wallet mined in the range: a receipt in, or its own transfer out. */
export interface TxMovement {
  id: number;
  type: string;
  token_id: number;
  amount: bigint;
  to_address: string;
  block_number: number;
  receipt_status: number | null;
  broadcast_kind: string;
  /** What it cost the wallet (`storedFeePaid`). */
  fee: bigint;
  /** A contract call to a token contract of the wallet: that token, and what it took from the balance (migration 029); else null and 0. */
  call_token_id: number | null;
  call_spend: bigint;
  /** A payout batch (payouts.batches.ts): its items' own rows count the token it paid, each once settled. */
  payout_batch: boolean;
}

export interface PaymentMovement {
  charge_id: number;
  /** The token paid in. */
  token_id: number;
  amount: bigint;
  block_number: number;
}

export interface SweepMovement {
  id: number;
  charge_id: number;
  token_id: number;
  amount: bigint;
  status: string;
  tx_hash: string | null;
  block_number: number | null;
  fee_paid: bigint | null;
  live: boolean;
  /** `batch`: a keyless address's part in a Sweeper call of the main address (its fee is the main address's). */
  kind: 'sweep' | 'batch';
  /** A batch's: the wallet transaction's hash now (a speed-up changes it) and the address's Sweeper. */
  batch_tx_hash: string | null;
  sweeper: string | null;
}

export interface AdjustmentRow {
  address: string;
  token_id: number;
  amount: bigint;
  block_number: number;
  note: string;
  created_at: number;
}

export async function listCheckpoints(db: Executor, walletId: number): Promise<Checkpoint[]> {
  const rows = await db
    .selectFrom('reconciliation_checkpoints')
    .select(['address', 'token_id', 'charge_id', 'block_number', 'balance', 'stale'])
    .where('wallet_id', '=', walletId)
    .execute();
  return rows.map((r) => ({
    ...r,
    stale: Number(r.stale) === 1,
    token_id: Number(r.token_id),
    charge_id: r.charge_id === null ? null : Number(r.charge_id),
    block_number: Number(r.block_number),
    balance: BigInt(r.balance),
  }));
}

/**
 * The wallet's charges whose deposit address is compared: every one (or only `chargeId`). A
 * settled charge's address is read on every answer however long ago it was last seen empty:
 * money sent there after its watch ended is seen by no one else (docs/reconciliation.md).
 */
export async function listDeposits(db: Executor, walletId: number, chargeId?: number): Promise<DepositRow[]> {
  let q = db
    .selectFrom('charges as c')
    .innerJoin('sub_wallets as s', 's.id', 'c.sub_wallet_id')
    .select(['c.id as charge_id', 's.address', 's.kind', 'c.token_id', 'c.status', 'c.sweep_due_at', 'c.watch_until'])
    .select((eb) =>
      eb
        .exists(eb.selectFrom('charge_sweeps as w').select('w.id').whereRef('w.charge_id', '=', 'c.id').where('w.live_key', 'is not', null))
        .as('live'),
    )
    .where('c.wallet_id', '=', walletId);
  if (chargeId !== undefined) q = q.where('c.id', '=', chargeId);
  const rows = await q.orderBy('c.id', 'asc').execute();
  return rows.map((r) => ({
    charge_id: Number(r.charge_id),
    address: r.address,
    token_id: Number(r.token_id),
    status: r.status,
    sweep_due_at: r.sweep_due_at === null ? null : Number(r.sweep_due_at),
    watch_until: Number(r.watch_until),
    live: Boolean(Number(r.live)),
    kind: r.kind === 'keyless' ? 'keyless' : 'keyed',
  }));
}

/** One page (by id, after `afterId`) of the wallet's transactions rows mined in (fromBlock, toBlock]. */
export async function listTxMovements(
  db: Executor,
  walletId: number,
  fromBlock: number,
  toBlock: number,
  afterId: number,
): Promise<TxMovement[]> {
  const rows = await db
    .selectFrom('transactions')
    .select([
      'id',
      'type',
      'token_id',
      'amount',
      'to_address',
      'block_number',
      'receipt_status',
      'broadcast_kind',
      'fee_paid',
      'gas_used',
      'gas_price',
      'call_token_id',
      'call_spend',
      'payout_id',
    ])
    .where('wallet_id', '=', walletId)
    .where('block_number', '>', fromBlock)
    .where('block_number', '<=', toBlock)
    .where('status', '<>', 'orphaned')
    .where('id', '>', afterId)
    .orderBy('id', 'asc')
    .limit(SCAN_PAGE)
    .execute();
  return rows.map((r) => ({
    id: r.id,
    type: r.type,
    token_id: Number(r.token_id),
    amount: BigInt(r.amount),
    to_address: r.to_address,
    block_number: Number(r.block_number),
    receipt_status: r.receipt_status === null ? null : Number(r.receipt_status),
    broadcast_kind: r.broadcast_kind,
    fee: BigInt(storedFeePaid(r)),
    call_token_id: r.call_token_id === null ? null : Number(r.call_token_id),
    call_spend: BigInt(r.call_spend ?? '0'),
    payout_batch: r.type === 'contract' && r.payout_id !== null,
  }));
}

/** The payments to these charges' addresses in (fromBlock, toBlock]. */
export async function listPaymentMovements(
  db: Executor,
  chargeIds: number[],
  fromBlock: number,
  toBlock: number,
): Promise<PaymentMovement[]> {
  if (chargeIds.length === 0) return [];
  const rows = await db
    .selectFrom('charge_payments')
    .select(['charge_id', paymentTokenId.as('token_id'), 'amount', 'block_number'])
    .where('charge_id', 'in', chargeIds)
    .where('block_number', '>', fromBlock)
    .where('block_number', '<=', toBlock)
    .execute();
  return rows.map((r) => ({
    charge_id: Number(r.charge_id),
    token_id: Number(r.token_id),
    amount: BigInt(r.amount),
    block_number: Number(r.block_number),
  }));
}

/** These charges' sweeps (not the gas top-ups) that may have been mined: in flight, or final with a block in (fromBlock, toBlock]. */
export async function listSweepMovements(db: Executor, chargeIds: number[], fromBlock: number, toBlock: number): Promise<SweepMovement[]> {
  if (chargeIds.length === 0) return [];
  const rows = await db
    .selectFrom('charge_sweeps as w')
    .innerJoin('charges as c', 'c.id', 'w.charge_id')
    .innerJoin('sub_wallets as s', 's.id', 'c.sub_wallet_id')
    .leftJoin('transactions as x', 'x.id', 'w.transaction_id')
    .select([
      'w.id',
      'w.charge_id',
      'w.token_id',
      'w.amount',
      'w.status',
      'w.tx_hash',
      'w.block_number',
      'w.fee_paid',
      'w.live_key',
      'w.kind',
    ])
    .select(['x.tx_hash as batch_tx_hash', 's.sweeper'])
    .where('w.charge_id', 'in', chargeIds)
    .where('w.kind', 'in', ['sweep', 'batch'])
    .where((eb) =>
      eb.or([eb('w.live_key', 'is not', null), eb.and([eb('w.block_number', '>', fromBlock), eb('w.block_number', '<=', toBlock)])]),
    )
    .orderBy('w.id', 'asc')
    .execute();
  return rows.map((r) => ({
    kind: r.kind === 'batch' ? ('batch' as const) : ('sweep' as const),
    batch_tx_hash: r.kind === 'batch' ? r.batch_tx_hash : null,
    sweeper: r.sweeper,
    id: r.id,
    charge_id: Number(r.charge_id),
    token_id: Number(r.token_id),
    amount: BigInt(r.amount),
    status: r.status,
    tx_hash: r.tx_hash,
    block_number: r.block_number === null ? null : Number(r.block_number),
    fee_paid: r.fee_paid === null ? null : BigInt(r.fee_paid),
    live: r.live_key !== null,
  }));
}

export interface CheckpointWrite {
  address: string;
  token_id: number;
  charge_id: number | null;
  /** Moves the checkpoint here (forward only), or only records the check when undefined. */
  move?: { block_number: number; balance: bigint };
  unreconciled: boolean;
  checked_block: number;
  checked_balance: bigint;
  /** Written only while the stored checkpoint is at or below this block (an accept that moved it past is not undone). */
  upTo: number;
}

/**
 * Inside the chain follower's rollback: the network's checkpoints above the common ancestor go back
 * to it, `stale` (their balance is the old chain's; the next answer reads it there again).
 */
export async function rollBackCheckpoints(trx: Executor, networkId: number, ancestor: number, nowMs: number): Promise<number> {
  const r = await trx
    .updateTable('reconciliation_checkpoints')
    .set({ block_number: ancestor, stale: 1, updated_at: nowMs })
    .where('block_number', '>', ancestor)
    .where('wallet_id', 'in', (eb) => eb.selectFrom('wallets').select('id').where('network_id', '=', networkId))
    .executeTakeFirst();
  return Number(r.numUpdatedRows);
}

/** Writes one checkpoint's state; a move never goes back to a lower block than the stored one (only a reorg's rollback does). */
export async function writeCheckpoint(db: Executor, walletId: number, w: CheckpointWrite, nowMs: number): Promise<void> {
  const check = {
    unreconciled: w.unreconciled ? 1 : 0,
    checked_block: w.checked_block,
    checked_balance: w.checked_balance.toString(),
    updated_at: nowMs,
  };
  const start = w.move ?? { block_number: 0, balance: 0n };
  await db
    .insertInto('reconciliation_checkpoints')
    .values({
      wallet_id: walletId,
      address: w.address,
      token_id: w.token_id,
      charge_id: w.charge_id,
      block_number: start.block_number,
      balance: start.balance.toString(),
      ...check,
      created_at: nowMs,
    })
    .onConflict((oc) =>
      oc
        .columns(['wallet_id', 'address', 'token_id'])
        .doUpdateSet({
          ...check,
          ...(w.move
            ? {
                block_number: sql<number>`CASE WHEN reconciliation_checkpoints.block_number < ${w.move.block_number} THEN ${w.move.block_number} ELSE reconciliation_checkpoints.block_number END`,
                balance: sql<string>`CASE WHEN reconciliation_checkpoints.block_number < ${w.move.block_number} OR (reconciliation_checkpoints.stale = 1 AND reconciliation_checkpoints.block_number = ${w.move.block_number}) THEN ${w.move.balance.toString()} ELSE reconciliation_checkpoints.balance END`,
                stale: sql<number>`CASE WHEN reconciliation_checkpoints.block_number <= ${w.move.block_number} THEN 0 ELSE reconciliation_checkpoints.stale END`,
              }
            : {}),
        })
        .where('reconciliation_checkpoints.block_number', '<=', w.upTo),
    )
    .execute();
}

/** The wallet's checkpoints flagged with a difference (few): those no longer compared are cleared by the caller. */
export async function listUnreconciled(db: Executor, walletId: number): Promise<Array<{ id: number; address: string; token_id: number }>> {
  const rows = await db
    .selectFrom('reconciliation_checkpoints')
    .select(['id', 'address', 'token_id'])
    .where('wallet_id', '=', walletId)
    .where('unreconciled', '=', 1)
    .execute();
  return rows.map((r) => ({ id: r.id, address: r.address, token_id: Number(r.token_id) }));
}

export async function clearUnreconciled(db: Executor, ids: number[], nowMs: number): Promise<void> {
  if (ids.length === 0) return;
  await db.updateTable('reconciliation_checkpoints').set({ unreconciled: 0, updated_at: nowMs }).where('id', 'in', ids).execute();
}

/** A checkpoint as of now (inside the accept's transaction, under the wallet's lock). */
export async function findCheckpointBlock(db: Executor, walletId: number, address: string, tokenId: number): Promise<number> {
  const r = await db
    .selectFrom('reconciliation_checkpoints')
    .select('block_number')
    .where('wallet_id', '=', walletId)
    .where('address', '=', address)
    .where('token_id', '=', tokenId)
    .executeTakeFirst();
  return r ? Number(r.block_number) : 0;
}

/** A checkpoint of a token added to the wallet (or added again): counted from here on. */
export async function resetCheckpoint(
  db: Executor,
  c: { wallet_id: number; address: string; token_id: number; block_number: number; balance: bigint },
  nowMs: number,
): Promise<void> {
  const values = {
    block_number: c.block_number,
    balance: c.balance.toString(),
    unreconciled: 0,
    checked_block: c.block_number,
    checked_balance: c.balance.toString(),
    updated_at: nowMs,
  };
  await db
    .insertInto('reconciliation_checkpoints')
    .values({ wallet_id: c.wallet_id, address: c.address, token_id: c.token_id, charge_id: null, ...values, created_at: nowMs })
    .onConflict((oc) => oc.columns(['wallet_id', 'address', 'token_id']).doUpdateSet(values))
    .execute();
}

export async function insertAdjustment(
  db: Executor,
  a: { wallet_id: number; address: string; token_id: number; amount: bigint; block_number: number; note: string },
  nowMs: number,
): Promise<void> {
  await db
    .insertInto('reconciliation_adjustments')
    .values({ ...a, amount: a.amount.toString(), created_at: nowMs })
    .execute();
}

/** The wallet's adjustments, newest first (at most `limit`). */
export async function listAdjustments(db: Executor, walletId: number, limit: number): Promise<AdjustmentRow[]> {
  const rows = await db
    .selectFrom('reconciliation_adjustments')
    .select(['address', 'token_id', 'amount', 'block_number', 'note', 'created_at'])
    .where('wallet_id', '=', walletId)
    .orderBy('id', 'desc')
    .limit(limit)
    .execute();
  return rows.map((r) => ({
    ...r,
    token_id: Number(r.token_id),
    amount: BigInt(r.amount),
    block_number: Number(r.block_number),
    created_at: Number(r.created_at),
  }));
}

/** Addresses whose last reconciliation showed a difference, over every wallet (the `/metrics` gauge). */
export async function countUnreconciledAddresses(db: Executor): Promise<number> {
  const r = await db
    .selectFrom((eb) =>
      eb
        .selectFrom('reconciliation_checkpoints')
        .select(['wallet_id', 'address'])
        .where('unreconciled', '=', 1)
        .groupBy(['wallet_id', 'address'])
        .as('u'),
    )
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .executeTakeFirstOrThrow();
  return Number(r.n);
}

/** Every wallet id, ascending (the CLI's and housekeeping's run over all of them). */
export async function listWalletIds(db: Executor): Promise<number[]> {
  const rows = await db.selectFrom('wallets').select('id').orderBy('id', 'asc').execute();
  return rows.map((r) => r.id);
}

/** Creates the daily run's lease, due at `dueMs`, unless it exists; true when it was created now. */
export async function scheduleFirstRun(db: Executor, name: string, dueMs: number): Promise<boolean> {
  const r = await db
    .insertInto('leases')
    .values({ name, holder: 'scheduled', expires_at: dueMs })
    .onConflict((oc) => oc.column('name').doNothing())
    .returning('name')
    .executeTakeFirst();
  return r !== undefined;
}
