/**
 * The one read the public checkout makes: a charge by uuid with what a payer needs (deposit
 * address, token, chain, explorer, and a price charge's price and quotes). Nothing of the user,
 * the wallet or `info` is selected.
 */
import type { Executor } from '../../db/index.js';
import { listQuotes } from '../charges/charges.repository.js';

/** A token the charge may be paid in, and the amount of it that pays the charge whole. */
export interface CheckoutQuote {
  token_id: number;
  symbol: string;
  decimals: number;
  contract: string;
  is_native: number;
  /** Base units of the token. */
  amount: bigint;
}

export interface CheckoutRow {
  /** Internal: to look up the payments; never shown. */
  id: number;
  uuid: string;
  status: string;
  mode: string;
  amount: bigint;
  paid_amount: bigint;
  expires_at: number;
  content: string | null;
  address: string;
  symbol: string;
  decimals: number;
  contract: string;
  chain_id: number;
  network_name: string;
  block_explorer: string;
  /** Internal: the network (for the devnet's payer button) and whether the token is the native one. */
  network_id: number;
  is_native: number;
  /** Internal: the block the charge was settled on (null while pending), for telling a late payment. */
  settled_block: number | null;
  /** Internal: the charge's token (a price charge's first quote's). */
  token_id: number;
  /** A price charge's price (a decimal string of 2 places) and currency; null: a charge of `amount` of its token. */
  price_amount: string | null;
  price_currency: string | null;
  /** The counted payments over their quotes, 18-place fixed point; null until the settlement first wrote it. */
  paid_fraction: bigint | null;
  /** A price charge's quotes, in order (the first is the charge's token and amount); empty for a charge of one token. */
  quotes: CheckoutQuote[];
}

export async function findCheckoutCharge(db: Executor, uuid: string): Promise<CheckoutRow | undefined> {
  const r = await db
    .selectFrom('charges as c')
    .innerJoin('sub_wallets as s', 's.id', 'c.sub_wallet_id')
    .innerJoin('wallet_tokens as t', 't.id', 'c.token_id')
    .innerJoin('wallets as w', 'w.id', 'c.wallet_id')
    .innerJoin('networks as n', 'n.id', 'w.network_id')
    .select([
      'c.id',
      'c.uuid',
      'c.status',
      'c.mode',
      'c.amount',
      'c.paid_amount',
      'c.expires_at',
      'c.content',
      's.address',
      't.symbol',
      't.decimals',
      't.contract',
      'n.chain_id',
      'n.name as network_name',
      'n.block_explorer',
      'n.id as network_id',
      't.is_native',
      'c.settled_block',
      'c.token_id',
      'c.price_amount',
      'c.price_currency',
      'c.paid_fraction',
    ])
    .where('c.uuid', '=', uuid)
    .where('c.status', '<>', 'deposit') // a permanent deposit address's watch, not a charge
    .executeTakeFirst();
  if (!r) return undefined;
  const quotes = r.price_currency === null ? [] : await listQuotes(db, [r.id]);
  return {
    ...r,
    token_id: Number(r.token_id),
    amount: BigInt(r.amount),
    paid_amount: BigInt(r.paid_amount),
    paid_fraction: r.paid_fraction === null ? null : BigInt(r.paid_fraction),
    quotes: quotes.map((q) => ({
      token_id: q.token_id,
      symbol: q.symbol,
      decimals: q.decimals,
      contract: q.contract,
      is_native: q.is_native,
      amount: q.amount,
    })),
  };
}

/** Payments listed on the page (oldest first, bounded): a charge is paid in one or a few. */
const PAYMENTS_SHOWN_MAX = 20;

export interface CheckoutPaymentRow {
  tx_hash: string | null;
  /** The token paid in, with its symbol and decimals. */
  token_id: number;
  symbol: string;
  decimals: number;
  amount: bigint;
  block_number: number;
  block_timestamp: number;
  confirmed: number;
}

/**
 * The payments recorded on a charge's address, confirmed or not, but a screened sender's: those
 * never count and the page lists none (docs/charges.md, "Screened payments").
 */
export async function listCheckoutPayments(db: Executor, chargeId: number): Promise<CheckoutPaymentRow[]> {
  const rows = await db
    .selectFrom('charge_payments as p')
    .innerJoin('wallet_tokens as t', 't.id', 'p.token_id')
    .select(['p.tx_hash', 'p.token_id', 't.symbol', 't.decimals', 'p.amount', 'p.block_number', 'p.block_timestamp', 'p.confirmed'])
    .where('p.charge_id', '=', chargeId)
    .where('p.screened', '=', 0)
    .orderBy('p.block_number', 'asc')
    .orderBy('p.log_index', 'asc')
    .limit(PAYMENTS_SHOWN_MAX)
    .execute();
  return rows.map((r) => ({
    tx_hash: r.tx_hash,
    token_id: Number(r.token_id),
    symbol: r.symbol,
    decimals: Number(r.decimals),
    amount: BigInt(r.amount),
    block_number: Number(r.block_number),
    block_timestamp: Number(r.block_timestamp),
    confirmed: Number(r.confirmed),
  }));
}

/** Refunds shown on the page (oldest first, bounded). */
const REFUNDS_SHOWN_MAX = 10;

export interface CheckoutRefundRow {
  amount: bigint;
  tx_hash: string | null;
  tx_status: string;
}

/**
 * The charge's refunds that were sent (a transfer exists), with that transfer. A claim not yet
 * used is not listed: its link is a capability for the merchant to hand over, not for the page.
 */
export async function listCheckoutRefunds(db: Executor, chargeId: number): Promise<CheckoutRefundRow[]> {
  const rows = await db
    .selectFrom('refunds as r')
    .innerJoin('transactions as tx', 'tx.refund_id', 'r.id')
    .select(['r.amount', 'tx.tx_hash', 'tx.status as tx_status'])
    .where('r.charge_id', '=', chargeId)
    .where('tx.status', '<>', 'failed')
    .orderBy('r.id', 'asc')
    .limit(REFUNDS_SHOWN_MAX)
    .execute();
  return rows.map((r) => ({ amount: BigInt(r.amount), tx_hash: r.tx_hash, tx_status: r.tx_status }));
}
