/**
 * API keys: long-lived bearer credentials for servers, limited to scopes. A key is `wps_` and
 * 32 random bytes in base64url (43 characters); it is returned once, on creation, and only
 * its SHA-256 is stored, like a login token's. The `wps_` prefix tells the auth hook which
 * table to look in and lets secret scanners recognise a leaked key.
 */
import { Errors, fieldError } from '../../errors.js';
import type { AppContext } from '../../context.js';
import { randomTokenString, sha256Hex } from '../../lib/crypto.js';
import type { AuthUser } from '../auth/auth.repository.js';
import * as repo from './keys.repository.js';
import { KEY_SCOPES, type KeyScope } from './keys.scopes.js';
import { scopesOf } from './keys.views.js';

export const KEY_PREFIX = 'wps_';
const KEY_PATTERN = /^wps_[A-Za-z0-9_-]{43}$/;
/** Live (unrevoked, unexpired) keys a user may hold at once; the list shows at most LIST_MAX. */
export const MAX_LIVE_KEYS = 100;
const LIST_MAX = 1000;
const MINUTE_MS = 60_000;

export interface KeyInput {
  name: string;
  scopes: KeyScope[];
  expires_in?: number;
}

export interface KeyPrincipal {
  user: AuthUser;
  keyId: number;
  scopes: KeyScope[];
}

/** A key has the prefix and 43 more characters; a login token (43 characters) never matches. */
export function isApiKey(token: string): boolean {
  return KEY_PATTERN.test(token);
}

export class KeyService {
  constructor(private readonly ctx: AppContext) {}

  async create(userId: number, input: KeyInput): Promise<{ row: repo.ApiKeyRow; key: string }> {
    const name = input.name.trim();
    if (name === '') throw fieldError('name', 'The name field is required.');
    // Stored in the catalogue's order, each once.
    const scopes = KEY_SCOPES.filter((s) => input.scopes.includes(s));
    const db = this.ctx.store.db;
    const now = this.ctx.clock.nowMs();
    if ((await repo.countLiveKeys(db, userId, now)) >= MAX_LIVE_KEYS) throw Errors.badRequest('Too many API keys');
    const key = `${KEY_PREFIX}${randomTokenString(32)}`;
    const row = await repo.insertApiKey(db, {
      user_id: userId,
      name,
      prefix: key.slice(0, 12),
      key_hash: sha256Hex(key),
      scopes: JSON.stringify(scopes),
      expires_at: input.expires_in === undefined ? null : now + input.expires_in * 1000,
      nowMs: now,
    });
    this.ctx.log.info({ user_id: userId, key_id: row.id, scopes }, 'API key created');
    return { row, key };
  }

  list(userId: number): Promise<repo.ApiKeyRow[]> {
    return repo.listApiKeys(this.ctx.store.db, userId, LIST_MAX);
  }

  /** Revokes one of the user's keys; another user's key or an unknown id is 404 `Key not found`. */
  async revoke(userId: number, rawId: string): Promise<repo.ApiKeyRow> {
    const id = /^[1-9][0-9]{0,14}$/.test(rawId) ? Number(rawId) : null;
    const db = this.ctx.store.db;
    const existing = id === null ? undefined : await repo.findApiKey(db, userId, id);
    if (!existing) throw Errors.keyNotFound();
    await repo.revokeApiKey(db, userId, existing.id, this.ctx.clock.nowMs());
    this.ctx.log.info({ user_id: userId, key_id: existing.id }, 'API key revoked');
    return (await repo.findApiKey(db, userId, existing.id))!;
  }

  /** The user and scopes of a live key, or 401 `Invalid token`; records the use (to the minute). */
  async authenticate(key: string): Promise<KeyPrincipal> {
    const now = this.ctx.clock.nowMs();
    const row = await repo.findLiveKeyByHash(this.ctx.store.db, sha256Hex(key), now);
    if (!row) throw Errors.invalidToken();
    const minute = now - (now % MINUTE_MS);
    if (row.last_used_at === null || row.last_used_at < minute) await repo.touchApiKey(this.ctx.store.db, row.key_id, minute);
    const { key_id, scopes, last_used_at: _last, ...user } = row;
    return { user, keyId: key_id, scopes: scopesOf({ scopes }) };
  }
}
