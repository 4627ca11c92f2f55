/**
 * The error handler and the not-found handler: every error leaves as the envelope, with the
 * catalogue's status and message. 5xx causes are logged with the request, never returned.
 */
import { STATUS_CODES, type IncomingMessage, type ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import type { FastifyBaseLogger, FastifyError, FastifyReply, FastifyRequest, RouteOptions } from 'fastify';
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
    return Errors.fastifyRefused(fe.statusCode);
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

/** The envelope of an error, as text (for the places that write to the socket themselves). */
function errorBody(e: AppError): string {
  return JSON.stringify({ status: 'error', message: e.message, data: e.data });
}

/** Requests already routed a second time after a bad percent-escape (never a third). */
const rerouted = new WeakSet<IncomingMessage>();

/**
 * Fastify's `frameworkErrors`: errors the router meets before any route or hook runs.
 *
 * A bad percent-escape in the path (`/api/wallet/%zz`, or valid escapes of invalid UTF-8 such
 * as `%ff`): the request is routed again with every `%` of its path escaped as `%25`, so the
 * segment arrives as the literal text `%zz` and takes the contract's order of checks like any
 * other bad id: 401 without a token, then 404 `Wallet not found` (a non-integer wallet id), or
 * the other path object's 404, or 404 `Route not found`. A path of only `%25` escapes always
 * decodes; should it not, the second time is a 400 `Malformed URL` in the envelope.
 *
 * A path parameter over the router's maxParamLength: 414 `URI too long` in the envelope.
 */
export function frameworkErrorHandler(routing: (req: IncomingMessage, res: ServerResponse) => void) {
  return (err: FastifyError, req: FastifyRequest, reply: FastifyReply): void => {
    const raw = req.raw;
    if (err.code === 'FST_ERR_BAD_URL' && !rerouted.has(raw)) {
      rerouted.add(raw);
      const url = raw.url ?? '/';
      const q = url.indexOf('?');
      const [path, query] = q === -1 ? [url, ''] : [url.slice(0, q), url.slice(q)];
      raw.url = path.replaceAll('%', '%25') + query;
      routing(raw, reply.raw);
      return;
    }
    const e =
      err.code === 'FST_ERR_MAX_PARAM_LENGTH'
        ? Errors.uriTooLong()
        : err.code === 'FST_ERR_BAD_URL'
          ? Errors.malformedUrl()
          : toAppError(err);
    req.log.debug({ code: err.code, status: e.statusCode }, 'request rejected by the router');
    void sendError(reply, e);
  };
}

/**
 * Fastify's `clientErrorHandler`: errors of Node's HTTP parser (a header block over
 * maxHeaderSize → 431, conflicting Content-Length and Transfer-Encoding or any other
 * malformed request → 400, a request time-out → 408). No request object exists, so the
 * envelope is written to the socket by hand, with `Connection: close`, then the socket is
 * closed once it is flushed. As Node's own handler does, nothing is written when the socket
 * is gone or a response on it has already begun (its status line is out).
 */
export function clientErrorHandler(log: FastifyBaseLogger) {
  return (err: Error & { code?: string }, socket: Duplex): void => {
    if (err.code === 'ECONNRESET' || socket.destroyed) return;
    const e =
      err.code === 'HPE_HEADER_OVERFLOW'
        ? Errors.headersTooLarge()
        : err.code === 'ERR_HTTP_REQUEST_TIMEOUT'
          ? Errors.requestTimeout()
          : Errors.badRequest('Bad request');
    log.debug({ code: err.code, status: e.statusCode }, 'malformed HTTP request');
    const current = (socket as Duplex & { _httpMessage?: { headersSent?: boolean } | null })._httpMessage;
    if (!socket.writable || current?.headersSent) {
      socket.destroy();
      return;
    }
    const body = errorBody(e);
    const head =
      `HTTP/1.1 ${e.statusCode} ${STATUS_CODES[e.statusCode] ?? 'Error'}\r\n` +
      `Content-Type: application/json; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n`;
    socket.end(head + body, () => socket.destroy());
  };
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
