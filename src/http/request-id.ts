/**
 * X-Request-Id: the caller's, when it sent one of at most 128 printable ASCII characters, else
 * a new random one. Fastify puts it on the request's child logger (`request_id` in every log
 * line of the request) and this hook returns it on every response, errors included.
 *
 * Fastify's own `requestIdHeader` would take any header value as is; it is off, and `genReqId`
 * reads the header itself so an over-long or binary value is replaced rather than logged.
 */
import { randomUUID } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { App } from './types.js';

export const REQUEST_ID_HEADER = 'x-request-id';
export const REQUEST_ID_MAX_LENGTH = 128;
const PRINTABLE = /^[\x21-\x7e](?:[\x20-\x7e]*[\x21-\x7e])?$/;

/** The caller's id if acceptable, else null. */
export function acceptableRequestId(value: unknown): string | null {
  if (typeof value !== 'string' || value.length === 0 || value.length > REQUEST_ID_MAX_LENGTH) return null;
  return PRINTABLE.test(value) ? value : null;
}

export function genReqId(req: IncomingMessage): string {
  return acceptableRequestId(req.headers[REQUEST_ID_HEADER]) ?? randomUUID();
}

/** The Fastify options that make the id (spread into the Fastify factory's options). */
export const requestIdOptions = {
  genReqId,
  requestIdHeader: false,
} as const;

/** The key of the id in log lines (Fastify's LogController option). */
export const REQUEST_ID_LOG_LABEL = 'request_id';

export function installRequestId(app: App): void {
  app.addHook('onRequest', (req: FastifyRequest, reply: FastifyReply, done: () => void) => {
    reply.header(REQUEST_ID_HEADER, req.id);
    done();
  });
}
