/**
 * The create path's reads and writes under the wallet's lock: the lock itself, the next nonce, row
 * ids drawn ahead, what the wallet's outgoing rows reserve and the nonces they hold.
 */
import { sql } from 'kysely';
import { dialectOf } from '../../db/dialect.js';
import type { Executor } from '../../db/index.js';
import { prepare } from '../../db/prepared.js';
import { unsentItemReservations } from '../payouts/payouts.repository.js';
import { OUTGOING_TYPES } from './transactions.repository.js';

const walletLock = prepare((db: Executor, walletId: number) =>
  dialectOf(db).forUpdate(db.selectFrom('wallets as w').select('w.id').where('w.id', '=', walletId)),
);

/**
 * Transfer creation: takes the wallet's row lock (the same lock as `lockWallet`: PostgreSQL
 * `FOR UPDATE` on the `wallets` row; SQLite's write lock is already held by BEGIN IMMEDIATE).
 * False when the wallet does not exist. The next nonce is read by a statement of its own issued
 * behind this one (`findNextNonce`, no round trip more), not in it: on PostgreSQL a statement
 * that waited for the lock reads other tables as they were when it started (READ COMMITTED
 * re-reads only the locked row), i.e. before the commit it waited for. A nonce given back by
 * that commit (a transfer refused on its first send: `failUnmined`) would be lost to the stale
 * value: the create would sign above it, and every later transfer wait behind the gap.
 */
export async function lockWalletForCreate(trx: Executor, walletId: number): Promise<boolean> {
  return (await walletLock.executeTakeFirst(trx, walletId)) !== undefined;
}

/**
 * PostgreSQL: draws the id the next transfer row will have, from the table's own sequence. Issued
 * right behind the wallet's lock statement (src/db/pipelined.ts), it runs once the lock is
 * granted, so a wallet's ids still follow the order its creates commit in; with the id known
 * before the insert is answered, the create sends its insert, its event (whose payload carries
 * the id) and the commit in one round trip (transactions.service.ts, `recordBatchOnce`). A create that
 * does not insert after all (refused under the lock, or held for approval) leaves the id unused:
 * a gap, as a rolled-back insert leaves. SQLite: undefined (the insert draws it; there is no
 * round trip to save).
 */
export async function drawTransactionId(trx: Executor): Promise<number | undefined> {
  return (await drawTransactionIds(trx, 1))?.[0];
}

/**
 * PostgreSQL: `count` ids for the transfers a batch of creates will insert, drawn behind the
 * wallet's lock statement as `drawTransactionId` draws one, in increasing order. SQLite: undefined.
 */
export async function drawTransactionIds(trx: Executor, count: number): Promise<number[] | undefined> {
  if (dialectOf(trx).driver !== 'postgres') return undefined;
  const rows = await drawIds.execute(trx, count);
  return rows.map((r) => Number(r.id)).sort((a, b) => a - b);
}

const drawIds = prepare((db: Executor, count: number) =>
  db.selectFrom(sql<{ n: number }>`generate_series(1, ${count}::int)`.as('g')).select(sql<string>`nextval('transactions_id_seq')`.as('id')),
);

/** What transfer creation needs of the wallet's outgoing rows, read in one statement under the wallet lock. */
export interface OutgoingState {
  /** As `reservations(db, walletId, minedNonce)`. */
  reservations: Reservation[];
  /** As `countPendingOutgoing`. */
  pendingCount: number;
  /**
   * Nonces a row of the wallet holds or used: every pending row's, and every other row's from
   * `minedNonce` up that did not fail unmined (those gave theirs back). The allocation skips
   * them whatever `next_nonce` says, and a gap filler's required nonce is checked against them
   * alone (with the chain's counts): the rows are what says a nonce of ours is taken.
   */
  usedNonces: number[];
}

/** A transfer held for approval: it holds no nonce, and reserves its amount and maximum fee until it is approved, rejected or expires. */
export const AWAITING = 'awaiting_approval';

/**
 * `reservations`, `countPendingOutgoing` and the used nonces in one query: the outgoing rows that
 * are pending, awaiting approval, or that reserve against a balance read at `minedNonce` (at
 * most the wallet's unconfirmed transfers, bounded by MAX_PENDING_PER_WALLET, those awaiting
 * approval, and those the watcher has not settled yet), and the payout items not sent yet
 * (payouts.repository.ts `unsentItemReservations`, shaped as held rows), split here with the
 * same conditions.
 */
// Index ranges, not one OR (which SQLite answers by reading every outgoing row the wallet
// ever had): the pending and awaiting rows by (wallet_id, status), the rest from `minedNonce` up
// by (wallet_id, type, nonce). Compiled once (src/db/prepared.ts): every create runs it.
const outgoingRows = prepare((db: Executor, walletId: number, minedNonce: number) => {
  const outgoing = () =>
    db
      .selectFrom('transactions')
      .select(['id', 'token_id', 'amount', 'fee_reserved', 'nonce', 'status', 'block_number', 'call_token_id', 'call_spend'])
      .where('wallet_id', '=', walletId)
      .where('type', 'in', OUTGOING_TYPES);
  return (
    outgoing()
      .where('status', 'in', ['pending', AWAITING])
      // A batched payout item: its batch's row holds the nonce, counts as pending and reserves its token.
      .where('batch_tx_id', 'is', null)
      .unionAll(
        outgoing()
          .where('nonce', '>=', minedNonce)
          .where('status', 'not in', ['pending', AWAITING])
          .where((eb) => eb.not(eb.and([eb('status', '=', 'failed'), eb('block_number', 'is', null)]))),
      )
      .unionAll(unsentItemReservations(db, walletId))
  );
});

