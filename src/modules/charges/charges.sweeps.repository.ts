/** charge_sweeps and the sweep schedule on charges (`sweep_due_at`). */
import type { Executor } from '../../db/index.js';

/** `sweep`: a keyed address's own transaction; `gas`: a top-up for one; `batch`: a keyless address's part in a Sweeper call of the main address. */
export type SweepKind = 'sweep' | 'gas' | 'batch';

export interface SweepRow {
  id: number;
  charge_id: number;
  kind: SweepKind;
  token_id: number;
  amount: bigint;
  status: string;
  tx_hash: string | null;
  raw_tx: string | null;
  /** The deposit address's nonce the sweep was signed with (null for a gas top-up). */
  nonce: number | null;
  transaction_id: number | null;
  /** Set while in flight (`liveKey`; `replacedKey` once a replacement may be sent at its nonce). */
  live_key: string | null;
  /** Why a failed row failed. */
  error: string | null;
  created_at: number;
  /** Joined: the token and the charge's wallet. */
  symbol: string;
  decimals: number;
  wallet_id: number;
}

export interface NewSweep {
  charge_id: number;
  kind: SweepKind;
  token_id: number;
  amount: bigint;
  tx_hash: string;
  raw_tx: string | null;
  nonce: number | null;
  transaction_id: number | null;
}

/** One row of a kind in flight per charge: the key of the unique `live_key`. */
export const liveKey = (chargeId: number, kind: SweepKind) => `${chargeId}:${kind}`;

/**
 * A row a reorg put back in flight while another row of its kind already was (`reopenMinedAbove`):
 * its own key, so both are followed; no new row of the kind is claimed while either is in flight.
 */
const reopenedKey = (chargeId: number, kind: SweepKind, id: number) => `${liveKey(chargeId, kind)}:${id}`;

function sweeps(db: Executor) {
  return db
    .selectFrom('charge_sweeps as w')
    .innerJoin('wallet_tokens as t', 't.id', 'w.token_id')
    .select([
      'w.id',
      'w.charge_id',
      'w.kind',
      'w.token_id',
      'w.amount',
      'w.status',
      'w.tx_hash',
      'w.raw_tx',
      'w.nonce',
      'w.transaction_id',
      'w.live_key',
      'w.error',
      'w.created_at',
      't.symbol',
      't.decimals',
      't.wallet_id',
    ]);
}

type RawSweep = Omit<SweepRow, 'amount' | 'kind'> & { amount: string; kind: string };
const toSweep = (r: RawSweep): SweepRow => ({
  ...r,
  kind: r.kind as SweepKind,
  amount: BigInt(r.amount),
  nonce: r.nonce === null ? null : Number(r.nonce),
  created_at: Number(r.created_at),
});

/** The sweeps, keyed and batched (not the gas top-ups), of some charges, oldest first. */
export async function listSweeps(db: Executor, chargeIds: number[]): Promise<SweepRow[]> {
  if (chargeIds.length === 0) return [];
  const rows = await sweeps(db).where('w.charge_id', 'in', chargeIds).where('w.kind', '!=', 'gas').orderBy('w.id', 'asc').execute();
  return rows.map(toSweep);
}

/** Rows in flight (bounded, oldest first). */
export async function listLive(db: Executor, limit: number): Promise<SweepRow[]> {
  const rows = await sweeps(db).where('w.live_key', 'is not', null).orderBy('w.id', 'asc').limit(limit).execute();
  return rows.map(toSweep);
}

/**
 * A sweep in flight whose re-send was refused (`replace`): still followed until the chain shows
 * its nonce used, but it no longer holds the charge: a replacement may be signed at its nonce.
 */
const REPLACED = ':replaced:';
const replacedKey = (chargeId: number, id: number) => `${liveKey(chargeId, 'sweep')}${REPLACED}${id}`;
export const isReplaced = (row: Pick<SweepRow, 'live_key'>) => row.live_key?.includes(REPLACED) === true;

/** A row in flight that holds the charge: no new row of its kind is claimed and no look made while it is. */
export async function hasLive(db: Executor, chargeId: number): Promise<boolean> {
  const r = await db
    .selectFrom('charge_sweeps')
    .select('id')
    .where('charge_id', '=', chargeId)
    .where('live_key', 'is not', null)
    .where('live_key', 'not like', `%${REPLACED}%`)
    .executeTakeFirst();
  return r !== undefined;
}

