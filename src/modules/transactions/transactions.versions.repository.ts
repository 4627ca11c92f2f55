/**
 * Finality: send attempts, the fair re-send queue, a transfer's signed versions (speed-ups,
 * cancels) and the stuck rows.
 */
import { sql } from 'kysely';
import type { Executor } from '../../db/index.js';
import { prepare } from '../../db/prepared.js';
import { onNetwork, type BroadcastKind, OUTGOING_TYPES, type TxRecord, big, records, str, toRecord } from './transactions.repository.js';

/**
 * Counts a send attempt of the version `txHash` before it is made; true when it is the first
 * (nothing was ever sent anywhere); 'stale' (nothing counted, nothing to send) when the row is no
 * longer pending or a speed-up or cancel has replaced that version since it was read.
 */
export async function claimAttempt(db: Executor, id: number, txHash: string, nowMs: number): Promise<boolean | 'stale'> {
  const r = await db
    .updateTable('transactions')
    .set({ broadcast_attempts: sql`broadcast_attempts + 1`, updated_at: nowMs })
    .where('id', '=', id)
    .where('tx_hash', '=', txHash)
    .where('status', '=', 'pending')
    .returning('broadcast_attempts')
    .executeTakeFirst();
  if (r === undefined) return 'stale';
  return Number(r.broadcast_attempts) === 1;
}

export interface QueuedTransfer {
  id: number;
  wallet_id: number;
  from_address: string;
  tx_hash: string;
  nonce: number;
  raw_tx: string;
  check_count: number;
}

/**
 * The re-send queue: pending outgoing rows not seen in a block that are due a check (`all`:
 * every one, the start-up pass). Round robin over wallets: each wallet's rows are ranked by
 * nonce, at most `perWallet` of them, and the first of every wallet comes before the second of
 * any, so one wallet with a thousand stuck rows takes `perWallet` slots of a pass, not all.
 * A row never checked is due once older than `graceBeforeMs` (its create is still sending).
 */
export async function listResendQueue(
  db: Executor,
  networkId: number,
  o: { nowMs: number; graceBeforeMs: number; all: boolean; perWallet: number; limit: number },
): Promise<QueuedTransfer[]> {
  const rows = o.all
    ? await resendAll.execute(db, networkId, o.perWallet, o.limit)
    : await resendDue.execute(db, networkId, o.perWallet, o.limit, o.graceBeforeMs, o.nowMs);
  return rows.map((r) => ({ ...r, tx_hash: r.tx_hash!, nonce: Number(r.nonce), raw_tx: r.raw_tx!, check_count: Number(r.check_count) }));
}

/** `listResendQueue`'s query: every row (`due` absent), or those due a check by `due`'s times. */
function resendQueue(db: Executor, networkId: number, perWallet: number, limit: number, due?: { graceBeforeMs: number; nowMs: number }) {
  let q = db
    .selectFrom('transactions')
    .select(['id', 'wallet_id', 'from_address', 'tx_hash', 'nonce', 'raw_tx', 'check_count'])
    .select(sql<number>`row_number() over (partition by wallet_id order by nonce, id)`.as('rank'))
    .where('wallet_id', 'in', onNetwork(db, networkId))
    .where('type', 'in', OUTGOING_TYPES)
    .where('status', '=', 'pending')
    .where('block_number', 'is', null)
    .where('raw_tx', 'is not', null);
  if (due) {
    q = q.where((eb) =>
      eb.or([eb.and([eb('next_check_at', 'is', null), eb('created_at', '<', due.graceBeforeMs)]), eb('next_check_at', '<=', due.nowMs)]),
    );
  }
  return db
    .selectFrom(q.as('q'))
    .selectAll()
    .where('rank', '<=', perWallet)
    .orderBy('rank', 'asc')
    .orderBy('wallet_id', 'asc')
    .limit(limit);
}

const resendAll = prepare((db: Executor, networkId: number, perWallet: number, limit: number) =>
  resendQueue(db, networkId, perWallet, limit),
);