/** Does this outgoing row reserve against a balance read at `minedNonce`? (One rule for both readers below.) */
function reserves(r: { nonce: number | string | null; status: string; block_number: number | null }, minedNonce: number): boolean {
  if (r.status === AWAITING) return true;
  return r.nonce !== null && Number(r.nonce) >= minedNonce && !(r.status === 'failed' && r.block_number === null);
}

/**
 * Reservations a create takes over, left out of its own checks: a row awaiting approval being
 * approved, a payout item's, or a batch's items'.
 */
export type Excluded = number | readonly number[] | undefined;

function excluded(ex: Excluded, id: number): boolean {
  return ex === undefined ? false : typeof ex === 'number' ? ex === id : ex.includes(id);
}

/** `excludeId`: a row awaiting approval being approved, whose own reservation is what it spends. */
export async function outgoingState(db: Executor, walletId: number, minedNonce: number, excludeId?: Excluded): Promise<OutgoingState> {
  return outgoingStateOf(await outgoingRowsFrom(db, walletId, minedNonce), minedNonce, excludeId);
}

/** The wallet's outgoing rows `outgoingState` reads, for any `minedNonce` at or above this one (a batch of creates reads them once). */
export type OutgoingRows = Awaited<ReturnType<typeof outgoingRows.execute>>;

export function outgoingRowsFrom(db: Executor, walletId: number, minedNonce: number): Promise<OutgoingRows> {
  return outgoingRows.execute(db, walletId, minedNonce);
}

/**
 * `outgoingState` of rows read at a mined nonce at or below `minedNonce`: the rows the lower
 * bound adds (not pending, not awaiting, nonce below `minedNonce`) neither reserve, nor count as
 * pending, nor hold a nonce, so the state is the one a read at `minedNonce` gives.
 */
export function outgoingStateOf(rows: OutgoingRows, minedNonce: number, excludeId?: Excluded): OutgoingState {
  const state: OutgoingState = { reservations: [], pendingCount: 0, usedNonces: [] };
  for (const r of rows) {
    if (excluded(excludeId, r.id)) continue;
    if (r.status === 'pending') state.pendingCount += 1;
    const reserving = reserves(r, minedNonce);
    if (r.nonce !== null && (r.status === 'pending' || reserving)) state.usedNonces.push(Number(r.nonce));
    if (reserving) state.reservations.push(...reservationsOf(r));
  }
  return state;
}

/** What a reserving row takes: its amount and maximum fee, and a token call's spend of its token (migration 029). */
function reservationsOf(r: {
  token_id: number;
  amount: string;
  fee_reserved: string;
  call_token_id: number | null;
  call_spend: string | null;
}): Reservation[] {
  const own = { token_id: r.token_id, amount: BigInt(r.amount), fee_reserved: BigInt(r.fee_reserved) };
  if (r.call_token_id === null || r.call_spend === null || BigInt(r.call_spend) === 0n) return [own];
  return [own, { token_id: Number(r.call_token_id), amount: BigInt(r.call_spend), fee_reserved: 0n }];
}

export interface Reservation {
  token_id: number;
  amount: bigint;
  fee_reserved: bigint;
}

/**
 * What the wallet's own outgoing transfers still take from a chain balance read at block B,
 * given `minedNonce`, the address's transaction count at B. Every transfer comes from the
 * wallet's address, so the ones with a nonce below that count are already in the balance at B
 * and the ones at or above it are not: each of those reserves its amount and its maximum fee.
 * This is exact whatever the watcher has seen so far. Transfers that failed without ever being
 * mined took nothing and reserve nothing (their nonce may have been handed out again). A
 * transfer awaiting approval has no nonce and reserves until it is decided, and so does each
 * unsent item of a payout awaiting approval or being sent.
 */
const reservationRows = prepare((db: Executor, walletId: number, minedNonce: number) =>
  db
    .selectFrom('transactions')
    .select(['id', 'token_id', 'amount', 'fee_reserved', 'nonce', 'status', 'block_number', 'call_token_id', 'call_spend'])
    .where('wallet_id', '=', walletId)
    .where('type', 'in', OUTGOING_TYPES)
    .where('nonce', '>=', minedNonce)
    .unionAll(
      db
        .selectFrom('transactions')
        .select(['id', 'token_id', 'amount', 'fee_reserved', 'nonce', 'status', 'block_number', 'call_token_id', 'call_spend'])
        .where('wallet_id', '=', walletId)
        .where('type', 'in', OUTGOING_TYPES)
        .where('status', '=', AWAITING),
    )
    .unionAll(unsentItemReservations(db, walletId)),
);

export async function reservations(db: Executor, walletId: number, minedNonce: number, excludeId?: Excluded): Promise<Reservation[]> {
  const rows = await reservationRows.execute(db, walletId, minedNonce);
  return rows.filter((r) => !excluded(excludeId, r.id) && reserves(r, minedNonce)).flatMap(reservationsOf);
}

/** Nonces ≥ `from` held by the wallet's pending outgoing transactions. */
export async function heldNonces(db: Executor, walletId: number, from: number): Promise<Set<number>> {
  const rows = await db
    .selectFrom('transactions')
    .select('nonce')
    .where('wallet_id', '=', walletId)
    .where('type', 'in', OUTGOING_TYPES)
    .where('status', '=', 'pending')
    .where('nonce', '>=', from)
    .execute();
  return new Set(rows.map((r) => Number(r.nonce)));
}
