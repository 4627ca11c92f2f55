/** charges and sub_wallets rows. */
import type { Executor } from '../../db/index.js';
import type { SecretPlace } from '../../lib/crypto.js';
import type { PaymentRow } from './charges.payments.repository.js';
import type { RefundRow } from '../refunds/refunds.repository.js';
import type { SweepRow } from './charges.sweeps.repository.js';

export interface ChargeRow {
  id: number;
  uuid: string;
  wallet_id: number;
  sub_wallet_id: number;
  token_id: number;
  amount: bigint;
  paid_amount: bigint;
  status: string;
  mode: string;
  expires: number;
  expires_at: number;
  paid_at: number | null;
  content: string | null;
  info: string | null;
  swept_tx_hash: string | null;
  /** The block a settlement was decided on (null while pending): payments above it are late. */
  settled_block: number | null;
  /** A price charge's price (a decimal string of 2 places) and currency; null: a charge made with `amount` and `token`. */
  price_amount: string | null;
  price_currency: string | null;
  /** The counted payments over their quotes, 18-place fixed point (null until the settlement first wrote it). */
  paid_fraction: bigint | null;
  created_at: number;
  updated_at: number;
  /** Attached by the service: the confirmed payments and the sweeps (charges.service.ts `withActivity`). */
  payments?: PaymentRow[];
  sweeps?: SweepRow[];
  /** Attached with them: the refunds, and the time they were read (a claim's status depends on it). */
  refunds?: RefundRow[];
  /** Attached with them: a price charge's quotes, in order (empty for a charge of one token). */
  quotes?: QuoteRow[];
  viewed_at?: number;
  /** Joined: the deposit address, its kind (`keyed`: a derived key; `keyless`: an address of `sweeper` by `salt`), and the token. */
  address: string;
  deposit_kind: 'keyed' | 'keyless';
  salt: string | null;
  sweeper: string | null;
  symbol: string;
  decimals: number;
  contract: string;
  /** Joined: the network's chain id (for the charge's payment_uri). */
  chain_id: number;
}

/**
 * The status of the charge row behind a permanent deposit address (src/modules/deposit-addresses):
 * never pending, never settled, watched for good; it is how the follower watches the address and
 * the charge worker sweeps it. Never shown as a charge (`findCharge`, `listCharges`, the checkout).
 */
export const DEPOSIT_STATUS = 'deposit';

function charges(db: Executor) {
  return db
    .selectFrom('charges as c')
    .innerJoin('sub_wallets as s', 's.id', 'c.sub_wallet_id')
    .innerJoin('wallet_tokens as t', 't.id', 'c.token_id')
    .innerJoin('wallets as w', 'w.id', 'c.wallet_id')
    .innerJoin('networks as n', 'n.id', 'w.network_id')
    .select([
      'c.id',
      'c.uuid',
      'c.wallet_id',
      'c.sub_wallet_id',
      'c.token_id',
      'c.amount',
      'c.paid_amount',
      'c.status',
      'c.mode',
      'c.expires',
      'c.expires_at',
      'c.paid_at',
      'c.content',
      'c.info',
      'c.swept_tx_hash',
      'c.settled_block',
      'c.price_amount',
      'c.price_currency',
      'c.paid_fraction',
      'c.created_at',
      'c.updated_at',
      's.address',
      's.kind as deposit_kind',
      's.salt',
      's.sweeper',
      't.symbol',
      't.decimals',
      't.contract',
      'n.chain_id',
    ]);
}

type RawCharge = Omit<ChargeRow, 'amount' | 'paid_amount' | 'paid_fraction' | 'deposit_kind'> & {
  amount: string;
  paid_amount: string;
  paid_fraction: string | null;
  deposit_kind: string;
};

function toRow(r: RawCharge): ChargeRow {
  return {
    ...r,
    deposit_kind: r.deposit_kind === 'keyless' ? 'keyless' : 'keyed',
    amount: BigInt(r.amount),
    paid_amount: BigInt(r.paid_amount),
    paid_fraction: r.paid_fraction === null ? null : BigInt(r.paid_fraction),
  };
}

/** A price charge's quote: `amount` of the token pays the price, at `rate` (the currency's units for one whole token). */
export interface QuoteRow {
  charge_id: number;
  position: number;
  token_id: number;
  symbol: string;
  decimals: number;
  contract: string;
  is_native: number;
  amount: bigint;
  rate: string;
  rate_source: string;
  rate_at: number;
}

/** The quotes of some charges, each charge's in order. */
export async function listQuotes(db: Executor, chargeIds: number[]): Promise<QuoteRow[]> {
  if (chargeIds.length === 0) return [];
  const rows = await db
    .selectFrom('charge_quotes as q')
    .innerJoin('wallet_tokens as t', 't.id', 'q.token_id')
    .select(['q.charge_id', 'q.position', 'q.token_id', 't.symbol', 't.decimals', 't.contract', 't.is_native'])
    .select(['q.amount', 'q.rate', 'q.rate_source', 'q.rate_at'])
    .where('q.charge_id', 'in', chargeIds)
    .orderBy('q.charge_id', 'asc')
    .orderBy('q.position', 'asc')
    .execute();
  return rows.map((r) => ({
    ...r,
    charge_id: Number(r.charge_id),
    position: Number(r.position),
    token_id: Number(r.token_id),
    decimals: Number(r.decimals),
    is_native: Number(r.is_native),
    amount: BigInt(r.amount),
    rate_at: Number(r.rate_at),
  }));
}

