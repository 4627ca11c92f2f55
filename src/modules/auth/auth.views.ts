import { formatDateTime } from '../../lib/time.js';
import type { AuthUser } from './auth.repository.js';

export function userView(u: AuthUser) {
  return { id: u.id, name: u.name, email: u.email, created_at: formatDateTime(u.created_at) };
}

export function loginView(token: string, expiresAtMs: number) {
  return { token, token_type: 'Bearer' as const, expires_at: formatDateTime(expiresAtMs) };
}
