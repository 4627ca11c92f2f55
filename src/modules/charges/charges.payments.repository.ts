/** charge_payments, charge_blocks and the charge rows the chain follower and the charge worker move. */
import { sql } from 'kysely';
import { getAddress } from 'viem';
import type { Executor } from '../../db/index.js';
import { dialectOf } from '../../db/dialect.js';
import { prepare } from '../../db/prepared.js';

/** Block timestamps kept per network (the confirmed height is never further back than this). */
const KEEP_BLOCK_TIMES = 512;
/** How often (in blocks) the times older than KEEP_BLOCK_TIMES are deleted. */
const PRUNE_EVERY = 64;

/** A deposit address the follower matches a block against. */
export interface WatchedDeposit {
  charge_id: number;
  wallet_id: number;
  /** The wallet's main address: what it sends here is gas for a sweep, never a payment. */
  main_address: string;
  address: string;
  contract: string;
  /** The charge's token (a price charge's first quote's). */
  token_id: number;
  /** A price charge's quoted tokens, JSON `[{"token_id", "contract"}]` (`charges.quote_tokens`); null: only `token_id` pays. */
  quote_tokens: string | null;
  /** A permanent deposit address (its charge row is only its watch): every transfer of an active token is a receipt of the wallet; else null. */
  deposit_address_id: number | null;
  reference: string | null;
  user_id: number;
}

export interface NewPayment {
  charge_id: number;
  /** The token paid in. */
  token_id: number;
  tx_hash: string;
  log_index: number;
  from_address: string;
  amount: bigint;
  /** Reached the address through a contract (an internal call), not a transaction to it. */
  internal: boolean;
  /** Its sender is on the SCREENING_FILE list: kept and listed, never counted toward paid. */
  screened: boolean;
}

export interface PaymentRow {
  id: number;
  charge_id: number;
  /** The token paid in. */
  token_id: number;
  /** Null (with `from_address`): found on the address by its balance after its watch ended (`recordFoundPayment`). */
  tx_hash: string | null;
  log_index: number;
  from_address: string | null;
  amount: bigint;
  block_number: number;
  block_timestamp: number;
  confirmed: number;
  notified: number;
  internal: number;
  /** 1: its sender was listed by screening when recorded (migration 030): not counted toward paid. */
  screened: number;
  /** The token's, joined. */
  symbol: string;
  decimals: number;
}

/** Watched in a block stamped `blockMs`: pending charges, and settled ones until `watch_until`. */
function watchedQuery(db: Executor, networkId: number, blockMs: number) {
  return db
    .selectFrom('charges as c')
    .innerJoin('wallets as w', 'w.id', 'c.wallet_id')
    .innerJoin('sub_wallets as s', 's.id', 'c.sub_wallet_id')
    .innerJoin('wallet_tokens as t', 't.id', 'c.token_id')
    .leftJoin('deposit_addresses as d', 'd.charge_id', 'c.id')
    .select(['c.id as charge_id', 'c.wallet_id', 'w.address as main_address', 's.address', 't.contract', 'c.token_id', 'c.quote_tokens'])
    .select('w.user_id')
    .select(['d.id as deposit_address_id', 'd.reference'])
    .where('w.network_id', '=', networkId)
    .where((eb) => eb.or([eb('c.status', '=', 'pending'), eb('c.watch_until', '>=', blockMs)]));
}

/** The deposit addresses of a network to watch in a block stamped `blockMs`, at most `limit` of them. */
export async function listWatchedDeposits(db: Executor, networkId: number, blockMs: number, limit: number): Promise<WatchedDeposit[]> {
  return watchedDeposits.execute(db, networkId, blockMs, limit);
}

/** Read for every block the watcher records: compiled once. */
const watchedDeposits = prepare((db, networkId: number, blockMs: number, limit: number) =>
  watchedQuery(db, networkId, blockMs).limit(limit),
);

/** Addresses looked up at once (each is two parameters: checksummed and lowercase). */
const LOOKUP_CHUNK = 400;

/**
 * The watched deposits (as `listWatchedDeposits`) among some addresses, by the sub-wallets'
 * address index: what a block with thousands of watched addresses is matched with, at the cost
 * of the block's recipients rather than of every open charge. Each address is looked up
 * checksummed and lowercase (a node's answers and the database may hold either form).
 */
