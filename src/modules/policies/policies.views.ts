/** Policy and allowlist rows → response objects (amounts as 18-place strings, keyed by symbol). */
import { formatUnits18 } from '../../lib/money.js';
import { formatDateTime } from '../../lib/time.js';
import type { AllowlistEntry, LimitKind } from './policies.repository.js';
import type { Policy } from './policies.service.js';

export function policyView(p: Policy) {
  const maps: Record<LimitKind, Record<string, string>> = { per_transaction: {}, daily: {}, approval_above: {} };
  for (const l of p.limits) {
    const token = p.tokens.find((t) => t.id === l.token_id);
    if (token) maps[l.kind][token.symbol] = formatUnits18(l.amount, token.decimals);
  }
  return { ...maps, allowlist_only: p.allowlist_only, updated_at: p.updated_at === null ? null : formatDateTime(p.updated_at) };
}

export function allowlistEntryView(e: AllowlistEntry) {
  return { id: e.id, address: e.address, label: e.label, created_at: formatDateTime(e.created_at) };
}