/**
 * The sweep in flight refused again lets go of the charge (`replacedKey`), still followed: the
 * node's refusal of its re-send says nothing of the nodes its first send reached, which may
 * still mine it. False when it was no longer in flight.
 */
export async function replace(db: Executor, row: Pick<SweepRow, 'id' | 'charge_id'>, nowMs: number): Promise<boolean> {
  const r = await db
    .updateTable('charge_sweeps')
    .set({ live_key: replacedKey(row.charge_id, row.id), updated_at: nowMs })
    .where('id', '=', row.id)
    .where('live_key', 'is not', null)
    .executeTakeFirst();
  return Number(r.numUpdatedRows) === 1;
}

/**
 * The replaced sweeps in flight of the charge at the lowest such nonce, whose nonce its next sweep
 * takes (their signed bytes, to price that one above each); undefined with none.
 */
export async function lowestReplaced(db: Executor, chargeId: number): Promise<{ nonce: number; raw: string[] } | undefined> {
  const rows = await db
    .selectFrom('charge_sweeps')
    .select(['nonce', 'raw_tx'])
    .where('charge_id', '=', chargeId)
    .where('kind', '=', 'sweep')
    .where('live_key', 'like', `%${REPLACED}%`)
    .where('nonce', 'is not', null)
    .orderBy('nonce', 'asc')
    .execute();
  if (rows.length === 0) return undefined;
  const nonce = Number(rows[0]!.nonce);
  return { nonce, raw: rows.filter((r) => Number(r.nonce) === nonce && r.raw_tx !== null).map((r) => r.raw_tx!) };
}

/**
 * A sweep of the charge marked `failed` under `txHash`, which the chain shows mined (another row
 * was dropped for its nonce), put back in flight to be confirmed by its receipt. True when one was.
 */
export async function reviveMined(trx: Executor, chargeId: number, txHash: string, nowMs: number): Promise<boolean> {
  const failed = await trx
    .selectFrom('charge_sweeps')
    .select('id')
    .where('charge_id', '=', chargeId)
    .where('kind', '=', 'sweep')
    .where('status', '=', 'failed')
    .where('live_key', 'is', null)
    .where((eb) => eb(eb.fn('lower', ['tx_hash']), '=', txHash.toLowerCase()))
    .orderBy('id', 'desc')
    .executeTakeFirst();
  if (!failed) return false;
  const held = await trx.selectFrom('charge_sweeps').select('id').where('live_key', '=', liveKey(chargeId, 'sweep')).executeTakeFirst();
  await trx
    .updateTable('charge_sweeps')
    .set({
      status: 'pending',
      live_key: held ? reopenedKey(chargeId, 'sweep', failed.id) : liveKey(chargeId, 'sweep'),
      block_number: null,
      error: null,
      fee_paid: null,
      updated_at: nowMs,
    })
    .where('id', '=', failed.id)
    .execute();
  return true;
}

/** Whether a sweep of the charge is in flight with a nonce in [from, to), one that is sent again (not replaced). */
export async function hasLiveNonceIn(db: Executor, chargeId: number, from: number, to: number): Promise<boolean> {
  const r = await db
    .selectFrom('charge_sweeps')
    .select('id')
    .where('charge_id', '=', chargeId)
    .where('kind', '=', 'sweep')
    .where('live_key', 'is not', null)
    .where('live_key', 'not like', `%${REPLACED}%`)
    .where('nonce', '>=', from)
    .where('nonce', '<', to)
    .executeTakeFirst();
  return r !== undefined;
}

/**
 * Inserts a row in flight unless one of its kind already is for the charge (null then). The
 * unique `live_key` backs the check: two processes never both hold one.
 *
 * A sweep signed to the very bytes of one that failed (its first send refused, then the same
 * nonce, amount and fees again: signatures are deterministic) is that transaction: the failed row
 * is put back in flight rather than a second row made, so no row stays `failed` under a hash the
 * chain then mines (the newest such row, so two processes pick the same one).
 */
