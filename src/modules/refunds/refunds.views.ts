/** The Refund as the API, the charge and `charge.refunded` show it, and its public side. */
import { formatUnits18 } from '../../lib/money.js';
import { formatDateTime, formatDateTimeOrNull } from '../../lib/time.js';
import { allows, type KeyScope } from '../keys/keys.scopes.js';
import type { RefundRow } from './refunds.repository.js';

export type RefundStatus = 'claimable' | 'pending' | 'confirmed' | 'failed' | 'expired';

/**
 * Its transfer's status (awaiting approval counts as pending); with no transfer yet, a claim is
 * `claimable` until `claim_expires_at`, then `expired` (read at this time, no worker needed).
 */
export function refundStatus(r: RefundRow, nowMs: number): RefundStatus {
  if (r.tx_status === null) return r.claim_expires_at !== null && r.claim_expires_at <= nowMs ? 'expired' : 'claimable';
  if (r.tx_status === 'confirmed') return 'confirmed';
  if (r.tx_status === 'failed') return 'failed';
  return 'pending';
}

/** What the refunds not failed or expired hold of what the charge received. */
export function committedAmount(rows: RefundRow[], nowMs: number): bigint {
  let sum = 0n;
  for (const r of rows) {
    const s = refundStatus(r, nowMs);
    if (s !== 'failed' && s !== 'expired') sum += r.amount;
  }
  return sum;
}

export const claimUrl = (publicUrl: string, uuid: string) => `${publicUrl.replace(/\/+$/, '')}/refund/${uuid}`;

/**
 * Whether a caller sees a refund's `uuid` and `claim_url` (docs/money-out.md,
 * "Refunds"): a claim's link is a capability (whoever holds it names where the money goes), so a
 * login token (`apiKey` null) and keys that may write charges or transactions see them; any other
 * key (`read`, `wallets:write`, `webhooks:write`) sees null.
 */
export function showsRefundLinks(apiKey: { scopes: readonly KeyScope[] } | null): boolean {
  return apiKey === null || allows(apiKey.scopes, 'charges:write') || allows(apiKey.scopes, 'transactions:write');
}

/**
 * A refund in the charge's `refunds`, in the refund routes' answers and in `charge.refunded`.
 * `links`: false hides `uuid` and `claim_url` (null), for a caller `showsRefundLinks` refuses.
 */
export function refundView(r: RefundRow, nowMs: number, publicUrl: string, links: boolean) {
  return {
    id: r.id,
    uuid: links ? r.uuid : null,
    amount: formatUnits18(r.amount, r.decimals),
    address: r.address,
    status: refundStatus(r, nowMs),
    transaction_id: r.transaction_id,
    tx_hash: r.tx_hash,
    reason: r.reason,
    claim_url: !links || r.claim_expires_at === null ? null : claimUrl(publicUrl, r.uuid),
    expires_at: formatDateTimeOrNull(r.claim_expires_at),
    created_at: formatDateTime(r.created_at),
  };
}

/** The explorer page of a transaction, when the network has an explorer and the transfer a hash. */
export function explorerTxUrl(blockExplorer: string, txHash: string | null): string | null {
  if (blockExplorer === '' || txHash === null) return null;
  return `${blockExplorer.replace(/\/+$/, '')}/tx/${txHash}`;
}

/**
 * GET /api/refund/{uuid}: what the payer holding the link may see: the refund, the network it is
 * paid on, the merchant's reason, and once sent where to and in which transaction.
 */
export function publicRefundView(r: RefundRow, nowMs: number) {
  return {
    uuid: r.uuid,
    status: refundStatus(r, nowMs),
    amount: formatUnits18(r.amount, r.decimals),
    token: r.symbol,
    network: r.network_name,
    reason: r.reason,
    address: r.address,
    tx_hash: r.tx_hash,
    tx_url: explorerTxUrl(r.block_explorer, r.tx_hash),
    expires_at: formatDateTimeOrNull(r.claim_expires_at),
  };
}