const resendDue = prepare((db: Executor, networkId: number, perWallet: number, limit: number, graceBeforeMs: number, nowMs: number) =>
  resendQueue(db, networkId, perWallet, limit, { graceBeforeMs, nowMs }),
);

/**
 * Receipts a reorg put back to pending that no block has shown again, due a check (the
 * dropped check: `recheckReorgedReceipts`), oldest first.
 */
export async function listReorgedReceipts(
  db: Executor,
  networkId: number,
  nowMs: number,
  limit: number,
): Promise<Array<{ id: number; wallet_id: number; from_address: string; tx_hash: string; nonce: number; check_count: number }>> {
  const rows = await reorgedReceipts.execute(db, networkId, nowMs, limit);
  return rows.map((r) => ({ ...r, tx_hash: r.tx_hash!, nonce: Number(r.nonce), check_count: Number(r.check_count) }));
}

const reorgedReceipts = prepare((db: Executor, networkId: number, nowMs: number, limit: number) =>
  db
    .selectFrom('transactions')
    .select(['id', 'wallet_id', 'from_address', 'tx_hash', 'nonce', 'check_count'])
    .where('wallet_id', 'in', onNetwork(db, networkId))
    .where('type', '=', 'receipt')
    .where('status', '=', 'pending')
    .where('block_number', 'is', null)
    .where('nonce', 'is not', null)
    .where((eb) => eb.or([eb('next_check_at', 'is', null), eb('next_check_at', '<=', nowMs)]))
    .orderBy('id', 'asc')
    .limit(limit),
);

/** The next check of a queued row, after this one (backoff chosen by the caller). */
export async function scheduleCheck(db: Executor, id: number, nextAtMs: number, nowMs: number): Promise<void> {
  await db
    .updateTable('transactions')
    .set({ next_check_at: nextAtMs, check_count: sql`check_count + 1`, updated_at: nowMs })
    .where('id', '=', id)
    .where('status', '=', 'pending')
    .execute();
}

/**
 * Outgoing rows not seen in a block with any of these hashes, current or replaced, each with
 * the hash found: pending ones, and failed ones never mined (a node refused them, yet here
 * they are in a block).
 */
export async function findUnminedByAnyHash(
  db: Executor,
  networkId: number,
  hashes: string[],
): Promise<Array<{ rec: TxRecord; hash: string }>> {
  if (hashes.length === 0) return [];
  const unmined = () =>
    records(db)
      .where('tx.wallet_id', 'in', onNetwork(db, networkId))
      .where('tx.type', 'in', OUTGOING_TYPES)
      .where('tx.status', 'in', ['pending', 'failed'])
      .where('tx.block_number', 'is', null)
      // A batched payout item shares its batch's hash; it follows the batch (payouts.batches.ts).
      .where('tx.batch_tx_id', 'is', null);
  // One statement (it runs for every block with a transfer of ours): the rows whose current
  // hash is one of these, then the rows one of whose earlier versions has one (one row a version).
  const rows = await unmined()
    .select('tx.tx_hash as found_hash')
    .where('tx.tx_hash', 'in', hashes)
    .unionAll(
      unmined()
        .innerJoin('transaction_broadcasts as tb', 'tb.transaction_id', 'tx.id')
        .select('tb.tx_hash as found_hash')
        .where('tb.tx_hash', 'in', hashes)
        .where((eb) => eb.or([eb('tx.tx_hash', 'is', null), eb('tx.tx_hash', 'not in', hashes)])),
    )
    .execute();
  return rows.map(({ found_hash, ...r }) => ({ rec: toRecord(r), hash: found_hash! }));
}

export interface SignedVersion {
  tx_hash: string;
  raw_tx: string;
  kind: BroadcastKind;
  gas: bigint;
  /** The max fee per gas (legacy: the gas price). */
  gas_price: bigint;
  tx_kind: 'legacy' | 'eip1559';
  max_priority_fee_per_gas: bigint | null;
}

