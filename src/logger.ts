/**
 * pino, with every secret redacted by path wherever it could appear in a log object.
 * Code never logs a secret on purpose; this is the second line of defence.
 */
import pino, { type DestinationStream, type Logger } from 'pino';
import { redactUrls } from './lib/redact.js';

export const REDACT_PATHS = [
  'password',
  '*.password',
  'token',
  '*.token',
  'authorization',
  '*.authorization',
  'req.headers.authorization',
  'req.headers.cookie',
  'headers',
  '*.headers',
  'with_headers',
  '*.with_headers',
  'signature',
  '*.signature',
  'secret',
  '*.secret',
  'private_key',
  '*.private_key',
  'privateKey',
  '*.privateKey',
  'private_key_enc',
  '*.private_key_enc',
  'mnemonic',
  '*.mnemonic',
  'mnemonic_enc',
  '*.mnemonic_enc',
  'signature_enc',
  '*.signature_enc',
  'headers_enc',
  '*.headers_enc',
  'raw_tx',
  '*.raw_tx',
  'app_key',
  'appKey',
  '*.appKey',
];

export function createLogger(level: string, destination?: DestinationStream): Logger {
  const dest = destination ?? stdoutInBatches();
  const log = pino(
    {
      level,
      base: { service: 'wallet-service' },
      redact: { paths: REDACT_PATHS, censor: '[redacted]' },
      // Errors from viem and fetch name the RPC URL (path and query may hold an API key).
      serializers: { err: serializeError },
      timestamp: pino.stdTimeFunctions.isoTime,
    },
    dest,
  );
  // The same lines, to the same place, without the redaction pass: only for the request summary,
  // whose fields (method, route, status, time, request id) are none of REDACT_PATHS' keys.
  ACCESS_LOGGERS.set(log, pino({ level, base: { service: 'wallet-service' }, timestamp: pino.stdTimeFunctions.isoTime }, dest));
  return log;
}

const ACCESS_LOGGERS = new WeakMap<Logger, Logger>();

/** Lines wait at most this long in the buffer when fewer than LOG_BATCH_BYTES arrive. */
const LOG_FLUSH_MS = 200;
const LOG_BATCH_BYTES = 4096;

/**
 * Standard output, written in batches: a line a request written on its own (pino's default,
 * one write each through libuv's threads) cost more than the rest of a cached request, mostly in
 * waking whatever reads the other end (journald, a container's logger, a pipe); batches of 4 KiB,
 * or what came in LOG_FLUSH_MS, cut the cached balance route from 40 to 36 µs a request
 * (BENCHMARKS.md, "Issue 23"). On exit, a fatal error included, pino writes what is left
 * synchronously; a SIGKILL loses at most the last LOG_FLUSH_MS of lines.
 */
function stdoutInBatches(): DestinationStream {
  const dest = pino.destination({ dest: 1, sync: false, minLength: LOG_BATCH_BYTES });
  // sonic-boom's `_len` (the characters waiting; a flush of nothing would still write) and `destroyed`.
  const state = dest as unknown as { _len?: number; destroyed?: boolean };
  setInterval(() => {
    if ((state._len ?? 1) > 0 && state.destroyed !== true) dest.flush();
  }, LOG_FLUSH_MS).unref();
  return dest;
}

/**
 * The logger of `log`'s per-request summary line: pino's redaction of every line (a walk of
 * REDACT_PATHS' wildcards) and a child per request (its bindings stringified and redacted) were a
 * fifth of a cached request's CPU; the summary holds no secret to redact.
 */
export function accessLogger(log: Logger): Logger {
  return ACCESS_LOGGERS.get(log) ?? log;
}

/** pino's error serializer, with every URL in the error reduced to its origin. */
export function serializeError(err: unknown): unknown {
  return redactDeep(pino.stdSerializers.err(err as Error), 0);
}

function redactDeep(value: unknown, depth: number): unknown {
  if (typeof value === 'string') return redactUrls(value);
  if (value === null || typeof value !== 'object' || depth > 8) return value;
  if (Array.isArray(value)) return value.map((v) => redactDeep(v, depth + 1));
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value)) out[k] = redactDeep(v, depth + 1);
  return out;
}

/**
 * Fastify's per-request child logger, made only when a line is written at an enabled level.
 * pino builds a child's bindings (stringified and passed through the redaction) when the child is
 * created; most requests log nothing at the level in force (the summary line is at info), so
 * the request path does not pay for a child it never uses. A class, so a request allocates one
 * small object and no closures.
 */
class LazyChild {
  private real: Logger | null = null;

  constructor(
    private readonly parent: Logger,
    private readonly bindingsOf: pino.Bindings,
    private readonly opts: pino.ChildLoggerOptions,
  ) {}

  private get logger(): Logger {
    return (this.real ??= this.parent.child(this.bindingsOf, this.opts));
  }

  get level(): string {
    return (this.real ?? this.parent).level;
  }

  set level(v: string) {
    this.logger.level = v;
  }

  isLevelEnabled(l: string): boolean {
    return (this.real ?? this.parent).isLevelEnabled(l);
  }

  bindings(): pino.Bindings {
    return this.logger.bindings();
  }

  child(b: pino.Bindings, o?: pino.ChildLoggerOptions): Logger {
    return this.logger.child(b, o);
  }

  silent(): void {}

  fatal(...args: unknown[]): void {
    if (this.isLevelEnabled('fatal')) (this.logger.fatal as (...a: unknown[]) => void)(...args);
  }

  error(...args: unknown[]): void {
    if (this.isLevelEnabled('error')) (this.logger.error as (...a: unknown[]) => void)(...args);
  }

  warn(...args: unknown[]): void {
    if (this.isLevelEnabled('warn')) (this.logger.warn as (...a: unknown[]) => void)(...args);
  }

  info(...args: unknown[]): void {
    if (this.isLevelEnabled('info')) (this.logger.info as (...a: unknown[]) => void)(...args);
  }

  debug(...args: unknown[]): void {
    if (this.isLevelEnabled('debug')) (this.logger.debug as (...a: unknown[]) => void)(...args);
  }

  trace(...args: unknown[]): void {
    if (this.isLevelEnabled('trace')) (this.logger.trace as (...a: unknown[]) => void)(...args);
  }
}

export function lazyChildLogger(parent: Logger, bindings: pino.Bindings, opts: pino.ChildLoggerOptions): Logger {
  return new LazyChild(parent, bindings, opts) as unknown as Logger;
}
