/** API keys as the API shows them: never the key (except on creation) nor its hash. */
import { formatDateTime, formatDateTimeOrNull } from '../../lib/time.js';
import type { ApiKeyRow } from './keys.repository.js';
import type { KeyScope } from './keys.scopes.js';

export function scopesOf(row: Pick<ApiKeyRow, 'scopes'>): KeyScope[] {
  return JSON.parse(row.scopes) as KeyScope[];
}

export function keyView(row: ApiKeyRow) {
  return {
    id: row.id,
    name: row.name,
    prefix: row.prefix,
    scopes: scopesOf(row),
    created_at: formatDateTime(row.created_at),
    expires_at: formatDateTimeOrNull(row.expires_at),
    last_used_at: formatDateTimeOrNull(row.last_used_at),
    revoked_at: formatDateTimeOrNull(row.revoked_at),
  };
}

export function createdKeyView(row: ApiKeyRow, key: string) {
  const v = keyView(row);
  return {
    id: v.id,
    name: v.name,
    key,
    prefix: v.prefix,
    scopes: v.scopes,
    created_at: v.created_at,
    expires_at: v.expires_at,
    last_used_at: v.last_used_at,
  };
}