/** Every signed version of a row, oldest first (a row never replaced: just its current one). */
export async function listVersions(db: Executor, id: number): Promise<SignedVersion[]> {
  const rows = await db
    .selectFrom('transaction_broadcasts')
    .select(['tx_hash', 'raw_tx', 'kind', 'gas', 'gas_price', 'tx_kind', 'max_priority_fee_per_gas'])
    .where('transaction_id', '=', id)
    .orderBy('id', 'asc')
    .execute();
  const kindOf = (k: string) => (k === 'eip1559' ? 'eip1559' : 'legacy');
  if (rows.length > 0) {
    return rows.map((r) => ({
      ...r,
      kind: r.kind as BroadcastKind,
      gas: BigInt(r.gas),
      gas_price: BigInt(r.gas_price),
      tx_kind: kindOf(r.tx_kind),
      max_priority_fee_per_gas: big(r.max_priority_fee_per_gas),
    }));
  }
  const cur = await db
    .selectFrom('transactions')
    .select(['tx_hash', 'raw_tx', 'broadcast_kind', 'gas', 'gas_price', 'tx_kind', 'max_priority_fee_per_gas'])
    .where('id', '=', id)
    .executeTakeFirst();
  if (!cur?.tx_hash || !cur.raw_tx) return [];
  return [
    {
      tx_hash: cur.tx_hash,
      raw_tx: cur.raw_tx,
      kind: cur.broadcast_kind as BroadcastKind,
      gas: BigInt(cur.gas ?? 0),
      gas_price: BigInt(cur.gas_price ?? 0),
      tx_kind: kindOf(cur.tx_kind),
      max_priority_fee_per_gas: big(cur.max_priority_fee_per_gas),
    },
  ];
}

/** Makes `v` the row's current version: its hash, bytes, kind, gas and price; the others become its replaced hashes. */
async function setCurrent(
  db: Executor,
  id: number,
  v: SignedVersion,
  others: string[],
  extra: { fee_reserved?: bigint },
  nowMs: number,
): Promise<void> {
  await db
    .updateTable('transactions')
    .set({
      tx_hash: v.tx_hash,
      raw_tx: v.raw_tx,
      broadcast_kind: v.kind,
      gas: v.gas.toString(),
      gas_price: v.gas_price.toString(),
      tx_kind: v.tx_kind,
      max_fee_per_gas: v.tx_kind === 'eip1559' ? v.gas_price.toString() : null,
      max_priority_fee_per_gas: str(v.max_priority_fee_per_gas),
      replaced_hashes: others.length > 0 ? others.join(',') : null,
      ...(extra.fee_reserved !== undefined ? { fee_reserved: extra.fee_reserved.toString() } : {}),
      updated_at: nowMs,
    })
    .where('id', '=', id)
    .execute();
}

/**
 * Records a replacement (caller holds the wallet lock): the new version is stored next to the
 * earlier ones and becomes current; the reservation becomes `feeReserved` (the highest maximum
 * fee of all versions: any of them may be the one that mines). Its check schedule restarts.
 */
export async function recordReplacement(db: Executor, id: number, next: SignedVersion, feeReserved: bigint, nowMs: number): Promise<void> {
  const versions = await listVersions(db, id);
  const hasRows = await db.selectFrom('transaction_broadcasts').select('id').where('transaction_id', '=', id).limit(1).executeTakeFirst();
  const toStore = hasRows ? [next] : [...versions, next];
  for (const v of toStore) {
    await db
      .insertInto('transaction_broadcasts')
      .values({
        transaction_id: id,
        tx_hash: v.tx_hash,
        raw_tx: v.raw_tx,
        kind: v.kind,
        gas: v.gas.toString(),
        gas_price: v.gas_price.toString(),
        tx_kind: v.tx_kind,
        max_priority_fee_per_gas: str(v.max_priority_fee_per_gas),
        created_at: nowMs,
      })
      .execute();
  }
  const others = [...versions.map((v) => v.tx_hash)].filter((h) => h !== next.tx_hash);
  await setCurrent(db, id, next, others, { fee_reserved: feeReserved }, nowMs);
  await db
    .updateTable('transactions')
    .set({ next_check_at: null, check_count: 0, broadcast_at: null, stuck_reason: null })
    .where('id', '=', id)
    .execute();
}

