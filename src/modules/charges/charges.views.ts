/** The Charge as the API and the charge events show it. */
import { formatUnits18 } from '../../lib/money.js';
import { formatDateTime, formatDateTimeOrNull } from '../../lib/time.js';
import { hostedUrl, paymentUri } from '../checkout/checkout.links.js';
import type { ChargeRow, QuoteRow } from './charges.repository.js';
import type { PaymentRow } from './charges.payments.repository.js';
import type { SweepRow } from './charges.sweeps.repository.js';
import { FRACTION_DECIMALS, isLate } from './charges.decide.js';
import { refundView } from '../refunds/refunds.views.js';

function parseObject(text: string | null): Record<string, unknown> | null {
  return text === null ? null : (JSON.parse(text) as Record<string, unknown>);
}

/**
 * `publicUrl`: where payers reach the service (config.publicUrl), for `hosted_url`.
 * `refundLinks`: whether the caller sees its refunds' `uuid` and `claim_url` (`showsRefundLinks`).
 */
export function chargeView(c: ChargeRow, publicUrl: string, refundLinks: boolean) {
  return {
    id: c.id,
    uuid: c.uuid,
    wallet_id: c.wallet_id,
    sub_wallet_id: c.sub_wallet_id,
    token_id: c.token_id,
    token: c.symbol,
    address: c.address,
    deposit_kind: c.deposit_kind,
    amount: formatUnits18(c.amount, c.decimals),
    paid_amount: formatUnits18(c.paid_amount, c.decimals),
    paid_fraction: formatUnits18(paidFraction(c), FRACTION_DECIMALS),
    price: c.price_amount === null ? null : { amount: c.price_amount, currency: c.price_currency! },
    quotes: (c.quotes ?? []).map(quoteView),
    status: c.status,
    mode: c.mode,
    expires: c.expires,
    expires_at: formatDateTime(c.expires_at),
    paid_at: formatDateTimeOrNull(c.paid_at),
    content: parseObject(c.content),
    info: parseObject(c.info),
    created_at: formatDateTime(c.created_at),
    updated_at: formatDateTime(c.updated_at),
    payments: (c.payments ?? []).map((p) => paymentView(c, p)),
    sweeps: (c.sweeps ?? []).map(sweepView),
    refunds: (c.refunds ?? []).map((r) => refundView(r, c.viewed_at ?? c.updated_at, publicUrl, refundLinks)),
    hosted_url: hostedUrl(publicUrl, c.uuid),
    payment_uri: paymentUri(c),
  };
}

/**
 * The fraction paid: as the settlement last wrote it; a charge it has not written yet (nothing
 * counted, or a charge made before fractions were kept) by its `paid_amount` over `amount`.
 */
export function paidFraction(c: Pick<ChargeRow, 'paid_fraction' | 'paid_amount' | 'amount'>): bigint {
  if (c.paid_fraction !== null) return c.paid_fraction;
  return c.amount === 0n ? 0n : (c.paid_amount * 10n ** BigInt(FRACTION_DECIMALS)) / c.amount;
}

/** A price charge's quote: the amount of a token that pays the price, at the rate read at creation. */
export function quoteView(q: QuoteRow) {
  return {
    token: q.symbol,
    token_id: q.token_id,
    amount: formatUnits18(q.amount, q.decimals),
    rate: q.rate,
    rate_source: q.rate_source,
    rate_at: formatDateTime(q.rate_at),
  };
}

/** charge.created: its documented fields (docs/webhooks.md, "What a delivery looks like"). */
export function chargeCreatedPayload(c: ChargeRow) {
  return {
    charge_id: c.id,
    wallet_id: c.wallet_id,
    amount: formatUnits18(c.amount, c.decimals),
    token: c.symbol,
    uuid: c.uuid,
    status: c.status,
    expires: c.expires,
    created_at: formatDateTime(c.created_at),
  };
}

/** charge.paid / charge.expired / charge.failed: charge.created's fields plus the outcome. */
export function chargeFinishedPayload(c: ChargeRow, status: 'paid' | 'expired' | 'failed', atMs: number) {
  return {
    ...chargeCreatedPayload(c),
    status,
    address: c.address,
    paid_amount: formatUnits18(c.paid_amount, c.decimals),
    [`${status}_at`]: formatDateTime(atMs),
  };
}

/** charge.reopened: a reorg returned a settled charge to `pending`; charge.paid's fields, `reopened_at`. */
export function chargeReopenedPayload(c: ChargeRow, atMs: number) {
  return {
    ...chargeCreatedPayload(c),
    status: 'pending',
    address: c.address,
    paid_amount: formatUnits18(c.paid_amount, c.decimals),
    reopened_at: formatDateTime(atMs),
  };
}

/** A payment to the charge's address, as `payments[]`, `charge.delayed` and `charge.screened` show it. */
export function paymentView(c: ChargeRow, p: PaymentRow) {
  return {
    tx_hash: p.tx_hash,
    from: p.from_address,
    token: p.symbol,
    amount: formatUnits18(p.amount, p.decimals),
    block_number: p.block_number,
    block_timestamp: formatDateTime(p.block_timestamp),
    late: isLate(p, c),
    internal: p.internal === 1,
    screened: p.screened === 1,
  };
}

/** A transfer out of the charge's address to the main address. */
export function sweepView(s: SweepRow) {
  return {
    tx_hash: s.tx_hash,
    token: s.symbol,
    amount: formatUnits18(s.amount, s.decimals),
    status: s.status,
    reason: s.status === 'failed' ? (s.error ?? 'failed') : null,
    created_at: formatDateTime(s.created_at),
  };
}

/** The fields of charge.paid without its time: those of charge.created, the status, the address and what was paid. */
export function chargeStateFields(c: ChargeRow) {
  return { ...chargeCreatedPayload(c), status: c.status, address: c.address, paid_amount: formatUnits18(c.paid_amount, c.decimals) };
}

/** charge.delayed: the charge's fields (as in charge.paid) and the late `payment`. */
export function chargeDelayedPayload(c: ChargeRow, p: PaymentRow) {
  return { ...chargeStateFields(c), payment: paymentView(c, p) };
}

/** charge.screened: the charge's fields (as in charge.paid) and the `payment` from a screened sender (not counted). */
export function chargeScreenedPayload(c: ChargeRow, p: PaymentRow) {
  return { ...chargeStateFields(c), payment: paymentView(c, p) };
}
