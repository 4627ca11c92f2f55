/** The `api_keys` table. Read paths never select `key_hash` except the lookup by hash. */
import type { Executor } from '../../db/index.js';

export interface ApiKeyRow {
  id: number;
  user_id: number;
  name: string;
  prefix: string;
  scopes: string;
  expires_at: number | null;
  last_used_at: number | null;
  revoked_at: number | null;
  created_at: number;
}

const COLUMNS = ['id', 'user_id', 'name', 'prefix', 'scopes', 'expires_at', 'last_used_at', 'revoked_at', 'created_at'] as const;

export async function insertApiKey(
  db: Executor,
  k: { user_id: number; name: string; prefix: string; key_hash: string; scopes: string; expires_at: number | null; nowMs: number },
): Promise<ApiKeyRow> {
  return db
    .insertInto('api_keys')
    .values({
      user_id: k.user_id,
      name: k.name,
      prefix: k.prefix,
      key_hash: k.key_hash,
      scopes: k.scopes,
      expires_at: k.expires_at,
      last_used_at: null,
      revoked_at: null,
      created_at: k.nowMs,
    })
    .returning(COLUMNS)
    .executeTakeFirstOrThrow();
}

/** Keys not yet revoked nor expired: the bound on how many a user may hold. */
export async function countLiveKeys(db: Executor, userId: number, nowMs: number): Promise<number> {
  const r = await db
    .selectFrom('api_keys')
    .select((eb) => eb.fn.countAll<number | string>().as('n'))
    .where('user_id', '=', userId)
    .where('revoked_at', 'is', null)
    .where((eb) => eb.or([eb('expires_at', 'is', null), eb('expires_at', '>', nowMs)]))
    .executeTakeFirstOrThrow();
  return Number(r.n);
}

/** A user's keys, newest first (at most `limit`). */
export function listApiKeys(db: Executor, userId: number, limit: number): Promise<ApiKeyRow[]> {
  return db.selectFrom('api_keys').select(COLUMNS).where('user_id', '=', userId).orderBy('id', 'desc').limit(limit).execute();
}

export function findApiKey(db: Executor, userId: number, id: number): Promise<ApiKeyRow | undefined> {
  return db.selectFrom('api_keys').select(COLUMNS).where('user_id', '=', userId).where('id', '=', id).executeTakeFirst();
}

/** Revokes a key of this user (a second revoke keeps the first time). */
export async function revokeApiKey(db: Executor, userId: number, id: number, nowMs: number): Promise<void> {
  await db
    .updateTable('api_keys')
    .set({ revoked_at: nowMs })
    .where('user_id', '=', userId)
    .where('id', '=', id)
    .where('revoked_at', 'is', null)
    .execute();
}

/** The live key (not revoked, not expired) with this hash, and its user. */
export function findLiveKeyByHash(db: Executor, keyHash: string, nowMs: number) {
  return db
    .selectFrom('api_keys as k')
    .innerJoin('users as u', 'u.id', 'k.user_id')
    .select(['k.id as key_id', 'k.scopes', 'k.last_used_at', 'u.id', 'u.name', 'u.email', 'u.created_at'])
    .where('k.key_hash', '=', keyHash)
    .where('k.revoked_at', 'is', null)
    .where((eb) => eb.or([eb('k.expires_at', 'is', null), eb('k.expires_at', '>', nowMs)]))
    .executeTakeFirst();
}

/**
 * Sets `last_used_at` to the start of the current minute unless it already is: of several
 * requests in one minute (in any process) only the first writes.
 */
export async function touchApiKey(db: Executor, id: number, minuteMs: number): Promise<void> {
  await db
    .updateTable('api_keys')
    .set({ last_used_at: minuteMs })
    .where('id', '=', id)
    .where((eb) => eb.or([eb('last_used_at', 'is', null), eb('last_used_at', '<', minuteMs)]))
    .execute();
}