export async function claimLive(trx: Executor, s: NewSweep, nowMs: number): Promise<number | null> {
  const key = liveKey(s.charge_id, s.kind);
  const taken = await trx
    .selectFrom('charge_sweeps')
    .select('id')
    .where('charge_id', '=', s.charge_id)
    .where('kind', '=', s.kind)
    .where('live_key', 'is not', null)
    .where('live_key', 'not like', `%${REPLACED}%`)
    .executeTakeFirst();
  if (taken) return null;
  const sameFailed = trx
    .selectFrom('charge_sweeps')
    .select((eb) => eb.fn.max('id').as('id'))
    .where('charge_id', '=', s.charge_id)
    .where('kind', '=', s.kind)
    .where('tx_hash', '=', s.tx_hash)
    .where('status', '=', 'failed');
  const revived = await trx
    .updateTable('charge_sweeps')
    .set({ status: 'pending', live_key: key, block_number: null, error: null, fee_paid: null, updated_at: nowMs })
    .where('id', '=', sameFailed)
    .where('status', '=', 'failed')
    .returning('id')
    .executeTakeFirst();
  if (revived) return revived.id;
  const r = await trx
    .insertInto('charge_sweeps')
    .values(liveRow(s, key, nowMs))
    .onConflict((oc) => oc.column('live_key').doNothing())
    .returning('id')
    .executeTakeFirst();
  return r?.id ?? null;
}

/** A new row in flight under `key`. */
const liveRow = (s: NewSweep, key: string, nowMs: number) => ({
  ...s,
  amount: s.amount.toString(),
  status: 'pending',
  live_key: key,
  block_number: null,
  error: null,
  created_at: nowMs,
  updated_at: nowMs,
});

/** A keyless address's row of a batch in flight: one per charge and token, so several of a charge are live together. */
const batchKey = (chargeId: number, tokenId: number) => `${liveKey(chargeId, 'batch')}:t${tokenId}`;

/**
 * Claims a batch's rows (kind `batch`, one per charge and token it moves, all of one wallet
 * transaction) in flight, inside the transaction that records that wallet transaction: false,
 * and nothing written, when any of the charges already has a row in flight (another process
 * swept it first, or its own sweep is not final); the caller then rolls the whole batch back.
 */
export async function claimBatch(trx: Executor, rows: NewSweep[], nowMs: number): Promise<boolean> {
  const charges = [...new Set(rows.map((r) => r.charge_id))];
  const taken = await trx
    .selectFrom('charge_sweeps')
    .select('id')
    .where('charge_id', 'in', charges)
    .where('live_key', 'is not', null)
    .where('live_key', 'not like', `%${REPLACED}%`)
    .executeTakeFirst();
  if (taken) return false;
  const inserted = await trx
    .insertInto('charge_sweeps')
    .values(rows.map((s) => liveRow(s, batchKey(s.charge_id, s.token_id), nowMs)))
    .onConflict((oc) => oc.column('live_key').doNothing())
    .returning('id')
    .execute();
  return inserted.length === rows.length;
}

/**
 * A row in flight becomes final (`confirmed` or `failed`); false when it already was. A sweep's
 * signed bytes (`raw_tx`) are kept: a reorg deeper than the confirmations may remove its block
 * and the node drop it, and then it is sent again exactly as signed (`reopenMinedAbove`).
 */
export async function finishLive(
  db: Executor,
  id: number,
  f: {
    status: 'confirmed' | 'failed';
    tx_hash?: string | null;
    block_number?: number | null;
    error?: string | null;
    fee_paid?: bigint;
    /** What the chain says moved (a batch's `Swept`), or stayed (`SweepFailed`), in place of the amount read before. */
    amount?: bigint;
  },
  nowMs: number,
): Promise<boolean> {
  const r = await db
    .updateTable('charge_sweeps')
    .set({
      status: f.status,
      live_key: null,
      tx_hash: f.tx_hash ?? undefined,
      block_number: f.block_number ?? null,
      error: f.error?.slice(0, 300) ?? null,
      fee_paid: f.fee_paid?.toString(),
      amount: f.amount?.toString(),
      updated_at: nowMs,
    })
    .where('id', '=', id)
    .where('live_key', 'is not', null)
    .executeTakeFirst();
  return Number(r.numUpdatedRows) === 1;
}

