/**
 * buildApp(ctx): registers plugins and modules in order and returns the Fastify instance.
 * It never listens (server.ts does).
 */
import Fastify, { LogController, type onSendHookHandler, type RouteOptions } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { Logger } from 'pino';
import { accessLine, lazyChildLogger } from './logger.js';
import type { AppContext } from './context.js';
import type { Config } from './config.js';
import { installAnonymousLimit } from './http/anonymous-limit.js';
import { installAuth } from './http/auth.js';
import { installIdempotency } from './http/idempotency.js';
import { clientErrorHandler, frameworkErrorHandler, installErrorHandling } from './http/errors.js';
import { installDocs } from './http/docs.js';
import { installRequestId, REQUEST_ID_LOG_LABEL, requestIdOptions } from './http/request-id.js';
import { createLimits } from './lib/rate-limit.js';
import { VERSION } from './lib/version.js';
import { installMetrics } from './modules/metrics/metrics.routes.js';
import type { MetricsService } from './modules/metrics/metrics.service.js';
import type { App } from './http/types.js';
import { checkParsedBody, parseJsonBody, validatorCompiler } from './http/validation.js';
import { buildSerializer } from './http/serializer.js';
import { componentSchemas } from './http/components.js';
import { authRoutes, publicAuthRoutes } from './modules/auth/auth.routes.js';
import { AuthService } from './modules/auth/auth.service.js';
import { checkoutRoutes } from './modules/checkout/checkout.routes.js';
import { CheckoutService } from './modules/checkout/checkout.service.js';
import { publicRefundRoutes } from './modules/refunds/refunds.routes.js';
import { dashboardRoutes } from './modules/dashboard/dashboard.routes.js';
import { registerModules, type Services } from './modules/index.js';
import { loadSecretFormat } from './modules/secrets/secrets.service.js';

export const BODY_LIMIT_BYTES = 1024 * 1024;

/**
 * Longest path parameter the router takes. Real ids are short (an integer id, a uuid, an event
 * name), and any longer id up to this length goes through the contract's order of checks like
 * any other bad id (401, then 404 `Wallet not found` / the object's 404). Longer: 414 in the
 * envelope (frameworkErrorHandler). Node's own limit on the whole header block is 16 KiB.
 */
export const MAX_PATH_PARAM_CHARS = 1024;

/**
 * The HTTP server's time-outs: a request whose headers have not all
 * arrived in 10 s, or that is not whole in 30 s, is answered 408 and its connection closed; an
 * idle keep-alive connection is closed after 72 s (longer than common load balancers' 60 s, so
 * the balancer, not the service, closes first). Node checks the first two every
 * CONNECTIONS_CHECK_MS (its default, 30 s, would let a slow client hold a socket for 40 s).
 */
export const SERVER_TIMEOUTS_MS = { headers: 10_000, request: 30_000, keepAlive: 72_000 } as const;
const CONNECTIONS_CHECK_MS = 1_000;

export interface BuiltApp {
  app: App;
  services: Services;
  metrics: MetricsService;
}

export async function buildApp(ctx: AppContext): Promise<BuiltApp> {
  // Before anything decrypts: once keys:rotate left no unbound (v1) value, none is accepted.
  await loadSecretFormat(ctx);
  const app = createFastify(ctx);
  installBodyParsing(app);
  installErrorHandling(app);
  installRequestId(app);
  installLifecycleHooks(app, ctx.log);
  await installDocs(app, VERSION);
  const metrics = installMetrics(app, ctx);
  const services = await registerApi(app, ctx);
  await app.ready();
  return { app, services, metrics };
}

function createFastify(ctx: AppContext): App {
  const app = Fastify({
    loggerInstance: ctx.log,
    childLoggerFactory: (logger, bindings, opts) => lazyChildLogger(logger as Logger, bindings, opts),
    bodyLimit: BODY_LIMIT_BYTES,
    trustProxy: trustProxyOption(ctx.config.trustProxy),
    // One summary line per request is logged in onResponse below instead of Fastify's pair.
    logController: new LogController({ disableRequestLogging: true, requestIdLogLabel: REQUEST_ID_LOG_LABEL }),
    return503OnClosing: true,
    http: { headersTimeout: SERVER_TIMEOUTS_MS.headers, connectionsCheckingInterval: CONNECTIONS_CHECK_MS },
    requestTimeout: SERVER_TIMEOUTS_MS.request,
    keepAliveTimeout: SERVER_TIMEOUTS_MS.keepAlive,
    // On close: idle keep-alive connections are closed at once, in-flight requests finish.
    forceCloseConnections: 'idle',
    routerOptions: { ignoreTrailingSlash: true, maxParamLength: MAX_PATH_PARAM_CHARS },
    // The envelope also for what the router and Node's HTTP parser refuse before any route runs.
    frameworkErrors: frameworkErrorHandler((req, res) => app.routing(req, res)),
    clientErrorHandler: clientErrorHandler(ctx.log),
    ...requestIdOptions,
    // The serializer is built with the registered schemas, for the routes' `$ref`s (src/http/components.ts).
    schemaController: { compilersFactory: { buildSerializer } },
  }).withTypeProvider<TypeBoxTypeProvider>() as unknown as App;
  app.setValidatorCompiler(validatorCompiler);
  // At the root before any plugin: a context copies its parent's schemas when it is created.
  for (const schema of componentSchemas()) app.addSchema(schema);
  app.decorateRequest('user', null);
  app.decorateRequest('tokenId', null);
  app.decorateRequest('apiKey', null);
  // Every route as registered (the API-key scope test enumerates them: each has a scope or is public).
  const routeTable: RouteOptions[] = [];
  app.addHook('onRoute', (route) => void routeTable.push(route));
  app.addHook('onRoute', addNoStore);
  app.decorate('routeTable', () => routeTable.map((r) => ({ method: r.method, url: r.url, scope: r.config?.scope ?? null })));
  app.decorateRequest('wallet', null);
  return app;
}

