/**
 * The rules of an Idempotency-Key (the HTTP side is src/http/idempotency.ts): claim a key for
 * a request, answer a repeat from the stored response, take over a claim whose request died,
 * and store or release the claim once the response is known.
 */
import type { AppContext } from '../../context.js';
import type { Executor } from '../../db/index.js';
import * as repo from './idempotency.repository.js';

export const IDEMPOTENCY_TTL_MS = 24 * 60 * 60 * 1000;
export const CLAIM_TIMEOUT_MS = 60_000;

/** A claim held by one request: the row and its token (created_at as this request set it). */
export interface ClaimHandle {
  id: number;
  token: number;
}

export type ClaimOutcome =
  ({ kind: 'claimed' } & ClaimHandle) | { kind: 'replay'; status: number; body: string } | { kind: 'mismatch' } | { kind: 'in_progress' };

export class IdempotencyService {
  constructor(private readonly ctx: AppContext) {}

  /** Claims the user's key for the request with this hash, or says why it cannot. */
  claim(userId: number, key: string, requestHash: string): Promise<ClaimOutcome> {
    const now = this.ctx.clock.nowMs();
    return this.ctx.store.db.transaction().execute(async (trx) => {
      await repo.deleteExpiredKey(trx, userId, key, now);
      const id = await repo.insertClaim(trx, { userId, key, requestHash, nowMs: now, expiresAtMs: now + IDEMPOTENCY_TTL_MS });
      if (id !== undefined) return { kind: 'claimed', id, token: now };
      const row = await repo.findKeyForUpdate(trx, userId, key);
      if (row.request_hash !== requestHash) return { kind: 'mismatch' };
      if (row.response_status !== null) return { kind: 'replay', status: row.response_status, body: row.response_body ?? '' };
      if (row.created_at >= now - CLAIM_TIMEOUT_MS) return { kind: 'in_progress' };
      // The request holding it died without an answer: take it over with a new token.
      await repo.takeOverClaim(trx, row.id, now);
      this.ctx.log.warn({ user_id: userId }, 'idempotency claim taken over after its request timed out');
      return { kind: 'claimed', id: row.id, token: now };
    });
  }

  /** Stores the response inside the caller's transaction; false when the claim is no longer held. */
  commit(trx: Executor, claim: ClaimHandle, status: number, body: unknown): Promise<boolean> {
    return repo.commitClaim(trx, claim.id, claim.token, status, JSON.stringify(body));
  }

  /** Stores the response as sent, byte for byte. */
  store(claim: ClaimHandle, status: number, payload: string): Promise<void> {
    return repo.storeResponse(this.ctx.store.db, claim.id, claim.token, status, payload);
  }

  /**
   * Releases an unanswered claim so the client can retry: a claim whose response was committed
   * with its effect is kept (it is answered), whatever the request's own outcome said.
   */
  release(claim: ClaimHandle): Promise<void> {
    return repo.releaseClaim(this.ctx.store.db, claim.id, claim.token);
  }
}