/**
 * Makes the version with `hash` current again (it mined, or a newer one was refused and
 * dropped from the versions). `forget`: the current version is removed (it was never accepted).
 */
export async function adoptVersion(
  db: Executor,
  id: number,
  hash: string,
  nowMs: number,
  opts: { forget?: string } = {},
): Promise<boolean> {
  if (opts.forget)
    await db.deleteFrom('transaction_broadcasts').where('transaction_id', '=', id).where('tx_hash', '=', opts.forget).execute();
  const versions = await listVersions(db, id);
  const v = versions.find((x) => x.tx_hash === hash);
  if (!v) return false;
  await setCurrent(
    db,
    id,
    v,
    versions.map((x) => x.tx_hash).filter((h) => h !== hash),
    {},
    nowMs,
  );
  return true;
}

/**
 * A replacement the node refused (it was never accepted): the version `forget` is removed, the
 * one with hash `restore` is current again, the reservation back to `feeReserved` (caller holds
 * the wallet lock). Nothing happens if the row moved on meanwhile (no longer pending or unmined).
 */
export async function undoReplacement(
  db: Executor,
  id: number,
  o: { restore: string; forget: string; feeReserved: bigint },
  nowMs: number,
): Promise<void> {
  const row = await db.selectFrom('transactions').select(['status', 'block_number', 'tx_hash']).where('id', '=', id).executeTakeFirst();
  if (!row || row.status !== 'pending' || row.block_number !== null || row.tx_hash !== o.forget) return;
  if (!(await adoptVersion(db, id, o.restore, nowMs, { forget: o.forget }))) return;
  await db.updateTable('transactions').set({ fee_reserved: o.feeReserved.toString() }).where('id', '=', id).execute();
}

/** Outgoing rows of the wallet not final yet (the MAX_PENDING_PER_WALLET cap; caller holds the wallet lock). */
export async function countPendingOutgoing(db: Executor, walletId: number): Promise<number> {
  const r = await db
    .selectFrom('transactions')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where('wallet_id', '=', walletId)
    .where('type', 'in', OUTGOING_TYPES)
    .where('status', '=', 'pending')
    .where('batch_tx_id', 'is', null) // a batch counts once: its own row
    .executeTakeFirstOrThrow();
  return Number(r.n);
}

/**
 * Marks a pending row stuck at once with the node's words (every endpoint refused its re-send
 * for a reason other than its fee). True only the first time (the reason was null): its event is
 * written once.
 */
export async function markStuckRefused(db: Executor, id: number, reason: string, nowMs: number): Promise<boolean> {
  const r = await db
    .updateTable('transactions')
    .set((eb) => ({ stuck_at: eb.fn.coalesce('stuck_at', eb.val(nowMs)), stuck_reason: reason.slice(0, 300), updated_at: nowMs }))
    .where('id', '=', id)
    .where('status', '=', 'pending')
    .where('stuck_reason', 'is', null)
    .executeTakeFirst();
  return Number(r.numUpdatedRows) > 0;
}

/** Marks the network's outgoing rows pending since before `beforeMs` as stuck; returns those newly marked (logged once). */
export async function markStuck(
  db: Executor,
  networkId: number,
  beforeMs: number,
  nowMs: number,
): Promise<Array<{ id: number; wallet_id: number; tx_hash: string | null; nonce: number | null }>> {
  return stuckRows.execute(db, networkId, beforeMs, nowMs);
}

const stuckRows = prepare((db: Executor, networkId: number, beforeMs: number, nowMs: number) =>
  db
    .updateTable('transactions')
    .set({ stuck_at: nowMs })
    .where('wallet_id', 'in', onNetwork(db, networkId))
    .where('type', 'in', OUTGOING_TYPES)
    .where('status', '=', 'pending')
    .where('stuck_at', 'is', null)
    .where('batch_tx_id', 'is', null)
    .where('created_at', '<', beforeMs)
    .returning(['id', 'wallet_id', 'tx_hash', 'nonce']),
);
