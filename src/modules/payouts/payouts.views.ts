/** The Payout as the API shows it: statuses read from its decision state and its items' transactions. */
import { formatUnits18 } from '../../lib/money.js';
import { formatDateTime, formatDateTimeOrNull } from '../../lib/time.js';
import type { ItemRow, PayoutRow } from './payouts.repository.js';

export type ItemStatus = 'awaiting_approval' | 'queued' | 'pending' | 'confirmed' | 'failed';
export type PayoutStatus = 'awaiting_approval' | 'processing' | 'completed' | 'partially_failed' | 'failed';

/** An item's status: its transaction's, or before it has one the payout's decision (`queued` while its turn has not come). */
export function itemStatus(p: PayoutRow, i: ItemRow): ItemStatus {
  if (i.tx_status === 'confirmed' || i.tx_status === 'failed') return i.tx_status;
  if (i.tx_status !== null) return 'pending';
  if (i.error !== null || p.state === 'rejected' || p.state === 'expired') return 'failed';
  return p.state === 'approval' ? 'awaiting_approval' : 'queued';
}

/** Why an item failed (its transaction's reason, a refusal, the payout's decision), else null. */
export function itemFailure(p: PayoutRow, i: ItemRow): string | null {
  if (i.tx_status !== null) return i.tx_status === 'failed' ? i.failure_reason : null;
  if (i.error !== null) return 'refused';
  return p.state === 'rejected' ? 'rejected_by_approver' : p.state === 'expired' ? 'approval_expired' : null;
}

/** `processing` until every item is final, then `completed` (all confirmed), `partially_failed` or `failed`. */
export function payoutStatus(p: PayoutRow, items: ItemRow[]): PayoutStatus {
  if (p.state === 'approval') return 'awaiting_approval';
  const statuses = items.map((i) => itemStatus(p, i));
  if (statuses.some((s) => s !== 'confirmed' && s !== 'failed')) return 'processing';
  if (statuses.every((s) => s === 'confirmed')) return 'completed';
  return statuses.every((s) => s === 'failed') ? 'failed' : 'partially_failed';
}

/** When the last item became final (a refused one when it was refused); null while processing. */
function completedAt(p: PayoutRow, items: ItemRow[], status: PayoutStatus): number | null {
  if (status === 'processing' || status === 'awaiting_approval') return null;
  if (p.state === 'rejected' || p.state === 'expired') return p.updated_at;
  return Math.max(...items.map((i) => i.final_at ?? i.refused_at ?? 0));
}

export function payoutView(p: PayoutRow, items: ItemRow[]) {
  const status = payoutStatus(p, items);
  return {
    id: p.id,
    token: p.symbol,
    status,
    total: formatUnits18(p.total, p.decimals),
    items: items.map((i) => ({
      id: i.id,
      address: i.address,
      amount: formatUnits18(i.amount, p.decimals),
      reference: i.reference,
      status: itemStatus(p, i),
      transaction_id: i.transaction_id,
      tx_hash: i.tx_hash,
      failure_reason: itemFailure(p, i),
      error: i.error,
    })),
    created_at: formatDateTime(p.created_at),
    completed_at: formatDateTimeOrNull(completedAt(p, items, status)),
    // A payout's one hold: its total over the token's approval_above (migration 039).
    held_by:
      p.held_limit === null ? null : { rule: 'approval_above' as const, limit: formatUnits18(p.held_limit, p.decimals), token: p.symbol },
  };
}