export async function findWatchedDeposits(
  db: Executor,
  networkId: number,
  blockMs: number,
  addresses: readonly string[],
): Promise<WatchedDeposit[]> {
  const unique = [...new Set(addresses)];
  const out: WatchedDeposit[] = [];
  for (let i = 0; i < unique.length; i += LOOKUP_CHUNK) {
    const part = unique.slice(i, i + LOOKUP_CHUNK);
    const forms = [...new Set(part.flatMap((a) => [getAddress(a), a.toLowerCase()]))];
    out.push(...(await watchedQuery(db, networkId, blockMs).where('s.address', 'in', forms).execute()));
  }
  return out;
}

/** Every ERC-20 contract a wallet of the network has (active or not): the widest set a charge's payment can come from. */
export async function listNetworkTokenContracts(db: Executor, networkId: number): Promise<string[]> {
  const rows = await db
    .selectFrom('wallet_tokens as t')
    .innerJoin('wallets as w', 'w.id', 't.wallet_id')
    .select('t.contract')
    .distinct()
    .where('w.network_id', '=', networkId)
    .where('t.is_native', '=', 0)
    .execute();
  return rows.map((r) => r.contract);
}

/** The contracts of the active ERC-20 tokens of some wallets. */
export async function listActiveContracts(db: Executor, walletIds: number[]): Promise<{ wallet_id: number; contract: string }[]> {
  if (walletIds.length === 0) return [];
  return db
    .selectFrom('wallet_tokens')
    .select(['wallet_id', 'contract'])
    .where('wallet_id', 'in', walletIds)
    .where('is_active', '=', 1)
    .where('is_native', '=', 0)
    .execute();
}

/** Settled charges that received something other than a payment (another token): due a sweep now. */
export async function makeSettledDue(trx: Executor, ids: number[], nowMs: number): Promise<void> {
  if (ids.length === 0) return;
  await trx.updateTable('charges').set({ sweep_due_at: nowMs }).where('id', 'in', ids).where('status', '<>', 'pending').execute();
}

/**
 * Records the times of some blocks of a network (one statement, in the follower's block
 * transaction); older times are pruned each time the batch reaches a multiple of PRUNE_EVERY.
 */
export async function recordBlockTimes(
  trx: Executor,
  networkId: number,
  blocks: ReadonlyArray<{ number: number; timestampMs: number }>,
): Promise<void> {
  if (blocks.length === 0) return;
  await trx
    .insertInto('charge_blocks')
    .values(blocks.map((b) => ({ network_id: networkId, block_number: b.number, block_timestamp: b.timestampMs })))
    .onConflict((oc) =>
      oc.columns(['network_id', 'block_number']).doUpdateSet((eb) => ({ block_timestamp: eb.ref('excluded.block_timestamp') })),
    )
    .execute();
  const newest = Math.max(...blocks.map((b) => b.number));
  if (blocks.some((b) => b.number % PRUNE_EVERY === 0)) {
    await trx
      .deleteFrom('charge_blocks')
      .where('network_id', '=', networkId)
      .where('block_number', '<', newest - KEEP_BLOCK_TIMES)
      .execute();
  }
}

/** Records a block's payments (inside the follower's block transaction; its time: `recordBlockTimes`). */
export async function recordBlockPayments(
  trx: Executor,
  b: { networkId: number; number: number; hash: string; timestampMs: number; payments: NewPayment[] },
  nowMs: number,
): Promise<void> {
  for (const p of b.payments) {
    await trx
      .insertInto('charge_payments')
      .values({
        ...p,
        amount: p.amount.toString(),
        internal: p.internal ? 1 : 0,
        screened: p.screened ? 1 : 0,
        network_id: b.networkId,
        block_number: b.number,
        block_hash: b.hash,
        block_timestamp: b.timestampMs,
        confirmed: 0,
        notified: 0,
        created_at: nowMs,
      })
      .onConflict((oc) => oc.columns(['charge_id', 'tx_hash', 'log_index']).doNothing())
      .execute();
  }
}

/**
 * Deletes what was recorded from blocks above `ancestor`; returns the charges whose payments were
 * removed. A payment found by the balance (`recordFoundPayment`, no transaction) is not a block's
 * record and stays: what a reorg changes of that balance shows in the reconciliation.
 */
