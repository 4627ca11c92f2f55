/**
 * One HTTP attempt of a delivery, with every limit the contract names:
 * - connect time-out (10 s by default) on the socket, read time-out (20 s) for the response
 *   headers and between body chunks, and an overall time-out (30 s) for the whole attempt;
 * - redirects are never followed (undici's `request` does not follow them; a 3xx is a failure);
 * - at most 1 KiB of the answer is read and kept, the rest is discarded with the connection;
 * - the `Retry-After` of the answer is read as a delay (the worker decides what it means);
 * - unless private destinations are allowed, every connection goes through `guardedLookup`, so a
 *   name that now resolves inside is refused at connect time, and IP literals are checked here.
 */
import { isIP } from 'node:net';
import { performance } from 'node:perf_hooks';
import { Agent, request } from 'undici';
import { guardedLookup, isForbiddenAddress } from './webhooks.ssrf.js';

export const RESPONSE_BODY_LIMIT_BYTES = 1024;
const ERROR_TEXT_LIMIT = 1000;

export interface SenderOptions {
  connectTimeoutMs: number;
  readTimeoutMs: number;
  totalTimeoutMs: number;
  allowPrivate: boolean;
  /** Connections kept per receiver origin (the worker's concurrency bounds the total). */
  connectionsPerOrigin: number;
}

export interface AttemptOutcome {
  delivered: boolean;
  statusCode: number | null;
  durationMs: number;
  /** First 1 KiB of the answer, as text. */
  responseBody: string | null;
  error: string | null;
  /** The answer's `Retry-After` as a delay in ms from its arrival, or null. */
  retryAfterMs?: number | null;
}

export class DeliverySender {
  readonly #agent: Agent;
  readonly #opts: SenderOptions;

  constructor(opts: SenderOptions) {
    this.#opts = opts;
    this.#agent = new Agent({
      connect: {
        timeout: opts.connectTimeoutMs,
        ...(opts.allowPrivate ? {} : { lookup: guardedLookup }),
      },
      headersTimeout: opts.readTimeoutMs,
      bodyTimeout: opts.readTimeoutMs,
      connections: opts.connectionsPerOrigin,
      pipelining: 1,
      keepAliveTimeout: 4_000,
      keepAliveMaxTimeout: 10_000,
    });
  }

  async send(url: string, headers: Record<string, string>, body: string): Promise<AttemptOutcome> {
    const started = performance.now();
    const elapsed = () => Math.round(performance.now() - started);
    if (!this.#opts.allowPrivate) {
      const host = new URL(url).hostname.replace(/^\[|\]$/g, '');
      if (isIP(host) !== 0 && isForbiddenAddress(host)) {
        return failure(elapsed(), null, null, 'destination is a private or local address');
      }
    }
    // One timer per attempt, cleared when it ends: AbortSignal.timeout keeps a 30 s timer and a
    // registry entry alive per request long after it finished (measurable at thousands a second).
    const abort = new AbortController();
    const timer = setTimeout(
      () => abort.abort(new DOMException('The attempt timed out', 'TimeoutError')),
      this.#opts.totalTimeoutMs,
    ).unref();
    try {
      return await this.#post(url, headers, body, abort.signal, elapsed);
    } finally {
      clearTimeout(timer);
    }
  }

  async #post(
    url: string,
    headers: Record<string, string>,
    body: string,
    signal: AbortSignal,
    elapsed: () => number,
  ): Promise<AttemptOutcome> {
    let statusCode: number | null = null;
    try {
      const res = await request(url, { method: 'POST', headers, body, dispatcher: this.#agent, signal });
      statusCode = res.statusCode;
      const retryAfterMs = parseRetryAfter(res.headers['retry-after'], Date.now());
      let text: string | null = null;
      let readError: string | null = null;
      try {
        text = await readPrefix(res.body, RESPONSE_BODY_LIMIT_BYTES);
      } catch (err) {
        readError = describeError(err);
        res.body.destroy();
      }
      const durationMs = elapsed();
      if (statusCode >= 200 && statusCode < 300) {
        // The receiver accepted it; a broken body after a 2xx status does not change that.
        return { delivered: true, statusCode, durationMs, responseBody: text, error: null };
      }
      const why = statusCode >= 300 && statusCode < 400 ? `HTTP ${statusCode} (redirects are not followed)` : `HTTP ${statusCode}`;
      return { ...failure(durationMs, statusCode, text, readError === null ? why : `${why}; ${readError}`), retryAfterMs };
    } catch (err) {
      return failure(elapsed(), statusCode, null, describeError(err));
    }
  }

  async close(): Promise<void> {
    await this.#agent.close().catch(() => this.#agent.destroy());
  }
}

function failure(durationMs: number, statusCode: number | null, responseBody: string | null, error: string): AttemptOutcome {
  return { delivered: false, statusCode, durationMs, responseBody, error: error.slice(0, ERROR_TEXT_LIMIT) };
}

/**
 * `Retry-After` (RFC 9110 §10.2.3) as a delay in ms from `nowMs`: a whole number of seconds or
 * an HTTP date. Null when absent or unreadable; a date already past is 0.
 */
export function parseRetryAfter(value: string | string[] | undefined, nowMs: number): number | null {
  const v = (Array.isArray(value) ? value[0] : value)?.trim();
  if (v === undefined || v === '') return null;
  if (/^\d+$/.test(v)) return Math.min(Number(v), 1e9) * 1000;
  const at = Date.parse(v);
  if (Number.isNaN(at) || !/[a-z]/i.test(v)) return null;
  return Math.max(0, at - nowMs);
}

/** Reads up to `limit` bytes; leaving the loop early destroys the stream (and its connection). */
async function readPrefix(stream: AsyncIterable<Buffer>, limit: number): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of stream) {
    chunks.push(chunk);
    size += chunk.length;
    if (size >= limit) break;
  }
  // NUL cannot be stored in a PostgreSQL text column; a cut multi-byte character becomes U+FFFD.
  return Buffer.concat(chunks).subarray(0, limit).toString('utf8').replaceAll('\u0000', '');
}

/** A short, secret-free description of why an attempt failed. */
function describeError(err: unknown): string {
  const e = err as { code?: string; name?: string; message?: string; cause?: { code?: string } } | null;
  const code = e?.code ?? e?.cause?.code;
  switch (code) {
    case 'UND_ERR_CONNECT_TIMEOUT':
      return 'connect timeout';
    case 'UND_ERR_HEADERS_TIMEOUT':
    case 'UND_ERR_BODY_TIMEOUT':
      return 'read timeout';
    case 'EWEBHOOKPRIVATE':
      return 'destination resolves to a private or local address';
    case 'ECONNREFUSED':
      return 'connection refused';
    case 'ECONNRESET':
    case 'UND_ERR_SOCKET':
      return 'connection reset';
    case 'ENOTFOUND':
    case 'EAI_AGAIN':
      return 'host not found';
    default:
      break;
  }
  if (e?.name === 'TimeoutError' || e?.name === 'AbortError') return 'total timeout';
  return `request failed${code ? ` (${code})` : ''}`;
}
