/**
 * buildApp(ctx): registers plugins and modules in order and returns the Fastify instance.
 * It never listens (server.ts does).
 */
import Fastify, { LogController } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import swagger from '@fastify/swagger';
import secureJson from 'secure-json-parse';
import { Type } from '@sinclair/typebox';
import type { AppContext } from './context.js';
import { Errors } from './errors.js';
import { installAuth } from './http/auth.js';
import { installIdempotency } from './http/idempotency.js';
import { ok, responses } from './http/envelope.js';
import { installErrorHandling } from './http/errors.js';
import type { App } from './http/types.js';
import { validatorCompiler } from './http/validation.js';
import { authRoutes, publicAuthRoutes } from './modules/auth/auth.routes.js';
import { AuthService } from './modules/auth/auth.service.js';
import { registerModules, type Services } from './modules/index.js';

export const BODY_LIMIT_BYTES = 1024 * 1024;

export interface BuiltApp {
  app: App;
  services: Services;
}

export async function buildApp(ctx: AppContext): Promise<BuiltApp> {
  const app = Fastify({
    loggerInstance: ctx.log,
    bodyLimit: BODY_LIMIT_BYTES,
    trustProxy: ctx.config.trustProxy,
    // One summary line per request is logged in onResponse below instead of Fastify's pair.
    logController: new LogController({ disableRequestLogging: true }),
    return503OnClosing: true,
    // On close: idle keep-alive connections are closed at once, in-flight requests finish.
    forceCloseConnections: 'idle',
    routerOptions: { ignoreTrailingSlash: true, maxParamLength: 200 },
  }).withTypeProvider<TypeBoxTypeProvider>() as unknown as App;

  app.setValidatorCompiler(validatorCompiler);
  app.decorateRequest('user', null);
  app.decorateRequest('tokenId', null);
  app.decorateRequest('wallet', null);

  // JSON is the only body type. An empty body is `{}` so missing fields are reported by name;
  // prototype-poisoning keys are dropped by secure-json-parse.
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (_req, body, done) => {
    const text = typeof body === 'string' ? body : body.toString('utf8');
    if (text.trim() === '') return done(null, {});
    try {
      done(null, secureJson.parse(text, undefined, { protoAction: 'remove', constructorAction: 'remove' }));
    } catch {
      done(Errors.malformedJson(), undefined);
    }
  });

  installErrorHandling(app);

  // Draining: a response finished after close() began tells the client to drop the
  // connection, so a keep-alive socket cannot hold the shutdown open.
  let closing = false;
  app.addHook('preClose', async () => {
    closing = true;
  });
  app.addHook('onSend', async (_req, reply) => {
    if (closing) reply.header('connection', 'close');
  });

  app.addHook('onResponse', async (req, reply) => {
    req.log.info(
      { method: req.method, route: req.routeOptions.url ?? req.url.split('?')[0], status: reply.statusCode, ms: Math.round(reply.elapsedTime) },
      'request',
    );
  });

  await app.register(swagger, {
    openapi: {
      info: { title: 'Wallet and Payment Service API', version: '0.1.0' },
      components: { securitySchemes: { bearer: { type: 'http', scheme: 'bearer' } } },
      security: [{ bearer: [] }],
    },
  });

  const auth = new AuthService(ctx);
  let services!: Services;

  await app.register(
    async (api) => {
      const typed = api as unknown as App;
      await typed.register(async (pub) => publicAuthRoutes(pub as unknown as App, auth));
      await typed.register(async (priv) => {
        const scoped = priv as unknown as App;
        installAuth(scoped, ctx, auth);
        installIdempotency(scoped, ctx);
        await authRoutes(scoped, auth);
        services = await registerModules(scoped, ctx, auth);
        scoped.get(
          '/openapi.json',
          { schema: { hide: true, response: responses(Type.Any()) } },
          async () => ok(app.swagger(), 'OpenAPI document'),
        );
      });
    },
    { prefix: '/api' },
  );

  await app.ready();
  return { app, services };
}
