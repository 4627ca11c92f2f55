/**
 * What the checkout page says about amounts (docs/charges.md, "What the page says"): in the
 * charge's token for a charge of one token; for a price charge (docs/prices.md), in shares of
 * its price ("40% paid") and in the tokens the payments were made in ("12 TUSD and 0.006 ETH"),
 * since a payment in any quoted token counts at its quote.
 */
import { formatUnits18 } from '../../lib/money.js';
import type { CheckoutRow } from './checkout.repository.js';
import {
  amountDue,
  confirmingPayments,
  countedShare,
  isPriceCharge,
  latePayments,
  seenAmount,
  seenShare,
  type SeenPayment,
  type Share,
} from './checkout.state.js';

/** An 18-place amount without its trailing zeros: `0.250000000000000000` → `0.25`. */
export function shortAmount(units: bigint, decimals: number): string {
  return formatUnits18(units, decimals).replace(/\.?0+$/, '');
}

/** The texts each state's panel takes from the amounts (checkout.page.ts). */
export interface StateTexts {
  partial: string;
  confirming: string;
  paid: string;
  failed: string;
  missing: string;
  late: string;
}

export function stateTexts(c: CheckoutRow, ps: SeenPayment[]): StateTexts {
  return isPriceCharge(c) ? priceTexts(c, ps) : tokenTexts(c, ps);
}

/** A charge of one token: every amount in it. */
function tokenTexts(c: CheckoutRow, ps: SeenPayment[]): StateTexts {
  const t = (units: bigint) => `${shortAmount(units, c.decimals)} ${c.symbol}`;
  const confirming = confirmingPayments(ps).reduce((a, p) => a + p.amount, 0n);
  const missing = c.amount > c.paid_amount ? c.amount - c.paid_amount : 0n;
  const over = c.paid_amount > c.amount ? ` (${t(c.paid_amount - c.amount)} more than asked).` : '.';
  return {
    partial: `Received ${t(seenAmount(c, ps))}${confirming > 0n ? ` (${t(confirming)} of it still confirming)` : ''}. Send the remaining ${t(amountDue(c, ps))}.`,
    confirming: `${t(confirming)} reached the address and is waiting for the network’s confirmations.`,
    paid: `${t(c.paid_amount)} received${over}`,
    failed: `Received ${shortAmount(c.paid_amount, c.decimals)} of ${t(c.amount)} before the request expired.`,
    missing: `${t(missing)} missing`,
    late: `${t(latePayments(ps).reduce((a, p) => a + p.amount, 0n))}`,
  };
}

/** A price charge: progress as a share of the price, what arrived in the tokens it arrived in. */
function priceTexts(c: CheckoutRow, ps: SeenPayment[]): StateTexts {
  const price = `${c.price_amount!} ${c.price_currency!}`;
  const counted = countedShare(c);
  const seen = seenShare(c, ps);
  const confirming = confirmingPayments(ps);
  const received = ps.filter((p) => p.confirmed && !p.late);
  const inTokens = received.length === 0 ? '' : ` (${tokenAmounts(received)})`;
  const over = counted.num > counted.den ? ` (${percentText({ num: counted.num - counted.den, den: counted.den })} more than asked).` : '.';
  const verb = new Set(confirming.map((p) => p.token_id)).size > 1 ? 'are' : 'is';
  return {
    partial: `${sentenceCase(percentText(seen))} paid${confirming.length > 0 ? ` (${tokenAmounts(confirming)} of it still confirming)` : ''}. Send the remaining ${priceShareText(c, rest(seen))} in the token you pick.`,
    confirming: `${tokenAmounts(confirming)} reached the address and ${verb} waiting for the network’s confirmations.`,
    paid: received.length === 0 ? `${price} received${over}` : `${tokenAmounts(received)} received for ${price}${over}`,
    failed: `Received ${percentText(counted)} of ${price}${inTokens} before the request expired.`,
    missing: `${priceShareText(c, rest(counted))} missing`,
    late: tokenAmounts(latePayments(ps)),
  };
}

const sentenceCase = (text: string) => text.charAt(0).toUpperCase() + text.slice(1);

/** What is left of the whole after `s` (nothing once `s` reaches it). */
const rest = (s: Share): Share => ({ num: s.num < s.den ? s.den - s.num : 0n, den: s.den });

/** A share as a whole percentage, rounded down ("40%"); a share above nothing never shows as 0%. */
export function percentText(s: Share): string {
  const pct = (s.num * 100n) / s.den;
  return pct === 0n && s.num > 0n ? 'less than 1%' : `${pct}%`;
}

/** The share `s` of a price charge's price, in cents rounded up: `15.00 USD`. */
export function priceShareText(c: CheckoutRow, s: Share): string {
  const [units, cents = ''] = c.price_amount!.split('.');
  const price = BigInt(units!) * 100n + BigInt(cents.padEnd(2, '0').slice(0, 2));
  const part = (price * s.num + s.den - 1n) / s.den;
  return `${part / 100n}.${String(part % 100n).padStart(2, '0')} ${c.price_currency!}`;
}

/** Payments summed per token, in the order each token was first paid: "12 TUSD and 0.006 ETH". */
export function tokenAmounts(ps: ReadonlyArray<Pick<SeenPayment, 'symbol' | 'decimals' | 'amount'>>): string {
  const sums = new Map<string, { decimals: number; amount: bigint }>();
  for (const p of ps) sums.set(p.symbol, { decimals: p.decimals, amount: (sums.get(p.symbol)?.amount ?? 0n) + p.amount });
  const parts = [...sums].map(([symbol, s]) => `${shortAmount(s.amount, s.decimals)} ${symbol}`);
  return parts.length <= 2 ? parts.join(' and ') : `${parts.slice(0, -1).join(', ')} and ${parts[parts.length - 1]!}`;
}
