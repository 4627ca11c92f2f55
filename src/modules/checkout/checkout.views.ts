/** The public charge (JSON) and the checkout page (HTML) from one CheckoutRow. */
import { renderSVG } from 'uqr';
import { formatUnits18 } from '../../lib/money.js';
import { formatDateTime } from '../../lib/time.js';
import { FRACTION_DECIMALS } from '../charges/charges.decide.js';
import { paidFraction } from '../charges/charges.views.js';
import { paymentUri } from './checkout.links.js';
import { checkoutPage, type Offer } from './checkout.page.js';
import type { CheckoutRow } from './checkout.repository.js';
import { checkoutState, dueIn, OPEN_STATES, quotesOf, seenShare, type SeenPayment, type SentRefund } from './checkout.state.js';

/**
 * The contract's fields (nothing of the user, the wallet or the merchant's `info`), and what the
 * page needs besides: its `state`, the service's clock (`now_ms`), the payments seen (each in its
 * token) and the refunds sent back; for a price charge its `price`, `paid_fraction` and each
 * quote with its own `payment_uri` (the whole quote, as the charge's own `payment_uri` is the
 * whole amount).
 */
export function publicChargeView(c: CheckoutRow, facts: { payments: SeenPayment[]; refunds: SentRefund[] }, nowMs: number) {
  const { payments, refunds } = facts;
  return {
    uuid: c.uuid,
    status: c.status,
    amount: formatUnits18(c.amount, c.decimals),
    paid_amount: formatUnits18(c.paid_amount, c.decimals),
    token: c.symbol,
    address: c.address,
    payment_uri: paymentUri(c),
    price: c.price_amount === null ? null : { amount: c.price_amount, currency: c.price_currency! },
    paid_fraction: formatUnits18(paidFraction(c), FRACTION_DECIMALS),
    quotes: c.quotes.map((q) => ({
      token: q.symbol,
      amount: formatUnits18(q.amount, q.decimals),
      payment_uri: paymentUri({ address: c.address, contract: q.contract, chain_id: c.chain_id, amount: q.amount }),
    })),
    expires_at: formatDateTime(c.expires_at),
    content: c.content === null ? null : (JSON.parse(c.content) as Record<string, unknown>),
    state: checkoutState(c, payments, nowMs),
    now_ms: nowMs,
    payments: payments.map((p) => ({
      tx_hash: p.tx_hash,
      token: p.symbol,
      amount: formatUnits18(p.amount, p.decimals),
      confirmed: p.confirmed,
      late: p.late,
    })),
    refunds: refunds.map((r) => ({ amount: formatUnits18(r.amount, c.decimals), tx_hash: r.tx_hash, confirmed: r.confirmed })),
  };
}

/**
 * The QR code of a payment URI as an SVG data: URL, drawn here on the server by `uqr` (no
 * dependencies; `qrcode` pulled a CLI argument parser into the runtime). The SVG gets explicit
 * width and height (uqr gives only a viewBox) so the image has an intrinsic size everywhere.
 */
export async function qrDataUrl(uri: string): Promise<string> {
  const svg = renderSVG(uri, { ecc: 'M', border: 0, pixelSize: QR_MODULE_PX, blackColor: '#0f172a', whiteColor: '#ffffff' });
  const side = /viewBox="0 0 (\d+) (\d+)"/.exec(svg);
  const sized = side ? svg.replace('<svg ', `<svg width="${side[1]}" height="${side[2]}" `) : svg;
  return `data:image/svg+xml;base64,${Buffer.from(sized).toString('base64')}`;
}

/** Pixels per QR module in the SVG's own coordinates (the page scales the image). */
const QR_MODULE_PX = 8;

/**
 * The page. Each token the charge may be paid in is offered for what is still due in it, its
 * payment URI asking for that; the QR codes are drawn only while the page offers payment.
 */
export async function checkoutPageView(
  c: CheckoutRow,
  opts: { nowMs: number; payments: SeenPayment[]; refunds: SentRefund[] },
): Promise<string> {
  const state = checkoutState(c, opts.payments, opts.nowMs);
  const seen = seenShare(c, opts.payments);
  const offers: Offer[] = [];
  for (const quote of quotesOf(c)) {
    const due = dueIn(quote, seen);
    const uri = paymentUri({ address: c.address, contract: quote.contract, chain_id: c.chain_id, amount: due });
    offers.push({ quote, due, uri, qr: OPEN_STATES.includes(state) ? await qrDataUrl(uri) : '' });
  }
  return checkoutPage(c, { offers, state, ...opts });
}
