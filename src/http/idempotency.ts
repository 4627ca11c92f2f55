/**
 * `Idempotency-Key` for every authenticated `POST .../create` route (attached by an onRoute
 * hook, so a new create route gets it without doing anything), and for a POST that declares
 * `config.idempotency: true` (a charge's refund).
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
 *   not the request). A 5xx releases the key so the client can retry, unless the handler's
 *   transaction durably committed its result (see `commit`): the release deletes the claim only
 *   while it has no stored response, so it is decided by what the database holds once the
 *   handler is done, never by the handler having called `commit` (a COMMIT that then fails, on
 *   SQLite a failed commit group, saved nothing and leaves the key free for a retry).
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
import type { FastifyReply, FastifyRequest, RouteOptions, onSendAsyncHookHandler, preHandlerAsyncHookHandler } from 'fastify';
import type { AppContext } from '../context.js';
import type { Executor, InTransaction } from '../db/index.js';
import { Errors, fieldError } from '../errors.js';
import { IdempotencyService, type ClaimHandle } from '../modules/idempotency/idempotency.service.js';
import { requireUser } from './auth.js';
import { ok } from './envelope.js';
import type { App } from './types.js';
import { numberText } from '../lib/exact-json.js';

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
    // A number as the client wrote it (exact-json): 1.1234567890123456789 and …678 differ.
    .map((k) => `${JSON.stringify(k)}:${numberText(value, k) ?? canonicalJson((value as Record<string, unknown>)[k])}`);
  return `{${entries.join(',')}}`;
}

export function requestHash(method: string, path: string, body: unknown): string {
  return createHash('sha256')
    .update(`${method} ${path}\n${canonicalJson(body ?? {})}`)
    .digest('hex');
}

/** A claim held by a request in flight. */
type ClaimState = ClaimHandle;

/** The Idempotency-Key header, checked; undefined when absent. */
function keyHeader(req: FastifyRequest): string | undefined {
  const header = req.headers['idempotency-key'];
  if (header === undefined) return undefined;
  if (typeof header !== 'string' || !KEY_PATTERN.test(header)) {
    throw fieldError('Idempotency-Key', 'The Idempotency-Key header must be 1 to 255 visible ASCII characters.');
  }
  return header;
}

function replay(reply: FastifyReply, status: number, body: string): FastifyReply {
  reply.code(status).header('content-type', 'application/json; charset=utf-8').header('idempotent-replayed', 'true');
  return reply.send(body);
}

/** What the handler may call to store its response inside its own transaction. */
function claimFor(service: IdempotencyService, key: string, state: ClaimState): IdempotencyClaim {
  return {
    key,
    // Written in the effect's transaction: durable with it, or not at all. Nothing is noted
    // here: the transaction may still fail to commit after this (see `store` below).
    commit: async (trx, status, body) => {
      if (!(await service.commit(trx, state, status, body))) throw Errors.idempotencyInProgress();
    },
  };
}

/** Every response below 500 except 409 and 429 (those are about this moment, not the request). */
function worthStoring(status: number, payload: unknown): payload is string {
  return status < 500 && status !== 409 && status !== 429 && typeof payload === 'string' && payload.length <= MAX_STORED_BODY;
}

function asList<T>(hook: T | T[] | undefined): T[] {
  if (!hook) return [];
  return Array.isArray(hook) ? hook : [hook];
}

export function installIdempotency(app: App, ctx: AppContext): void {
  const service = new IdempotencyService(ctx);
  const states = new WeakMap<FastifyRequest, ClaimState>();
  app.decorateRequest('idempotency', null);

  const claim: preHandlerAsyncHookHandler = async function (req: FastifyRequest, reply: FastifyReply) {
    const key = keyHeader(req);
    if (key === undefined) return;
    const outcome = await service.claim(requireUser(req).id, key, requestHash(req.method, req.url, req.body));
    switch (outcome.kind) {
      case 'mismatch':
        throw Errors.idempotencyMismatch();
      case 'in_progress':
        throw Errors.idempotencyInProgress();
      case 'replay':
        return replay(reply, outcome.status, outcome.body);
      case 'claimed': {
        const state: ClaimState = { id: outcome.id, token: outcome.token };
        states.set(req, state);
        req.idempotency = claimFor(service, key, state);
      }
    }
  };

  const store: onSendAsyncHookHandler = async function (req, reply, payload) {
    const state = states.get(req);
    if (!state) return payload;
    states.delete(req);
    try {
      if (worthStoring(reply.statusCode, payload)) await service.store(state, reply.statusCode, payload);
      // Released unless the handler's transaction committed a response (releaseClaim deletes
      // only a claim without one): a failed or never-made commit leaves the key retryable.
      else await service.release(state);
    } catch (e) {
      req.log.error({ err: e }, 'could not store the idempotent response');
    }
    return payload;
  };

  app.addHook('onRoute', (route: RouteOptions) => {
    const methods = Array.isArray(route.method) ? route.method : [route.method];
    if (!methods.some((m) => m.toUpperCase() === 'POST') || route.config?.idempotency === false) return;
    if (!/\/create\/?$/.test(route.url) && route.config?.idempotency !== true) return;
    route.preHandler = [...asList(route.preHandler), claim];
    route.onSend = [...asList(route.onSend), store];
  });
}
