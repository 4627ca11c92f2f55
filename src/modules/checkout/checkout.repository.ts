/**
 * The one read the public checkout makes: a charge by uuid with what a payer needs (deposit
 * address, token, chain, explorer). Nothing of the user, the wallet or `info` is selected.
 */
import type { Executor } from '../../db/index.js';

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
    ])
    .where('c.uuid', '=', uuid)
    .where('c.status', '<>', 'deposit') // a permanent deposit address's watch, not a charge
    .executeTakeFirst();
  return r ? { ...r, amount: BigInt(r.amount), paid_amount: BigInt(r.paid_amount) } : undefined;
}

/** Payment transactions shown on a paid page (the confirmed, counted ones, oldest first, bounded). */
const PAYMENT_LINKS_MAX = 5;

export async function listPaymentHashes(db: Executor, chargeId: number): Promise<string[]> {
  const rows = await db
    .selectFrom('charge_payments')
    .select('tx_hash')
    .where('charge_id', '=', chargeId)
    .where('confirmed', '=', 1)
    .where('tx_hash', 'is not', null) // a payment found by the balance has no transaction to link
    .where('screened', '=', 0) // a screened sender's payment paid nothing (docs/charges.md, "Screening")
    .orderBy('block_number', 'asc')
    .orderBy('log_index', 'asc')
    .limit(PAYMENT_LINKS_MAX)
    .execute();
  return [...new Set(rows.flatMap((r) => (r.tx_hash === null ? [] : [r.tx_hash])))];
}