export async function deleteAbove(trx: Executor, networkId: number, ancestor: number): Promise<number[]> {
  const gone = await trx
    .deleteFrom('charge_payments')
    .where('network_id', '=', networkId)
    .where('block_number', '>', ancestor)
    .where('tx_hash', 'is not', null)
    .returning('charge_id')
    .execute();
  await trx.deleteFrom('charge_blocks').where('network_id', '=', networkId).where('block_number', '>', ancestor).execute();
  return [...new Set(gone.map((g) => g.charge_id))];
}

/** The users whose charges a rollback to `ancestor` touches (payments above it, or a settlement decided above it). */
export async function listUsersAbove(trx: Executor, networkId: number, ancestor: number): Promise<number[]> {
  const rows = await trx
    .selectFrom('charges as c')
    .innerJoin('wallets as w', 'w.id', 'c.wallet_id')
    .select('w.user_id')
    .distinct()
    .where('w.network_id', '=', networkId)
    .where((eb) =>
      eb.or([
        eb('c.settled_block', '>', ancestor),
        eb.exists(
          eb
            .selectFrom('charge_payments as p')
            .select('p.id')
            .whereRef('p.charge_id', '=', 'c.id')
            .where('p.network_id', '=', networkId)
            .where('p.block_number', '>', ancestor),
        ),
      ]),
    )
    .execute();
  return rows.map((r) => Number(r.user_id));
}

/** Settled charges of the network decided on a block above `ancestor`: back to pending (the outcome is decided again). */
export async function reopenSettledAbove(trx: Executor, networkId: number, ancestor: number, nowMs: number): Promise<number[]> {
  const rows = await trx
    .updateTable('charges')
    .set({ status: 'pending', paid_at: null, settled_block: null, updated_at: nowMs })
    .where('status', '<>', 'pending')
    .where('settled_block', '>', ancestor)
    .where('wallet_id', 'in', (eb) => eb.selectFrom('wallets').select('id').where('network_id', '=', networkId))
    .returning('id')
    .execute();
  return rows.map((r) => r.id);
}

/** The timestamp (ms) of the newest recorded block at or below `height`, or null when none is. */
export async function blockTimeAtOrBelow(db: Executor, networkId: number, height: number): Promise<number | null> {
  const r = await db
    .selectFrom('charge_blocks')
    .select('block_timestamp')
    .where('network_id', '=', networkId)
    .where('block_number', '<=', height)
    .orderBy('block_number', 'desc')
    .limit(1)
    .executeTakeFirst();
  return r ? Number(r.block_timestamp) : null;
}

const PAYMENT_COLUMNS = [
  'p.id',
  'p.charge_id',
  't.id as token_id',
  'p.tx_hash',
  'p.log_index',
  'p.from_address',
  'p.amount',
  'p.block_number',
  'p.block_timestamp',
  'p.confirmed',
  'p.notified',
  'p.internal',
  'p.screened',
  't.symbol',
  't.decimals',
] as const;

/**
 * Payments with the token each was made in, its symbol and decimals. A row without `token_id`
 * (written by a version before price charges, during an upgrade) is in its charge's token.
 */
function payments(db: Executor) {
  return db
    .selectFrom('charge_payments as p')
    .innerJoin('charges as pc', 'pc.id', 'p.charge_id')
    .innerJoin('wallet_tokens as t', (j) => j.on(sql<boolean>`t.id = coalesce(p.token_id, pc.token_id)`))
    .select(PAYMENT_COLUMNS);
}

/** A payment row's token: its own, or (written before price charges) its charge's. */
export const paymentTokenId = sql<number>`coalesce(charge_payments.token_id, (select c.token_id from charges c where c.id = charge_payments.charge_id))`;

type RawPayment = Omit<PaymentRow, 'amount' | 'token_id'> & { amount: string; token_id: number };
const toPayment = (r: RawPayment): PaymentRow => ({
  ...r,
  token_id: Number(r.token_id),
  decimals: Number(r.decimals),
  amount: BigInt(r.amount),
  block_number: Number(r.block_number),
  block_timestamp: Number(r.block_timestamp),
  internal: Number(r.internal),
  screened: Number(r.screened),
});

