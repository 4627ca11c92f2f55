/** The public charge (JSON) and the checkout page (HTML) from one CheckoutRow. */
import QRCode from 'qrcode';
import { formatUnits18 } from '../../lib/money.js';
import { formatDateTime } from '../../lib/time.js';
import { paymentUri } from './checkout.links.js';
import { amountDue, checkoutPage } from './checkout.page.js';
import type { CheckoutRow } from './checkout.repository.js';

/** Exactly the contract's fields: nothing of the user, the wallet or the merchant's `info`. */
export function publicChargeView(c: CheckoutRow) {
  return {
    uuid: c.uuid,
    status: c.status,
    amount: formatUnits18(c.amount, c.decimals),
    paid_amount: formatUnits18(c.paid_amount, c.decimals),
    token: c.symbol,
    address: c.address,
    payment_uri: paymentUri(c),
    expires_at: formatDateTime(c.expires_at),
    content: c.content === null ? null : (JSON.parse(c.content) as Record<string, unknown>),
  };
}

/** The QR code of a payment URI as an SVG data: URL (drawn here, on the server, by `qrcode`). */
export async function qrDataUrl(uri: string): Promise<string> {
  const svg = await QRCode.toString(uri, { type: 'svg', errorCorrectionLevel: 'M', margin: 0, color: { dark: '#0f172aff', light: '#ffffffff' } });
  return `data:image/svg+xml;base64,${Buffer.from(svg).toString('base64')}`;
}

export async function checkoutPageView(c: CheckoutRow, opts: { nowMs: number; txHashes: string[] }): Promise<string> {
  const uri = paymentUri({ ...c, amount: amountDue(c) });
  return checkoutPage(c, { paymentUri: uri, qrDataUrl: await qrDataUrl(uri), ...opts });
}
