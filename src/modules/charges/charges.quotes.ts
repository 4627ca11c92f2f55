/**
 * A price charge's quotes (docs/prices.md): at creation, the rate of each token it may be paid in
 * is read (src/modules/rates: manual, then the network's price feed, then a pegged stablecoin)
 * and locked into the amount of that token that pays the price, rounded up to the token's
 * decimals, so that every quote covers the price. A token asked for without a fresh rate refuses
 * the charge whole (503 with Retry-After); without `tokens`, the active tokens that have no rate
 * are left out, and none with a rate is the same 503 for the first of them.
 */
import { NATIVE_CONTRACT } from '../../chain/erc20.js';
import type { NetworkRow, WalletTokenRow } from '../../db/types.js';
import { AppError } from '../../errors.js';
import { parseAmount } from '../../lib/money.js';
import { RATE_DECIMALS, type PriceCurrency } from '../rates/currencies.js';
import type { Rate, RateService } from '../rates/rates.service.js';

/** A rate missing now may be there soon (a feed's next report, an operator's `rate:set`): asked again after this. */
export const NO_RATE_RETRY_AFTER_S = 60;

export interface Quote {
  token: WalletTokenRow;
  /** Base units of the token that pay the price. */
  amount: bigint;
  rate: Rate;
}

/** The token amount that pays `price` (RATE_DECIMALS places) at `rate` (the same places), rounded up: `amount * rate >= price`. */
export function quoteAmount(price: bigint, rate: bigint, decimals: number): bigint {
  const scaled = price * 10n ** BigInt(decimals);
  return (scaled + rate - 1n) / rate;
}

/** Active tokens in the default order: the native coin first, then by when they were added. */
function defaultOrder(tokens: WalletTokenRow[]): WalletTokenRow[] {
  return [...tokens].sort((a, b) => b.is_native - a.is_native || a.id - b.id);
}

export function noFreshRate(symbol: string, currency: string): AppError {
  return new AppError(503, 'NO_FRESH_RATE', `No fresh rate for ${symbol}/${currency}`, {
    headers: { 'retry-after': String(NO_RATE_RETRY_AFTER_S) },
  });
}

/** Reads the rates and returns the quotes in order (node reads: never inside a database transaction). */
export async function quotePrice(
  rates: RateService,
  network: NetworkRow,
  price: { amount: string; currency: PriceCurrency; tokens: WalletTokenRow[] | null },
  active: WalletTokenRow[],
): Promise<Quote[]> {
  const asked = price.tokens ?? defaultOrder(active);
  const fixed = parseAmount(price.amount, RATE_DECIMALS);
  const quotes: Quote[] = [];
  for (const token of asked) {
    const rate = await rates.rateFor(
      network,
      { symbol: token.symbol, contract: token.is_native === 1 ? null : token.contract },
      price.currency,
    );
    if (rate === null) {
      if (price.tokens !== null) throw noFreshRate(token.symbol, price.currency);
      continue;
    }
    quotes.push({ token, amount: quoteAmount(fixed, rate.value, token.decimals), rate });
  }
  if (quotes.length === 0) throw noFreshRate(asked[0]?.symbol ?? network.currency_symbol, price.currency);
  return quotes;
}

/** `charges.quote_tokens`: the contracts the chain follower matches the charge's payments on. */
export function quoteTokensText(quotes: readonly Quote[]): string {
  return JSON.stringify(
    quotes.map((q) => ({ token_id: q.token.id, contract: q.token.is_native === 1 ? NATIVE_CONTRACT : q.token.contract.toLowerCase() })),
  );
}
