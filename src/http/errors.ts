/**
 * The error handler and the not-found handler: every error leaves as the envelope, with the
 * catalogue's status and message. 5xx causes are logged with the request, never returned.
 */
import type { FastifyError, FastifyReply, FastifyRequest, RouteOptions } from 'fastify';
import FindMyWay, { type HTTPMethod } from 'find-my-way';
import { AppError, Errors, isAppError } from '../errors.js';
import { ajvToAppError } from './validation.js';
import type { App } from './types.js';

const FASTIFY_CODES: Record<string, () => AppError> = {
  FST_ERR_CTP_BODY_TOO_LARGE: Errors.payloadTooLarge,
  FST_ERR_CTP_INVALID_MEDIA_TYPE: Errors.unsupportedMediaType,
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: () => Errors.badRequest('Invalid Content-Length'),
  FST_ERR_CTP_EMPTY_JSON_BODY: Errors.malformedJson,
  FST_ERR_CTP_INVALID_JSON_BODY: Errors.malformedJson,
  FST_ERR_CTP_EMPTY_TYPE: Errors.unsupportedMediaType,
  FST_ERR_CTP_INVALID_TYPE: Errors.unsupportedMediaType,
};

export function toAppError(err: unknown): AppError {
  if (isAppError(err)) return err;
  const fe = err as FastifyError & { validationContext?: string };
  if (fe && Array.isArray(fe.validation)) return ajvToAppError(fe.validation as never, fe.validationContext);
  if (fe?.code && FASTIFY_CODES[fe.code]) return FASTIFY_CODES[fe.code]!();
  if (fe instanceof SyntaxError || (fe?.statusCode === 400 && /JSON/i.test(fe.message ?? ''))) return Errors.malformedJson();
  if (typeof fe?.statusCode === 'number' && fe.statusCode >= 400 && fe.statusCode < 500) {
    return new AppError(fe.statusCode, 'BAD_REQUEST', fe.statusCode === 404 ? 'Route not found' : 'Bad request');
  }
  return Errors.internal(err);
}

export function sendError(reply: FastifyReply, e: AppError) {
  return reply
    .status(e.statusCode)
    .headers(e.headers)
    .type('application/json; charset=utf-8')
    .send({ status: 'error', message: e.message, data: e.data });
}

const ALL_METHODS: HTTPMethod[] = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'];

export function installErrorHandling(app: App): void {
  // A second router that only knows which methods each path takes, to tell 405 from 404.
  const methods = FindMyWay({ ignoreTrailingSlash: true });
  app.addHook('onRoute', (route: RouteOptions) => {
    const list = Array.isArray(route.method) ? route.method : [route.method];
    for (const m of list) {
      const method = m.toUpperCase() as HTTPMethod;
      if (!methods.hasRoute(method, route.url)) methods.on(method, route.url, () => undefined);
    }
  });

  app.setErrorHandler((err: unknown, req: FastifyRequest, reply: FastifyReply) => {
    const e = toAppError(err);
    if (e.statusCode >= 500) {
      req.log.error({ err: e.cause ?? err, code: e.code }, 'request failed');
    } else {
      req.log.debug({ code: e.code, status: e.statusCode }, 'request rejected');
    }
    return sendError(reply, e);
  });

  app.setNotFoundHandler((req: FastifyRequest, reply: FastifyReply) => {
    const path = req.url.split('?')[0] ?? '/';
    const allow = ALL_METHODS.filter((m) => m !== req.method && methods.find(m, path) !== null);
    if (allow.length > 0) return sendError(reply, Errors.methodNotAllowed(allow));
    return sendError(reply, Errors.routeNotFound());
  });
}
