import { sql } from 'kysely';
import type { SqlWindow } from '../../lib/rate-limit.js';
import type { Executor } from '../../db/index.js';
import { preferNamed } from '../../db/named-statements.js';
import { prepare } from '../../db/prepared.js';

export interface AuthUser {
  id: number;
  name: string;
  email: string;
  created_at: number;
}

export function findUserByEmail(db: Executor, email: string) {
  return db
    .selectFrom('users')
    .select(['id', 'name', 'email', 'password_hash', 'created_at'])
    .where('email', '=', email)
    .executeTakeFirst();
}

export async function insertUser(
  db: Executor,
  u: { name: string; email: string; password_hash: string; nowMs: number },
): Promise<AuthUser> {
  return db
    .insertInto('users')
    .values({ name: u.name, email: u.email, password_hash: u.password_hash, created_at: u.nowMs, updated_at: u.nowMs })
    .returning(['id', 'name', 'email', 'created_at'])
    .executeTakeFirstOrThrow();
}

/** Replaces a password hash, only if it is still the one that was verified (a concurrent change wins). */
export async function updatePasswordHash(db: Executor, userId: number, oldHash: string, newHash: string, nowMs: number): Promise<void> {
  await db
    .updateTable('users')
    .set({ password_hash: newHash, updated_at: nowMs })
    .where('id', '=', userId)
    .where('password_hash', '=', oldHash)
    .execute();
}

export async function insertAccessToken(
  db: Executor,
  t: { user_id: number; token_hash: string; expires_at: number; nowMs: number },
): Promise<void> {
  await db
    .insertInto('access_tokens')
    .values({ user_id: t.user_id, token_hash: t.token_hash, expires_at: t.expires_at, revoked_at: null, created_at: t.nowMs })
    .execute();
}

/**
 * Every authenticated request runs it: compiled once (src/db/prepared.ts) and, on SQLite (one
 * process), kept until the tokens or users table is written (src/db/read-cache.ts). Not cached
 * on PostgreSQL: a logout must be refused by every process on its next request, and another
 * process would only hear of it by NOTIFY a moment later. Expiry is decided against the clock
 * here, so the cached row does not depend on the time of the request.
 */
const userByTokenHash = prepare(
  (db: Executor, tokenHash: string) =>
    db
      .selectFrom('access_tokens as t')
      .innerJoin('users as u', 'u.id', 't.user_id')
      .select(['t.id as token_id', 't.expires_at', 'u.id', 'u.name', 'u.email', 'u.created_at'])
      .where('t.token_hash', '=', tokenHash)
      .where('t.revoked_at', 'is', null),
  { cache: { tables: ['access_tokens', 'users'], onPostgres: false } },
);

/** The user behind a live token (not revoked, not expired at `nowMs`), or undefined. */
export async function findUserByTokenHash(db: Executor, tokenHash: string, nowMs: number) {
  const row = await userByTokenHash.executeTakeFirst(db, tokenHash);
  if (!row || row.expires_at <= nowMs) return undefined;
  return { token_id: row.token_id, id: row.id, name: row.name, email: row.email, created_at: row.created_at };
}

/**
 * PostgreSQL with the rate-limit counters in `rate_limits`: the user behind a live token and that
 * user's request counted in the window, in one statement (one round trip instead of two). The
 * counter row is the one rate-limiter-flexible keeps for `hit(userKeyPrefix + id)` (its key
 * computed here with the same SHA-256, `SqlWindow`), counted as its upsert counts. Nothing is
 * counted when the token is not live. `points` is the window's count after this request.
 */
export async function findUserByTokenHashCounting(db: Executor, tokenHash: string, userKeyPrefix: string, w: SqlWindow) {
  const query = sql<{ token_id: number; id: number; name: string; email: string; created_at: number; points: number | null }>`
    WITH tok AS (
      SELECT t.id AS token_id, u.id, u.name, u.email, u.created_at
      FROM access_tokens t JOIN users u ON u.id = t.user_id
      WHERE t.token_hash = ${tokenHash} AND t.revoked_at IS NULL AND t.expires_at > ${w.nowMs}::bigint
    ), hit AS (
      INSERT INTO rate_limits (key, points, expire)
      SELECT ${w.keyPrefix}::text || substr(encode(sha256(convert_to(${userKeyPrefix}::text || tok.id::text, 'UTF8')), 'hex'), 1, 32) || ${w.keySuffix}::text,
             1, ${w.expireAtMs}::bigint
      FROM tok
      ON CONFLICT (key) DO UPDATE SET
        points = CASE WHEN rate_limits.expire <= ${w.nowMs}::bigint THEN 1 ELSE rate_limits.points + 1 END,
        expire = CASE WHEN rate_limits.expire <= ${w.nowMs}::bigint THEN EXCLUDED.expire ELSE rate_limits.expire END
      RETURNING points
    )
    SELECT tok.token_id, tok.id, tok.name, tok.email, tok.created_at, (SELECT points FROM hit) AS points FROM tok`.compile(db);
  preferNamed(query.sql); // the same text every time: parsed and planned once per connection
  return (await db.executeQuery(query)).rows[0];
}

export async function revokeToken(db: Executor, tokenId: number, nowMs: number): Promise<void> {
  await db.updateTable('access_tokens').set({ revoked_at: nowMs }).where('id', '=', tokenId).execute();
}

/** Housekeeping: tokens that expired before `beforeMs` are of no use to anyone. */
export async function deleteExpiredTokens(db: Executor, beforeMs: number): Promise<number> {
  const r = await db.deleteFrom('access_tokens').where('expires_at', '<', beforeMs).executeTakeFirst();
  return Number(r.numDeletedRows);
}
