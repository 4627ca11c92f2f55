/**
 * Requests without a valid credential are limited per client address
 * (`PUBLIC_RATE_LIMIT_PER_MINUTE`, default 600): the public pages and
 * their JSON (checkout, docs, OpenAPI, /metrics, login), unknown paths, and authenticated routes
 * whose credential is missing or refused (counted when the 401 is decided, so a client guessing
 * tokens meets the limit too). A request with a valid credential is never counted here (the
 * per-user limit applies). Over the limit: 429 `Too Many Requests` with `Retry-After`, shared
 * across processes like the other limits (src/lib/rate-limit.ts).
 */
import type { FastifyRequest } from 'fastify';
import type { AppContext } from '../context.js';
import { Errors } from '../errors.js';
import { retryAfterS, type WindowCounters } from '../lib/rate-limit.js';
import type { App } from './types.js';

/** Counts one request of the caller's address; throws 429 once the minute's budget is spent. */
export type CountAnonymous = (req: FastifyRequest) => Promise<void>;

export function installAnonymousLimit(app: App, ctx: AppContext, counters: WindowCounters): CountAnonymous {
  const limit = ctx.config.publicRateLimitPerMinute;
  const count: CountAnonymous = async (req) => {
    if (limit === 0) return;
    const now = ctx.clock.nowMs();
    const w = await counters.hit(`a:${req.ip}`, now);
    if (w.count > limit) throw Errors.tooManyRequests(retryAfterS(w, now));
  };
  // Routes of the authenticated scope carry an API-key scope: they count only on a 401 (auth.ts).
  // A callback hook: an authenticated request (every one a busy service answers) passes it
  // without a promise.
  app.addHook('onRequest', (req, _reply, done) => {
    if (req.routeOptions.config?.scope !== undefined) return done();
    count(req).then(() => done(), done);
  });
  return count;
}