/** A charge's payments, in chain order. */
export async function listPayments(db: Executor, chargeIds: number[], opts: { confirmedOnly: boolean }): Promise<PaymentRow[]> {
  if (chargeIds.length === 0) return [];
  let q = payments(db).where('p.charge_id', 'in', chargeIds);
  if (opts.confirmedOnly) q = q.where('p.confirmed', '=', 1);
  const rows = await q.orderBy('p.block_number', 'asc').orderBy('p.log_index', 'asc').orderBy('p.id', 'asc').execute();
  return rows.map(toPayment);
}

/** Payments of the network newly at or below the confirmed height (bounded, oldest first). */
export async function listNewlyConfirmed(
  db: Executor,
  networkId: number,
  height: number,
  limit: number,
): Promise<{ id: number; charge_id: number }[]> {
  return db
    .selectFrom('charge_payments')
    .select(['id', 'charge_id'])
    .where('network_id', '=', networkId)
    .where('confirmed', '=', 0)
    .where('block_number', '<=', height)
    .orderBy('block_number', 'asc')
    .orderBy('id', 'asc')
    .limit(limit)
    .execute();
}

export async function markConfirmed(trx: Executor, ids: number[]): Promise<void> {
  if (ids.length > 0) await trx.updateTable('charge_payments').set({ confirmed: 1 }).where('id', 'in', ids).execute();
}

/**
 * Late payments of settled charges not yet announced (bounded): confirmed, and stamped after
 * `expires_at` or mined above the block the settlement was decided on.
 */
export async function listUnannouncedLate(db: Executor, networkId: number, limit: number): Promise<PaymentRow[]> {
  const rows = await payments(db)
    .innerJoin('charges as c', 'c.id', 'p.charge_id')
    .where('p.network_id', '=', networkId)
    .where('p.confirmed', '=', 1)
    .where('p.notified', '=', 0)
    .where('c.status', '<>', 'pending')
    .where((eb) => eb.or([eb('p.block_timestamp', '>', eb.ref('c.expires_at')), eb('p.block_number', '>', eb.ref('c.settled_block'))]))
    .orderBy('p.id', 'asc')
    .limit(limit)
    .execute();
  return rows.map(toPayment);
}

/** Marks a late payment announced; false when another worker did it first. */
export async function markNotified(trx: Executor, id: number): Promise<boolean> {
  const r = await trx.updateTable('charge_payments').set({ notified: 1 }).where('id', '=', id).where('notified', '=', 0).executeTakeFirst();
  return Number(r.numUpdatedRows) === 1;
}

/**
 * Records that `charge.delayed` was written for a late payment; false when it was before (the
 * payment was removed by a reorg and brought back). Keyed by its transaction and its place among
 * that transaction's payments to the charge, which a log index moved by the reorg keeps.
 */
export async function recordAnnouncement(
  trx: Executor,
  p: Pick<PaymentRow, 'charge_id' | 'tx_hash' | 'log_index'> & { tx_hash: string },
  nowMs: number,
): Promise<boolean> {
  const r = await trx
    .insertInto('charge_late_announcements')
    .values({ charge_id: p.charge_id, tx_hash: p.tx_hash, ordinal: await ordinalOf(trx, p), created_at: nowMs })
    .onConflict((oc) => oc.columns(['charge_id', 'tx_hash', 'ordinal']).doNothing())
    .returning('id')
    .executeTakeFirst();
  return r !== undefined;
}

/** The payment's place among its transaction's payments to the charge (a reorg may move its log index, not its place). */
async function ordinalOf(trx: Executor, p: Pick<PaymentRow, 'charge_id' | 'log_index'> & { tx_hash: string }): Promise<number> {
  const before = await trx
    .selectFrom('charge_payments')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where('charge_id', '=', p.charge_id)
    .where('tx_hash', '=', p.tx_hash)
    .where('log_index', '<', p.log_index)
    .executeTakeFirstOrThrow();
  return Number(before.n);
}

