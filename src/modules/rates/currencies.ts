/** The currencies a charge can be priced in, and how a rate is held. */

export const PRICE_CURRENCIES = ['USD', 'EUR', 'GBP'] as const;
export type PriceCurrency = (typeof PRICE_CURRENCIES)[number];

export function isPriceCurrency(v: unknown): v is PriceCurrency {
  return typeof v === 'string' && (PRICE_CURRENCIES as readonly string[]).includes(v);
}

/** A rate is fixed point with this many places: units of the currency for one whole token. */
export const RATE_DECIMALS = 18;
