/**
 * GET /metrics: Prometheus text, bare (not the envelope). When METRICS_TOKEN is set the scraper
 * sends it as a Bearer token; a missing or wrong token is the usual 401 envelope. Without a
 * token the route is open only where METRICS_PUBLIC allows it (by default everywhere but in
 * production): a production service without METRICS_TOKEN does not serve it at all (404, as any
 * unknown path) and says so in its log at start, rather than publish its figures silently.
 */
import { timingSafeEqual } from 'node:crypto';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { AppContext } from '../../context.js';
import { Errors } from '../../errors.js';
import { sha256Hex } from '../../lib/crypto.js';
import type { App } from '../../http/types.js';
import { MetricsService } from './metrics.service.js';

export const METRICS_PATH = '/metrics';

/** Counts every answered request and serves /metrics; returns the service (tests read it). */
export function installMetrics(app: App, ctx: AppContext): MetricsService {
  const metrics = new MetricsService(ctx);

  app.addHook('onResponse', (req: FastifyRequest, reply: FastifyReply, done: () => void) => {
    const route = req.routeOptions.url ?? 'unmatched';
    metrics.observeRequest(req.method, route, reply.statusCode, reply.elapsedTime / 1000);
    done();
  });

  if (ctx.config.metricsToken === null && !ctx.config.metricsPublic) {
    ctx.log.warn(
      'METRICS_TOKEN is not set: GET /metrics is not served (404) in production; set METRICS_TOKEN, or METRICS_PUBLIC=true to serve it without a credential',
    );
    return metrics;
  }
  app.get(METRICS_PATH, { schema: { hide: true } }, async (req, reply) => {
    checkToken(ctx.config.metricsToken, req.headers.authorization);
    const text = await metrics.text();
    return reply.type(metrics.contentType).send(text);
  });
  return metrics;
}

function checkToken(expected: string | null, header: string | undefined): void {
  if (expected === null) return;
  const m = /^Bearer[ ]+(\S+)\s*$/i.exec(header ?? '');
  if (!m?.[1]) throw Errors.unauthenticated();
  // Compare digests, so neither the length nor the content leaks through timing.
  if (!timingSafeEqual(Buffer.from(sha256Hex(m[1]), 'hex'), Buffer.from(sha256Hex(expected), 'hex'))) throw Errors.invalidToken();
}
