/**
 * idempotency_keys rows. A claim is a row with no response yet; its token is `created_at` as
 * the claiming request set it, and every change below checks that token (fencing: a request
 * whose claim was taken over can no longer write).
 */
import { dialectOf } from '../../db/dialect.js';
import type { Executor } from '../../db/index.js';

export interface StoredKey {
  id: number;
  request_hash: string;
  response_status: number | null;
  response_body: string | null;
  created_at: number;
}

export interface NewClaim {
  userId: number;
  key: string;
  requestHash: string;
  nowMs: number;
  expiresAtMs: number;
}

/** Drops the user's key when it has expired, so it can be claimed afresh. */
export async function deleteExpiredKey(db: Executor, userId: number, key: string, nowMs: number): Promise<void> {
  await db.deleteFrom('idempotency_keys').where('user_id', '=', userId).where('key', '=', key).where('expires_at', '<=', nowMs).execute();
}

/** Inserts the claim; undefined when the user already has this key. */
export async function insertClaim(db: Executor, c: NewClaim): Promise<number | undefined> {
  const row = await db
    .insertInto('idempotency_keys')
    .values({
      user_id: c.userId,
      key: c.key,
      request_hash: c.requestHash,
      response_status: null,
      response_body: null,
      created_at: c.nowMs,
      expires_at: c.expiresAtMs,
    })
    .onConflict((oc) => oc.columns(['user_id', 'key']).doNothing())
    .returning('id')
    .executeTakeFirst();
  return row?.id;
}

/** The user's key, row-locked for the rest of the transaction. */
export function findKeyForUpdate(trx: Executor, userId: number, key: string): Promise<StoredKey> {
  const q = trx
    .selectFrom('idempotency_keys')
    .select(['id', 'request_hash', 'response_status', 'response_body', 'created_at'])
    .where('user_id', '=', userId)
    .where('key', '=', key);
  return dialectOf(trx).forUpdate(q).executeTakeFirstOrThrow();
}

/** A claim whose request died: the new request takes it with a new token. */
export async function takeOverClaim(db: Executor, id: number, tokenMs: number): Promise<void> {
  await db.updateTable('idempotency_keys').set({ created_at: tokenMs }).where('id', '=', id).execute();
}

/** Stores the response of a claim still held with this token and not yet answered; false otherwise. */
export async function commitClaim(db: Executor, id: number, tokenMs: number, status: number, body: string): Promise<boolean> {
  const r = await db
    .updateTable('idempotency_keys')
    .set({ response_status: status, response_body: body })
    .where('id', '=', id)
    .where('created_at', '=', tokenMs)
    .where('response_status', 'is', null)
    .executeTakeFirst();
  return Number(r.numUpdatedRows) === 1;
}

/** Stores (or overwrites with the bytes sent) the response of a claim still held with this token. */
export async function storeResponse(db: Executor, id: number, tokenMs: number, status: number, body: string): Promise<void> {
  await db
    .updateTable('idempotency_keys')
    .set({ response_status: status, response_body: body })
    .where('id', '=', id)
    .where('created_at', '=', tokenMs)
    .execute();
}

/** Deletes an unanswered claim still held with this token, so the client can retry. */
export async function releaseClaim(db: Executor, id: number, tokenMs: number): Promise<void> {
  await db
    .deleteFrom('idempotency_keys')
    .where('id', '=', id)
    .where('created_at', '=', tokenMs)
    .where('response_status', 'is', null)
    .execute();
}

/** Housekeeping: Idempotency-Keys past their 24 hours. */
export async function deleteExpiredIdempotencyKeys(db: Executor, beforeMs: number): Promise<number> {
  const r = await db.deleteFrom('idempotency_keys').where('expires_at', '<', beforeMs).executeTakeFirst();
  return Number(r.numDeletedRows);
}
