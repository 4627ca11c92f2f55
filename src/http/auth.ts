/**
 * The hooks of the authenticated scope, in the contract's order of checks:
 * onRequest: bearer token or API key (401), the per-user rate limit (429, with X-RateLimit-*
 * headers; a login token's requests and an API key's are counted apart, docs/operating.md "Rate
 * limits"), then an API key's scope (403, before anything of the route runs);
 * preValidation: the wallet guard for every route with a `{wallet}` segment (404), which runs
 * before the route's own path-object loaders (404) and before body validation (422).
 */
import type { FastifyReply, FastifyRequest, RouteOptions } from 'fastify';
import { AppError, Errors } from '../errors.js';
import type { CountAnonymous } from './anonymous-limit.js';
import type { AppContext } from '../context.js';
import { isDashboardToken, type AuthService } from '../modules/auth/auth.service.js';
import { WalletService } from '../modules/wallets/wallets.service.js';
import { isApiKey, KeyService } from '../modules/keys/keys.service.js';
import { allows, isRouteScope, scopeByRules } from '../modules/keys/keys.scopes.js';
import { retryAfterS, type WindowCounters, type WindowState } from '../lib/rate-limit.js';
import type { App } from './types.js';

/** The Bearer scheme with some credentials; what they are is checked by the auth service. */
const BEARER = /^Bearer[ ]+(.*\S)\s*$/i;
/**
 * The per-user request counters' keys: a prefix and the user id. Login tokens and API keys (the
 * integration) share the user's budget, RATE_LIMIT_PER_MINUTE; a dashboard session (a token from
 * a login with `session: "dashboard"`) counts in a budget of its own, so a busy dashboard never
 * uses up the integration's budget, nor the other way round.
 */
const USER_KEY_PREFIX = 'u:';
const DASHBOARD_KEY_PREFIX = 'd:';

/** The bearer token of the request's Authorization header, or '' when it has none. */
function bearerToken(req: FastifyRequest): string {
  return BEARER.exec(req.headers.authorization ?? '')?.[1] ?? '';
}

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

/**
 * Sets `req.user` (and `req.tokenId` or `req.apiKey`) from the bearer token. With the per-user
 * counters in PostgreSQL, a session token's lookup also counts the request (one round trip) and
 * the window is returned; otherwise null (the caller counts).
 */
async function identify(
  req: FastifyRequest,
  token: string,
  now: number,
  d: { auth: AuthService; keys: KeyService; perUser: WindowCounters | null; budgetOf: (token: string) => Budget },
): Promise<WindowState | null> {
  if (isApiKey(token)) {
    const key = await d.keys.authenticate(token);
    req.user = key.user;
    req.apiKey = { id: key.keyId, scopes: key.scopes };
    return null;
  }
  const budget = d.budgetOf(token);
  if (d.perUser?.inPostgres && budget.limit !== 0) {
    const window = d.perUser.sqlWindow(now);
    const { user, tokenId, count } = await d.auth.authenticateCounting(token, budget.prefix, window);
    req.user = user;
    req.tokenId = tokenId;
    return { count, resetAtMs: window.resetAtMs };
  }
  const { user, tokenId } = await d.auth.authenticate(token);
  req.user = user;
  req.tokenId = tokenId;
  return null;
}

/** The budget a credential's requests count in: its limit a minute (0: none) and its counter's prefix. */
interface Budget {
  limit: number;
  prefix: string;
}

export function installAuth(app: App, ctx: AppContext, auth: AuthService, perUser: WindowCounters, countAnonymous: CountAnonymous): void {
  const user: Budget = { limit: ctx.config.rateLimitPerMinute, prefix: USER_KEY_PREFIX };
  const dashboard: Budget = { limit: ctx.config.dashboardRateLimitPerMinute, prefix: DASHBOARD_KEY_PREFIX };
  const budgetOf = (token: string): Budget => (isDashboardToken(token) ? dashboard : user);
  const wallets = new WalletService(ctx);
  const keys = new KeyService(ctx);
  const deps = { auth, keys, perUser, budgetOf };

  /** The caller's identity; a missing or refused credential counts against the caller's address first. */
  async function identifyOrCount(req: FastifyRequest, now: number): Promise<WindowState | null> {
    try {
      const token = bearerToken(req);
      if (token === '') throw Errors.unauthenticated();
      return await identify(req, token, now, deps);
    } catch (err) {
      if (err instanceof AppError && err.statusCode === 401) await countAnonymous(req);
      throw err;
    }
  }

  app.addHook('onRequest', async (req: FastifyRequest, reply: FastifyReply) => {
    const now = ctx.clock.nowMs();
    const counted = await identifyOrCount(req, now);
    const { limit, prefix } = req.apiKey ? user : budgetOf(bearerToken(req));
    // A limit of 0: no limit for that budget, no headers.
    if (limit !== 0) {
      const w = counted ?? (await perUser.hit(`${prefix}${requireUser(req).id}`, now));
      reply.header('x-ratelimit-limit', String(limit));
      reply.header('x-ratelimit-remaining', String(Math.max(0, limit - w.count)));
      if (w.count > limit && req.routeOptions.config.neverLimited !== true) throw Errors.tooManyRequests(retryAfterS(w, now));
    }
    if (req.apiKey && !allows(req.apiKey.scopes, req.routeOptions.config.scope!)) throw Errors.insufficientScope();
  });

  // Every route declares what an API key needs (config.scope, else keys.scopes.ts's rules).
  app.addHook('onRoute', (route: RouteOptions) => {
    const method = Array.isArray(route.method) ? route.method.join(',') : route.method;
    const scope = route.config?.scope ?? scopeByRules(method, route.url);
    if (!isRouteScope(scope)) throw new Error(`route ${method} ${route.url} declares no API-key scope`);
    route.config = { ...route.config, scope };
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
    const wallet = await wallets.findForUser(user.id, id);
    if (!wallet) throw Errors.walletNotFound();
    req.wallet = wallet;
  }
}
