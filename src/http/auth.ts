/**
 * The hooks of the authenticated scope, in the contract's order of checks:
 * onRequest: bearer token (401) then the per-user rate limit (429, with X-RateLimit-* headers);
 * preValidation: the wallet guard for every route with a `{wallet}` segment (404), which runs
 * before the route's own path-object loaders (404) and before body validation (422).
 */
import type { FastifyReply, FastifyRequest, RouteOptions } from 'fastify';
import { Errors } from '../errors.js';
import type { AppContext } from '../context.js';
import type { AuthService } from '../modules/auth/auth.service.js';
import { findWalletForUser } from '../modules/wallets/wallets.repository.js';
import { FixedWindowCounter } from './rate-limit.js';
import type { App } from './types.js';

/** The Bearer scheme with some credentials; what they are is checked by the auth service. */
const BEARER = /^Bearer[ ]+(.*\S)\s*$/i;

/** A path id: a positive integer of sane length, or null (which the caller answers with 404). */
export function parseId(raw: unknown): number | null {
  if (typeof raw !== 'string' || !/^[1-9][0-9]{0,14}$/.test(raw)) return null;
  return Number(raw);
}

export function requireUser(req: FastifyRequest) {
  if (!req.user) throw Errors.unauthenticated();
  return req.user;
}

export function requireWallet(req: FastifyRequest) {
  if (!req.wallet) throw Errors.walletNotFound();
  return req.wallet;
}

export function installAuth(app: App, ctx: AppContext, auth: AuthService): void {
  const perUser = new FixedWindowCounter(60_000);
  const limit = ctx.config.rateLimitPerMinute;

  app.addHook('onRequest', async (req: FastifyRequest, reply: FastifyReply) => {
    const header = req.headers.authorization;
    if (header === undefined || header === '') throw Errors.unauthenticated();
    const m = BEARER.exec(header);
    if (!m?.[1]) throw Errors.unauthenticated();
    const { user, tokenId } = await auth.authenticate(m[1]);
    req.user = user;
    req.tokenId = tokenId;

    const now = ctx.clock.nowMs();
    const w = perUser.hit(`u:${user.id}`, now);
    reply.header('x-ratelimit-limit', String(limit));
    reply.header('x-ratelimit-remaining', String(Math.max(0, limit - w.count)));
    if (w.count > limit) throw Errors.tooManyRequests(Math.max(1, Math.ceil((w.resetAtMs - now) / 1000)));
  });

  // Every `{wallet}` route gets the wallet guard first in its preValidation chain.
  app.addHook('onRoute', (route: RouteOptions) => {
    if (!route.url.includes(':wallet')) return;
    const existing = route.preValidation ? (Array.isArray(route.preValidation) ? route.preValidation : [route.preValidation]) : [];
    route.preValidation = [walletGuard, ...existing];
  });

  async function walletGuard(req: FastifyRequest): Promise<void> {
    const user = requireUser(req);
    const id = parseId((req.params as Record<string, unknown>).wallet);
    if (id === null) throw Errors.walletNotFound();
    const wallet = await findWalletForUser(ctx.store.db, user.id, id);
    if (!wallet) throw Errors.walletNotFound();
    req.wallet = wallet;
  }
}