/** A price charge's quotes, in order (inside its create transaction). */
export async function insertQuotes(
  db: Executor,
  chargeId: number,
  quotes: ReadonlyArray<{ token_id: number; amount: bigint; rate: string; rate_source: string; rate_at: number }>,
): Promise<void> {
  await db
    .insertInto('charge_quotes')
    .values(quotes.map((q, position) => ({ ...q, charge_id: chargeId, position, amount: q.amount.toString() })))
    .execute();
}

export async function findCharge(db: Executor, walletId: number, ref: { id: number } | { uuid: string }): Promise<ChargeRow | undefined> {
  let q = charges(db).where('c.wallet_id', '=', walletId).where('c.status', '<>', DEPOSIT_STATUS);
  q = 'id' in ref ? q.where('c.id', '=', ref.id) : q.where('c.uuid', '=', ref.uuid);
  const r = await q.executeTakeFirst();
  return r ? toRow(r) : undefined;
}

export async function findChargeById(db: Executor, id: number): Promise<ChargeRow | undefined> {
  const r = await charges(db).where('c.id', '=', id).executeTakeFirst();
  return r ? toRow(r) : undefined;
}

export async function listCharges(db: Executor, walletId: number, page: { offset: number; limit: number }): Promise<ChargeRow[]> {
  const rows = await charges(db)
    .where('c.wallet_id', '=', walletId)
    .where('c.status', '<>', DEPOSIT_STATUS)
    .orderBy('c.id', 'desc')
    .limit(page.limit)
    .offset(page.offset)
    .execute();
  return rows.map(toRow);
}

/**
 * The list's charges (never a deposit address's row) with id above `afterId` and `created_at` in
 * [fromMs, toMs), oldest first, at most `limit`: a page of the CSV export's keyset walk.
 */
export async function listChargesAfter(
  db: Executor,
  walletId: number,
  afterId: number,
  range: { fromMs: number; toMs: number },
  limit: number,
): Promise<ChargeRow[]> {
  const rows = await charges(db)
    .where('c.wallet_id', '=', walletId)
    .where('c.status', '<>', DEPOSIT_STATUS)
    .where('c.id', '>', afterId)
    .where('c.created_at', '>=', range.fromMs)
    .where('c.created_at', '<', range.toMs)
    .orderBy('c.id', 'asc')
    .limit(limit)
    .execute();
  return rows.map(toRow);
}

export async function countCharges(db: Executor, walletId: number): Promise<number> {
  const r = await db
    .selectFrom('charges')
    .select(db.fn.countAll<number>().as('n'))
    .where('wallet_id', '=', walletId)
    .where('status', '<>', DEPOSIT_STATUS)
    .executeTakeFirstOrThrow();
  return Number(r.n);
}

/** Takes the next sub-wallet index of a wallet (caller holds the wallet lock, `lockWallet`). */
export async function takeSubIndex(db: Executor, walletId: number): Promise<number> {
  const row = await db.selectFrom('wallets').select(['next_sub_index']).where('id', '=', walletId).executeTakeFirstOrThrow();
  await db
    .updateTable('wallets')
    .set({ next_sub_index: row.next_sub_index + 1 })
    .where('id', '=', walletId)
    .execute();
  return row.next_sub_index;
}

/** Where a deposit address's encrypted key lives (its AES-GCM associated data, src/lib/crypto.ts). */
export function subWalletPlace(id: number): SecretPlace {
  return { table: 'sub_wallets', column: 'private_key_enc', id };
}

/**
 * Inserts a deposit address; its key is encrypted by `seal` once the row has its id (bound to it),
 * in the same transaction. A keyless one (`kind`, `salt`, `sweeper`) seals the empty string.
 */
export async function insertSubWallet(
  db: Executor,
  s: { wallet_id: number; derivation_index: number; address: string; kind?: 'keyed' | 'keyless'; salt?: string; sweeper?: string },
  seal: (id: number) => string,
  nowMs: number,
) {
  const r = await db
    .insertInto('sub_wallets')
    .values({ ...s, private_key_enc: '', created_at: nowMs })
    .returning('id')
    .executeTakeFirstOrThrow();
  await db
    .updateTable('sub_wallets')
    .set({ private_key_enc: seal(r.id) })
    .where('id', '=', r.id)
    .execute();
  return r.id;
}

export async function subWalletKey(db: Executor, subWalletId: number): Promise<string> {
  const r = await db.selectFrom('sub_wallets').select('private_key_enc').where('id', '=', subWalletId).executeTakeFirstOrThrow();
  return r.private_key_enc;
}

export async function insertCharge(
  db: Executor,
  c: {
    uuid: string;
    wallet_id: number;
    sub_wallet_id: number;
    token_id: number;
    amount: bigint;
    mode: string;
    expires: number;
    expires_at: number;
    content: string | null;
    info: string | null;
    watch_until: number;
    /** A price charge's price and quoted tokens (`charges.quote_tokens`). */
    price_amount?: string;
    price_currency?: string;
    quote_tokens?: string;
    /** `pending` (a charge), or `deposit` (a permanent deposit address's watch: `DEPOSIT_STATUS`). */
    status?: string;
  },
  nowMs: number,
): Promise<number> {
  const r = await db
    .insertInto('charges')
    .values({
      ...c,
      amount: c.amount.toString(),
      paid_amount: '0',
      status: c.status ?? 'pending',
      paid_at: null,
      swept_tx_hash: null,
      created_at: nowMs,
      updated_at: nowMs,
    })
    .returning('id')
    .executeTakeFirstOrThrow();
  return r.id;
}
