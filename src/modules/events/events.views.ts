import { formatDateTime } from '../../lib/time.js';
import type { EventRow } from './events.repository.js';

/** An event as the API shows it; `data` is the stored payload, the very text a webhook body carries. */
export function eventView(row: EventRow) {
  return {
    id: row.id,
    event: row.name,
    wallet_id: row.wallet_id,
    data: JSON.parse(row.payload) as Record<string, unknown>,
    created_at: formatDateTime(row.created_at),
  };
}
