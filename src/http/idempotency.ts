/**
 * `Idempotency-Key` for every authenticated `POST .../create` route (attached by an onRoute
 * hook, so a new create route gets it without doing anything).
 *
 * - The key is per user, kept 24 hours. The request it belongs to is identified by a SHA-256
 *   of method, path and the body in canonical JSON (keys sorted), so key order and whitespace
 *   do not matter.
 * - First use: the key is claimed (a row with no response yet) before the handler runs, after
 *   authentication, the path objects and schema validation.
 * - Repeat with the same request: the stored response (status and body, byte for byte) is sent
 *   again with `Idempotent-Replayed: true`, and nothing runs again.
 * - Same key, another request: 422 `Idempotency-Key already used with a different request`.
 * - Same key while the first request is still running: 409 (no waiting: the client retries).
 * - What is stored: every response below 500 except 409 and 429 (those are about this moment,
 *   not the request). A 5xx releases the key so the client can retry, unless the handler
 *   already committed its result (see `commit`).
 * - `commit(trx, status, body)`: a handler whose effect must never run twice (transaction
 *   create) stores its response inside the same database transaction as the effect. Then a
 *   crash after that commit replays the recorded result instead of running again, and the
 *   commit only succeeds while this request still holds the claim (fencing, below).
 * - A claim whose request died with its process (no response after CLAIM_TIMEOUT_MS) may be
 *   taken over by a retry. Taking over changes the claim's token (`created_at`), so the dead
 *   request's `commit`, should it still be running somewhere, fails and rolls its transaction
 *   back: with `commit`, a takeover can never make an effect happen twice.
 */
import { createHash } from 'node:crypto';
import type { FastifyReply, FastifyRequest, RouteOptions, onSendHookHandler, preHandlerHookHandler } from 'fastify';
import type { AppContext } from '../context.js';
import type { Executor } from '../db/index.js';
import { Errors, fieldError } from '../errors.js';
import { requireUser } from './auth.js';
import { ok } from './envelope.js';
import type { App } from './types.js';

export const IDEMPOTENCY_TTL_MS = 24 * 60 * 60 * 1000;
export const CLAIM_TIMEOUT_MS = 60_000;
/** Largest response body stored for replay (create responses are a few hundred bytes). */
const MAX_STORED_BODY = 256 * 1024;
const KEY_PATTERN = /^[\x21-\x7e]{1,255}$/;

export interface IdempotencyClaim {
  readonly key: string;
  /** Stores the response inside the caller's transaction; throws 409 if the claim was taken over. */
  commit(trx: Executor, status: number, body: unknown): Promise<void>;
}

declare module 'fastify' {
  interface FastifyRequest {
    /** The claimed Idempotency-Key of a create request, or null. */
    idempotency: IdempotencyClaim | null;
  }
}

/** A hook a service runs inside the transaction that makes its effect, with the result. */
export type InTransaction<T> = (trx: Executor, result: T) => Promise<void>;

/**
 * For a create route: stores the response (`ok(view(result), message)`) in the effect's own
 * transaction when the request carries an Idempotency-Key; undefined otherwise.
 */
export function commitResponse<T>(req: FastifyRequest, message: string, view: (result: T) => unknown): InTransaction<T> | undefined {
  const claim = req.idempotency;
  return claim ? (trx, result) => claim.commit(trx, 200, ok(view(result), message)) : undefined;
}

/** JSON with object keys sorted at every level: the same value always gives the same text. */
export function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value) ?? 'null';
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  const entries = Object.keys(value as Record<string, unknown>)
    .sort()
    .filter((k) => (value as Record<string, unknown>)[k] !== undefined)
    .map((k) => `${JSON.stringify(k)}:${canonicalJson((value as Record<string, unknown>)[k])}`);
  return `{${entries.join(',')}}`;
}

export function requestHash(method: string, path: string, body: unknown): string {
  return createHash('sha256').update(`${method} ${path}\n${canonicalJson(body ?? {})}`).digest('hex');
}

interface ClaimState {
  id: number;
  /** The claim's token: created_at of the row as this request set it. */
  token: number;
  committed: boolean;
}

type ClaimOutcome =
  | { kind: 'claimed'; id: number; token: number }
  | { kind: 'replay'; status: number; body: string }
  | { kind: 'mismatch' }
  | { kind: 'in_progress' };