/** The wallet transaction of a gas top-up or a batch: its current hash, status and why it failed. */
export async function topUpState(
  db: Executor,
  transactionId: number,
): Promise<{ status: string; tx_hash: string | null; failure_reason: string | null } | undefined> {
  return db.selectFrom('transactions').select(['status', 'tx_hash', 'failure_reason']).where('id', '=', transactionId).executeTakeFirst();
}

/**
 * The highest block of the charge's money, in one statement: where it settled, its payments'
 * blocks (late ones too), its sweeps' and top-ups' (a balance read below an earlier sweep's block
 * still shows what that sweep took, and a second sweep signed from it could never mine), and for
 * a permanent deposit address (its charge row is only its watch) its receipts'. Null without any.
 */
export async function moneyBlock(db: Executor, chargeId: number): Promise<number | null> {
  const r = await db
    .selectFrom('charges as c')
    .select((eb) => [
      'c.settled_block',
      eb
        .selectFrom('charge_payments as p')
        .select((x) => x.fn.max('p.block_number').as('b'))
        .whereRef('p.charge_id', '=', 'c.id')
        .as('paid'),
      eb
        .selectFrom('charge_sweeps as w')
        .select((x) => x.fn.max('w.block_number').as('b'))
        .whereRef('w.charge_id', '=', 'c.id')
        .as('swept'),
      eb
        .selectFrom('transactions as t')
        .innerJoin('deposit_addresses as d', 'd.id', 't.deposit_address_id')
        .select((x) => x.fn.max('t.block_number').as('b'))
        .whereRef('d.charge_id', '=', 'c.id')
        .as('received'),
    ])
    .where('c.id', '=', chargeId)
    .executeTakeFirst();
  const blocks = [r?.settled_block, r?.paid, r?.swept, r?.received].filter((b) => b !== null && b !== undefined).map(Number);
  return blocks.length > 0 ? Math.max(...blocks) : null;
}

export interface DueCharge {
  id: number;
  sweep_due_at: number;
  wallet_id: number;
  deposit_kind: 'keyed' | 'keyless';
}

/** Settled charges whose address is due a look (bounded, earliest due first), with the kind of their address. */
export async function listDue(db: Executor, nowMs: number, limit: number): Promise<DueCharge[]> {
  const rows = await db
    .selectFrom('charges as c')
    .innerJoin('sub_wallets as s', 's.id', 'c.sub_wallet_id')
    .select(['c.id', 'c.sweep_due_at', 'c.wallet_id', 's.kind'])
    .where('c.status', '<>', 'pending')
    .where('c.sweep_due_at', '<=', nowMs)
    .orderBy('c.sweep_due_at', 'asc')
    .orderBy('c.id', 'asc')
    .limit(limit)
    .execute();
  return rows.map((r) => ({
    id: r.id,
    sweep_due_at: Number(r.sweep_due_at),
    wallet_id: Number(r.wallet_id),
    deposit_kind: r.kind === 'keyless' ? 'keyless' : 'keyed',
  }));
}

export async function setDue(db: Executor, chargeId: number, atMs: number): Promise<void> {
  await db.updateTable('charges').set({ sweep_due_at: atMs }).where('id', '=', chargeId).execute();
}

/** Nothing more to do for now, unless the schedule moved since it was read. */
export async function clearDue(db: Executor, chargeId: number, seenDueMs: number): Promise<void> {
  await db.updateTable('charges').set({ sweep_due_at: null }).where('id', '=', chargeId).where('sweep_due_at', '=', seenDueMs).execute();
}

/** The next look moved to `atMs`, unless the schedule moved since it was read (a payment made it due sooner). */
export async function postponeDue(db: Executor, chargeId: number, seenDueMs: number, atMs: number): Promise<void> {
  await db.updateTable('charges').set({ sweep_due_at: atMs }).where('id', '=', chargeId).where('sweep_due_at', '=', seenDueMs).execute();
}

/**
 * `clearDue` for a charge with a row in flight, in one statement that also checks the row is
 * still in flight: a row finished between the caller's look and this write has scheduled the
 * next look itself (in its own transaction), and that schedule must not be cleared, even when it
 * happens to equal the one seen (the same millisecond).
 */
