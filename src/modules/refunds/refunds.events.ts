/** `charge.refunded`: written by the chain watcher in the transaction that confirms the refund's transfer. */
import type { Executor } from '../../db/index.js';
import { recordEvent } from '../events/outbox.js';
import { findChargeById } from '../charges/charges.repository.js';
import { findRefund } from './refunds.repository.js';
import type { ChargeRow } from '../charges/charges.repository.js';
import { chargeStateFields } from '../charges/charges.views.js';
import type { RefundRow } from './refunds.repository.js';
import { refundView } from './refunds.views.js';
import { formatDateTime } from '../../lib/time.js';

/** Caller holds the wallet's lock and its user's event order (the watcher's settle batch). */
export async function announceRefunded(trx: Executor, refundId: number, userId: number, nowMs: number, publicUrl: string): Promise<void> {
  const refund = await findRefund(trx, refundId);
  const charge = refund ? await findChargeById(trx, refund.charge_id) : undefined;
  if (!refund || !charge) return;
  await recordEvent(trx, {
    userId,
    walletId: charge.wallet_id,
    name: 'charge.refunded',
    payload: chargeRefundedPayload(charge, refund, nowMs, publicUrl),
    nowMs,
  });
}

/** charge.refunded: the charge's fields (as in charge.paid) and the confirmed `refund`. */
export function chargeRefundedPayload(c: ChargeRow, r: RefundRow, atMs: number, publicUrl: string) {
  return {
    ...chargeStateFields(c),
    // Unmasked: the payload goes to the merchant's own endpoint (and `GET /api/events`, which
    // shows what a webhook receives). It is written when the transfer confirms, so a claim's
    // link in it is spent (a claimed refund is never claimable again).
    refund: refundView(r, atMs, publicUrl, true),
    refunded_at: formatDateTime(atMs),
  };
}