export function installIdempotency(app: App, ctx: AppContext): void {
  const { db, dialect } = ctx.store;
  const states = new WeakMap<FastifyRequest, ClaimState>();
  app.decorateRequest('idempotency', null);

  async function claimKey(userId: number, key: string, hash: string): Promise<ClaimOutcome> {
    const now = ctx.clock.nowMs();
    return db.transaction().execute(async (trx) => {
      await trx.deleteFrom('idempotency_keys').where('user_id', '=', userId).where('key', '=', key).where('expires_at', '<=', now).execute();
      const inserted = await trx
        .insertInto('idempotency_keys')
        .values({ user_id: userId, key, request_hash: hash, response_status: null, response_body: null, created_at: now, expires_at: now + IDEMPOTENCY_TTL_MS })
        .onConflict((oc) => oc.columns(['user_id', 'key']).doNothing())
        .returning('id')
        .executeTakeFirst();
      if (inserted) return { kind: 'claimed', id: inserted.id, token: now };
      const row = await dialect
        .forUpdate(
          trx
            .selectFrom('idempotency_keys')
            .select(['id', 'request_hash', 'response_status', 'response_body', 'created_at'])
            .where('user_id', '=', userId)
            .where('key', '=', key),
        )
        .executeTakeFirstOrThrow();
      if (row.request_hash !== hash) return { kind: 'mismatch' };
      if (row.response_status !== null) return { kind: 'replay', status: row.response_status, body: row.response_body ?? '' };
      if (row.created_at >= now - CLAIM_TIMEOUT_MS) return { kind: 'in_progress' };
      // The request holding it died without an answer: take it over with a new token.
      await trx.updateTable('idempotency_keys').set({ created_at: now }).where('id', '=', row.id).execute();
      ctx.log.warn({ user_id: userId }, 'idempotency claim taken over after its request timed out');
      return { kind: 'claimed', id: row.id, token: now };
    });
  }

  const claim: preHandlerHookHandler = async function (req: FastifyRequest, reply: FastifyReply) {
    const header = req.headers['idempotency-key'];
    if (header === undefined) return;
    if (typeof header !== 'string' || !KEY_PATTERN.test(header)) {
      throw fieldError('Idempotency-Key', 'The Idempotency-Key header must be 1 to 255 visible ASCII characters.');
    }
    const user = requireUser(req);
    const outcome = await claimKey(user.id, header, requestHash(req.method, req.url, req.body));
    switch (outcome.kind) {
      case 'mismatch':
        throw Errors.idempotencyMismatch();
      case 'in_progress':
        throw Errors.idempotencyInProgress();
      case 'replay':
        reply.code(outcome.status).header('content-type', 'application/json; charset=utf-8').header('idempotent-replayed', 'true');
        return reply.send(outcome.body);
      case 'claimed': {
        const state: ClaimState = { id: outcome.id, token: outcome.token, committed: false };
        states.set(req, state);
        req.idempotency = {
          key: header,
          commit: async (trx, status, body) => {
            const r = await trx
              .updateTable('idempotency_keys')
              .set({ response_status: status, response_body: JSON.stringify(body) })
              .where('id', '=', state.id)
              .where('created_at', '=', state.token)
              .where('response_status', 'is', null)
              .executeTakeFirst();
            if (Number(r.numUpdatedRows) !== 1) throw Errors.idempotencyInProgress();
            state.committed = true;
          },
        };
      }
    }
  };

  const store: onSendHookHandler = async function (req, reply, payload) {
    const state = states.get(req);
    if (!state) return payload;
    states.delete(req);
    const status = reply.statusCode;
    const keep = status < 500 && status !== 409 && status !== 429 && typeof payload === 'string' && payload.length <= MAX_STORED_BODY;
    try {
      if (keep) {
        await db
          .updateTable('idempotency_keys')
          .set({ response_status: status, response_body: payload as string })
          .where('id', '=', state.id)
          .where('created_at', '=', state.token)
          .execute();
      } else if (!state.committed) {
        // Nothing was committed for this key: release it so the client can retry.
        await db.deleteFrom('idempotency_keys').where('id', '=', state.id).where('created_at', '=', state.token).where('response_status', 'is', null).execute();
      }
    } catch (e) {
      req.log.error({ err: e }, 'could not store the idempotent response');
    }
    return payload;
  };

  app.addHook('onRoute', (route: RouteOptions) => {
    const methods = Array.isArray(route.method) ? route.method : [route.method];
    if (!methods.some((m) => m.toUpperCase() === 'POST') || !/\/create\/?$/.test(route.url)) return;
    const pre = route.preHandler ? (Array.isArray(route.preHandler) ? route.preHandler : [route.preHandler]) : [];
    route.preHandler = [...pre, claim];
    const send = route.onSend ? (Array.isArray(route.onSend) ? route.onSend : [route.onSend]) : [];
    route.onSend = [...send, store];
  });
}