export async function clearDueWhileLive(db: Executor, chargeId: number, seenDueMs: number): Promise<void> {
  await db
    .updateTable('charges')
    .set({ sweep_due_at: null })
    .where('id', '=', chargeId)
    .where('sweep_due_at', '=', seenDueMs)
    .where((eb) =>
      eb.exists(
        eb
          .selectFrom('charge_sweeps')
          .select('id')
          .where('charge_id', '=', chargeId)
          .where('live_key', 'is not', null)
          .where('live_key', 'not like', `%${REPLACED}%`),
      ),
    )
    .execute();
}

/** A mined row back in flight (a reorg removed its block). */
interface Reopened {
  id: number;
  charge_id: number;
  kind: SweepKind;
}

/**
 * Inside the follower's rollback transaction, a reorg below `ancestor`: the network's rows whose
 * mining it undid go back in flight (`pending`, no block, no fee), as the transaction service
 * puts a wallet's transfers back to pending. The chain no longer shows them: a real node puts
 * the removed transactions back in its pool and may mine them again in another block at another
 * fee, or may drop them. The sweeper follows them again (`trackSweep`, `trackTopUp`): mined again,
 * confirmed with the new block and fee; gone from the chain and the node, a sweep is sent again
 * from its kept `raw_tx` (same nonce, so it can only mine once).
 *
 * - Sweeps: those with a block above `ancestor` (confirmed, or failed on a reverted receipt).
 * - Gas top-ups and batches (a keyless address's part in a Sweeper call): final rows whose
 *   `transactions` row is pending again (`rollBackAbove` ran first in this transaction). In
 *   flight again, the charge waits for it (`hasLive`) instead of the sweeper sending a second
 *   top-up or batch while the first may still be mined; the transaction service sends the
 *   wallet's transaction again, and its outcome is read anew from its receipt.
 *
 * The unique `live_key`: a newer row of the same kind can be in flight (after a token sweep
 * confirmed, the sweep of the gas left; after a top-up, the next), or several rows of a kind can
 * come back at once. The oldest takes `liveKey` if no row holds it, every other its own key
 * (`reopenedKey`); `claimLive` claims nothing for a kind with any row in flight. On PostgreSQL a
 * claim committing between the look and the update fails the update on the unique key: the
 * rollback's transaction aborts whole and the follower makes it again on its next tick.
 */
export async function reopenMinedAbove(trx: Executor, networkId: number, ancestor: number, nowMs: number): Promise<Reopened[]> {
  const ofNetwork = trx
    .selectFrom('charges as c')
    .innerJoin('wallets as n', 'n.id', 'c.wallet_id')
    .select('c.id')
    .where('n.network_id', '=', networkId);
  const sweeps = await trx
    .selectFrom('charge_sweeps')
    .select(['id', 'charge_id', 'kind'])
    .where('kind', '=', 'sweep')
    .where('live_key', 'is', null)
    .where('block_number', '>', ancestor)
    .where('charge_id', 'in', ofNetwork)
    .execute();
  const topUps = await trx
    .selectFrom('charge_sweeps as w')
    .innerJoin('transactions as x', 'x.id', 'w.transaction_id')
    .select(['w.id', 'w.charge_id', 'w.kind'])
    .where('w.kind', 'in', ['gas', 'batch'])
    .where('w.live_key', 'is', null)
    .where('x.status', '=', 'pending')
    .where('w.charge_id', 'in', ofNetwork)
    .execute();
  const rows = [...sweeps, ...topUps]
    .map((r) => ({ id: r.id, charge_id: Number(r.charge_id), kind: r.kind as SweepKind }))
    .sort((a, b) => a.id - b.id);
  for (const r of rows) {
    const key = liveKey(r.charge_id, r.kind);
    const held = await trx.selectFrom('charge_sweeps').select('id').where('live_key', '=', key).executeTakeFirst();
    await trx
      .updateTable('charge_sweeps')
      .set({
        status: 'pending',
        live_key: held ? reopenedKey(r.charge_id, r.kind, r.id) : key,
        block_number: null,
        fee_paid: null,
        error: null,
        updated_at: nowMs,
      })
      .where('id', '=', r.id)
      .execute();
  }
  return rows;
}