/**
 * TRUST_PROXY for Fastify: a hop count trusts that many hops from the socket's peer inward
 * (Express's meaning; Fastify 5 itself treats a number as "trust nothing"), the rest as given.
 */
function trustProxyOption(tp: Config['trustProxy']): boolean | string[] | ((addr: string, hop: number) => boolean) {
  if (typeof tp !== 'number') return tp;
  return (_addr, hop) => hop < tp;
}

/** A route whose answer carries a secret (`config.noStore`) is never kept by a cache or a browser. */
function addNoStore(route: RouteOptions): void {
  if (route.config?.noStore !== true) return;
  const own = route.onSend ? (Array.isArray(route.onSend) ? route.onSend : [route.onSend]) : [];
  const noStore: onSendHookHandler = (_req, reply, payload, done) => {
    reply.header('cache-control', 'no-store');
    done(null, payload);
  };
  route.onSend = [...own, noStore];
}

/** JSON is the only body type (parseJsonBody: depth limit, prototype-poisoning keys dropped). */
function installBodyParsing(app: App): void {
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('application/json', { parseAs: 'string' }, parseJsonBody);
  // A body the parser refused as too deep is answered last in preValidation: after the wallet
  // guard and the path-object loaders (404), before schema validation (422).
  app.addHook('onRoute', (route) => {
    const pre = route.preValidation ? (Array.isArray(route.preValidation) ? route.preValidation : [route.preValidation]) : [];
    route.preValidation = [...pre, checkParsedBody];
  });
}

/** Draining on close, and one summary log line per request. */
function installLifecycleHooks(app: App, log: Logger): void {
  // Draining: a response finished after close() began tells the client to drop the
  // connection, so a keep-alive socket cannot hold the shutdown open.
  let closing = false;
  app.addHook('preClose', async () => {
    closing = true;
  });
  // Callback hooks, not async ones: every request runs them (no promise each).
  app.addHook('onSend', (_req, reply, payload, done) => {
    if (closing) reply.header('connection', 'close');
    done(null, payload);
  });
  const access = accessLine(log, REQUEST_ID_LOG_LABEL);
  app.addHook('onResponse', (req, reply, done) => {
    // The route's template; an unknown path as sent, without its query.
    access(req.id, req.method, req.routeOptions.url ?? req.url.split('?')[0]!, reply.statusCode, Math.round(reply.elapsedTime));
    done();
  });
}

/** Everything under /api: public auth routes, then the authenticated modules; then the public checkout. */
async function registerApi(app: App, ctx: AppContext): Promise<Services> {
  const limits = await createLimits(ctx.config, ctx.store, ctx.log);
  app.addHook('onClose', async () => limits.close());
  const auth = new AuthService(ctx, limits.logins);
  const countAnonymous = installAnonymousLimit(app, ctx, limits.anonymous);
  let services!: Services;
  await app.register(
    async (api) => {
      const typed = api as unknown as App;
      await typed.register(async (pub) => publicAuthRoutes(pub as unknown as App, auth));
      await typed.register(async (priv) => {
        const scoped = priv as unknown as App;
        installAuth(scoped, ctx, auth, limits.requests, countAnonymous);
        installIdempotency(scoped, ctx);
        await authRoutes(scoped, auth);
        services = await registerModules(scoped, ctx, auth);
      });
    },
    { prefix: '/api' },
  );
  // The payer's side of a charge (GET /api/pay/{uuid}, GET /pay/{uuid}): public, outside the authenticated scope.
  await app.register(async (pub) => checkoutRoutes(pub as unknown as App, new CheckoutService(ctx)));
  // The dashboard's page and assets (GET /dashboard): public HTML; its data comes through the API.
  await app.register(async (pub) => dashboardRoutes(pub as unknown as App));
  // The payer's side of a refund claim (GET/POST /api/refund/{uuid}, GET /refund/{uuid}): public too.
  await app.register(async (pub) => publicRefundRoutes(pub as unknown as App, services.refunds));
  return services;
}