/** Screened payments of the network, confirmed and not yet announced (bounded, oldest first). */
export async function listUnannouncedScreened(db: Executor, networkId: number, limit: number): Promise<PaymentRow[]> {
  const rows = await payments(db)
    .where('p.network_id', '=', networkId)
    .where('p.screened', '=', sql.lit(1)) // a literal: the partial index's predicate (migration 030)
    .where('p.screened_notified', '=', 0)
    .where('p.confirmed', '=', 1)
    .orderBy('p.id', 'asc')
    .limit(limit)
    .execute();
  return rows.map(toPayment);
}

/** Marks a screened payment announced; false when another worker did it first. */
export async function markScreenedNotified(trx: Executor, id: number): Promise<boolean> {
  const r = await trx
    .updateTable('charge_payments')
    .set({ screened_notified: 1 })
    .where('id', '=', id)
    .where('screened_notified', '=', 0)
    .executeTakeFirst();
  return Number(r.numUpdatedRows) === 1;
}

/**
 * Records that `charge.screened` was written for a screened payment; false when it was before
 * (the payment was removed by a reorg and brought back). Keyed as `recordAnnouncement` is.
 */
export async function recordScreenedAnnouncement(
  trx: Executor,
  p: Pick<PaymentRow, 'charge_id' | 'tx_hash' | 'log_index'> & { tx_hash: string },
  nowMs: number,
): Promise<boolean> {
  const r = await trx
    .insertInto('charge_screened_announcements')
    .values({ charge_id: p.charge_id, tx_hash: p.tx_hash, ordinal: await ordinalOf(trx, p), created_at: nowMs })
    .onConflict((oc) => oc.columns(['charge_id', 'tx_hash', 'ordinal']).doNothing())
    .returning('id')
    .executeTakeFirst();
  return r !== undefined;
}

/** How many payment rows each charge has (any block, confirmed or not). */
export async function countPaymentRows(db: Executor, chargeIds: number[]): Promise<Map<number, number>> {
  if (chargeIds.length === 0) return new Map();
  const rows = await db
    .selectFrom('charge_payments')
    .select((eb) => ['charge_id', eb.fn.countAll<number>().as('n')])
    .where('charge_id', 'in', chargeIds)
    .groupBy('charge_id')
    .execute();
  return new Map(rows.map((r) => [Number(r.charge_id), Number(r.n)]));
}

/**
 * A payment found on a settled charge's address by its balance after the address's watch ended
 * (the reconciliation's `after_watch`): no transaction the service saw, so no hash and no
 * sender; recorded confirmed at the block the balance was read at, stamped with that block's
 * time, so it is late and `charge.delayed` is written for it like any late payment
 * (charges.settlement.ts). The charge is due a sweep now.
 */
export async function recordFoundPayment(
  trx: Executor,
  p: {
    chargeId: number;
    networkId: number;
    tokenId: number;
    amount: bigint;
    block: number;
    blockHash: string | null;
    blockTimestampMs: number;
  },
  nowMs: number,
): Promise<void> {
  await trx
    .insertInto('charge_payments')
    .values({
      charge_id: p.chargeId,
      network_id: p.networkId,
      token_id: p.tokenId,
      tx_hash: null,
      log_index: 0,
      from_address: null,
      amount: p.amount.toString(),
      block_number: p.block,
      block_hash: p.blockHash,
      block_timestamp: p.blockTimestampMs,
      confirmed: 1,
      notified: 0,
      internal: 0,
      created_at: nowMs,
    })
    .execute();
  await makeSweepDue(trx, p.chargeId, nowMs);
}

/** The charge's row, locked until the end of the transaction (PostgreSQL; SQLite's transactions are serial). */
export async function lockCharge(trx: Executor, id: number): Promise<void> {
  await dialectOf(trx)
    .forUpdate(trx.selectFrom('charges').select('id').where('id', '=', id))
    .executeTakeFirst();
}

/** Pending charges of the network whose expiry is behind the confirmed chain time (bounded, earliest due first). */
export async function listExpirable(db: Executor, networkId: number, confirmedTimeMs: number, limit: number): Promise<number[]> {
  const rows = await db
    .selectFrom('charges as c')
    .innerJoin('wallets as w', 'w.id', 'c.wallet_id')
    .select('c.id')
    .where('w.network_id', '=', networkId)
    .where('c.status', '=', 'pending')
    .where('c.expires_at', '<', confirmedTimeMs)
    .orderBy('c.expires_at', 'asc')
    .orderBy('c.id', 'asc')
    .limit(limit)
    .execute();
  return rows.map((r) => r.id);
}

