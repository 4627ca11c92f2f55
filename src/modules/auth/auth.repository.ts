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

/** One bearer-token lookup at `nowMs` (see `findUsersByTokenHashes`). */
export interface TokenLookup {
  tokenHash: string;
  nowMs: number;
}

export interface TokenUser extends AuthUser {
  token_id: number;
}

/**
 * The live tokens among `lookups` with their users, one row per lookup whose token is live, `ord`
 * its 1-based place in `lookups` (`r` the lookups, for the statements below).
 */
function liveTokensOf(lookups: readonly TokenLookup[], extra = sql``) {
  return sql`
    SELECT r.ord, t.id AS token_id, u.id, u.name, u.email, u.created_at${extra}
    FROM unnest(${lookups.map((l) => l.tokenHash)}::text[], ${lookups.map((l) => l.nowMs)}::bigint[]) WITH ORDINALITY AS r(token_hash, now_ms, ord)
    JOIN access_tokens t ON t.token_hash = r.token_hash AND t.revoked_at IS NULL AND t.expires_at > r.now_ms
    JOIN users u ON u.id = t.user_id`;
}

/** Rows of a batched statement, placed by their `ord` (undefined where a lookup found nothing). */
function byOrd<R extends { ord: string }>(n: number, rows: R[]): Array<Omit<R, 'ord'> | undefined> {
  const out = new Array<Omit<R, 'ord'> | undefined>(n).fill(undefined);
  for (const { ord, ...row } of rows) out[Number(ord) - 1] = row;
  return out;
}

/**
 * PostgreSQL: the users behind several bearer tokens in one statement (`AuthService` batches the
 * lookups of requests that arrive while others are out). The tokens are read as they are when
 * the statement runs: a logout committed before it is refused.
 */
export async function findUsersByTokenHashes(db: Executor, lookups: readonly TokenLookup[]): Promise<Array<TokenUser | undefined>> {
  const query = liveTokensOf(lookups).compile(db);
  preferNamed(query.sql);
  return byOrd(lookups.length, (await db.executeQuery(query)).rows as Array<TokenUser & { ord: string }>);
}

/** One bearer-token lookup that counts its user's request (see `findUsersByTokenHashesCounting`). */
export interface CountingLookup {
  tokenHash: string;
  /** `userKeyPrefix + user id` is the counter's key, as `WindowCounters.hit` is given it. */
  userKeyPrefix: string;
  window: SqlWindow;
}

export interface CountedUser extends TokenUser {
  /** The window's count after this request. */
  points: number;
}

/**
 * PostgreSQL with the rate-limit counters in `rate_limits`: for each lookup, the user behind a
 * live token, and that user's request counted in its window, all in one statement (one round
 * trip for the lookups of every request that waited for it; `AuthService` batches them). The
 * counter row is the one rate-limiter-flexible keeps for `hit(userKeyPrefix + id)` (its key
 * computed here with the same SHA-256, `SqlWindow`), counted as its upsert counts; several
 * requests of one user in a batch add their number to the row once, and each is answered with the
 * count it would have had counted alone, in the batch's order. Rows are upserted in key order, so
 * two batches never wait for each other's rows crosswise. Nothing is counted for a token that is
 * not live (its answer is undefined).
 */
export async function findUsersByTokenHashesCounting(
  db: Executor,
  lookups: readonly CountingLookup[],
): Promise<Array<CountedUser | undefined>> {
  const nowMs = Math.max(...lookups.map((l) => l.window.nowMs));
  const w = lookups.map((l) => l.window);
  const key = sql`, k.key_prefix || substr(encode(sha256(convert_to(k.user_key_prefix || u.id::text, 'UTF8')), 'hex'), 1, 32) || k.key_suffix AS key, k.expire`;
  const query = sql<{ ord: string; token_id: number; id: number; name: string; email: string; created_at: number; points: string }>`
    WITH keys AS (
      SELECT * FROM unnest(${w.map((x) => x.keyPrefix)}::text[], ${lookups.map((l) => l.userKeyPrefix)}::text[],
                           ${w.map((x) => x.keySuffix)}::text[], ${w.map((x) => x.expireAtMs)}::bigint[])
        WITH ORDINALITY AS k(key_prefix, user_key_prefix, key_suffix, expire, ord)
    ), tok AS (
      ${liveTokensOf(
        lookups.map((l) => ({ tokenHash: l.tokenHash, nowMs: l.window.nowMs })),
        key,
      )} JOIN keys k ON k.ord = r.ord
    ), per_key AS (
      SELECT key, count(*)::int AS n, max(expire) AS expire FROM tok GROUP BY key
    ), hit AS (
      INSERT INTO rate_limits (key, points, expire)
      SELECT key, n, expire FROM per_key ORDER BY key
      ON CONFLICT (key) DO UPDATE SET
        points = CASE WHEN rate_limits.expire <= ${nowMs}::bigint THEN EXCLUDED.points ELSE rate_limits.points + EXCLUDED.points END,
        expire = CASE WHEN rate_limits.expire <= ${nowMs}::bigint THEN EXCLUDED.expire ELSE rate_limits.expire END
      RETURNING key, points
    )
    SELECT tok.ord, tok.token_id, tok.id, tok.name, tok.email, tok.created_at,
           hit.points - per_key.n + row_number() OVER (PARTITION BY tok.key ORDER BY tok.ord) AS points
    FROM tok JOIN per_key ON per_key.key = tok.key JOIN hit ON hit.key = tok.key`.compile(db);
  preferNamed(query.sql); // the same text for every batch: parsed and planned once per connection
  return byOrd(lookups.length, (await db.executeQuery(query)).rows).map((row) => row && { ...row, points: Number(row.points) });
}

export async function revokeToken(db: Executor, tokenId: number, nowMs: number): Promise<void> {
  await db.updateTable('access_tokens').set({ revoked_at: nowMs }).where('id', '=', tokenId).execute();
}

/** Housekeeping: tokens that expired before `beforeMs` are of no use to anyone. */
export async function deleteExpiredTokens(db: Executor, beforeMs: number): Promise<number> {
  const r = await db.deleteFrom('access_tokens').where('expires_at', '<', beforeMs).executeTakeFirst();
  return Number(r.numDeletedRows);
}