/** Records the confirmed amount (and fraction) of a still pending charge. */
export async function setPaidAmount(db: Executor, id: number, paid: { amount: bigint; fraction: bigint }, nowMs: number): Promise<void> {
  await db
    .updateTable('charges')
    .set({ paid_amount: paid.amount.toString(), paid_fraction: paid.fraction.toString(), updated_at: nowMs })
    .where('id', '=', id)
    .where('status', '=', 'pending')
    .where((eb) =>
      eb.or([
        sql<boolean>`paid_amount <> ${paid.amount.toString()}`,
        eb('paid_fraction', 'is', null),
        sql<boolean>`paid_fraction <> ${paid.fraction.toString()}`,
      ]),
    )
    .execute();
}

/**
 * Moves a pending charge to its final status. Only one caller can win (the WHERE on the current
 * status); returns the status announced before (null: never), or undefined when it lost.
 */
export async function settleCharge(
  trx: Executor,
  id: number,
  s: { status: 'paid' | 'expired' | 'failed'; paid: bigint; fraction: bigint; paidAt: number | null; block: number; nowMs: number },
): Promise<{ announced: string | null } | undefined> {
  const before = await trx
    .selectFrom('charges')
    .select('announced')
    .where('id', '=', id)
    .where('status', '=', 'pending')
    .executeTakeFirst();
  if (!before) return undefined;
  const r = await trx
    .updateTable('charges')
    .set({
      status: s.status,
      paid_amount: s.paid.toString(),
      paid_fraction: s.fraction.toString(),
      paid_at: s.paidAt,
      settled_block: s.block,
      announced: s.status,
      sweep_due_at: s.nowMs,
      updated_at: s.nowMs,
    })
    .where('id', '=', id)
    .where('status', '=', 'pending')
    .executeTakeFirst();
  return Number(r.numUpdatedRows) === 1 ? { announced: before.announced } : undefined;
}

/** What settlement needs of a charge. */
export interface ChargeTerms {
  id: number;
  status: string;
  amount: bigint;
  token_id: number;
  expires_at: number;
  settled_block: number | null;
  /** A price charge's quotes by token; null: only `amount` of `token_id` pays. */
  quotes: ReadonlyMap<number, bigint> | null;
}

export async function findTerms(db: Executor, id: number): Promise<ChargeTerms | undefined> {
  const r = await db
    .selectFrom('charges')
    .select(['id', 'status', 'amount', 'token_id', 'expires_at', 'settled_block', 'price_currency'])
    .where('id', '=', id)
    .executeTakeFirst();
  if (!r) return undefined;
  const quotes =
    r.price_currency === null
      ? null
      : new Map(
          (await db.selectFrom('charge_quotes').select(['token_id', 'amount']).where('charge_id', '=', id).execute()).map(
            (q) => [Number(q.token_id), BigInt(q.amount)] as const,
          ),
        );
  return {
    id: r.id,
    status: r.status,
    amount: BigInt(r.amount),
    token_id: Number(r.token_id),
    expires_at: Number(r.expires_at),
    settled_block: r.settled_block === null ? null : Number(r.settled_block),
    quotes,
  };
}

/** The charge's address is due a sweep now (a late payment arrived). */
export async function makeSweepDue(trx: Executor, id: number, nowMs: number): Promise<void> {
  await trx.updateTable('charges').set({ sweep_due_at: nowMs, updated_at: nowMs }).where('id', '=', id).execute();
}

/**
 * The follower's cursor of a network, locked until the end of the transaction (PostgreSQL: FOR
 * UPDATE; SQLite's transactions are already serial). The follower moves the cursor first in
 * each of its transactions, a reorg rollback included, so a settlement that reads it here
 * decides against the height that holds when it commits.
 */
export async function lockedCursorHeight(trx: Executor, networkId: number): Promise<number | undefined> {
  const q = trx.selectFrom('chain_cursors').select('block_number').where('network_id', '=', networkId);
  const r = await dialectOf(trx).forUpdate(q).executeTakeFirst();
  return r ? Number(r.block_number) : undefined;
}
