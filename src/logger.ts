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
  return log;
}

/** Lines wait at most this long in the buffer when fewer than LOG_BATCH_CHARS arrive. */
const LOG_FLUSH_MS = 200;
const LOG_BATCH_CHARS = 4096;

/**
 * Lines gathered into batches before they reach sonic-boom (pino's destination), which writes
 * them. sonic-boom appends each line to its pending string and measures that whole string
 * (`Buffer.byteLength`) on every write, so a line there costs more the more is pending; here it
 * costs an array push and a character count. A batch goes on at LOG_BATCH_CHARS or after
 * LOG_FLUSH_MS; sonic-boom keeps the rest of the job (async writes, EAGAIN on a full pipe, the
 * synchronous flush at exit).
 */
class LineBatches {
  private lines: string[] = [];
  private chars = 0;

  constructor(
    private readonly out: pino.DestinationStream & {
      flush(cb?: (err?: Error) => void): void;
      flushSync(): void;
      destroyed?: boolean;
      sync?: boolean;
    },
  ) {}

  write(line: string): void {
    this.lines.push(line);
    this.chars += line.length;
    if (this.chars >= LOG_BATCH_CHARS) this.handOn();
  }

  /** pino's `logger.flush(cb)`: the batch on, then sonic-boom's own flush. */
  flush(cb?: (err?: Error) => void): void {
    this.handOn();
    this.out.flush(cb);
  }

  /** At exit (a fatal error included): what is gathered, written before the process ends. */
  flushSync(): void {
    // No event loop is left to finish an asynchronous write: the batch goes on as a synchronous
    // one (sonic-boom's `sync`, EAGAIN retried in place). Handed on asynchronously, it was left
    // to a thread-pool write that the exit could overtake (a test's last line once missing in CI).
    this.out.sync = true;
    this.handOn();
    try {
      this.out.flushSync();
    } catch {
      // sonic-boom is busy with an async write: it writes the rest itself before exit
    }
  }

  handOn(): void {
    if (this.chars === 0 || this.out.destroyed === true) return;
    const batch = this.lines.length === 1 ? this.lines[0]! : this.lines.join('');
    this.lines = [];
    this.chars = 0;
    this.out.write(batch);
  }
}

/**
 * Standard output, written in batches: a line a request written on its own (pino's default,
 * one write each through libuv's threads) cost more than the rest of a cached request, mostly in
 * waking whatever reads the other end (journald, a container's logger, a pipe). Batches of about
 * 4 KiB, or what came in LOG_FLUSH_MS. On exit, a fatal error included, what is left is written
 * synchronously; a SIGKILL loses at most the last LOG_FLUSH_MS of lines.
 */
function stdoutInBatches(): DestinationStream {
  // Registered before sonic-boom's own exit hook (pino.destination), so it runs first.
  let batches: LineBatches | null = null;
  process.once('exit', () => batches?.flushSync());
  const dest = pino.destination({ dest: 1, sync: false });
  batches = new LineBatches(dest);
  const b = batches;
  setInterval(() => b.handOn(), LOG_FLUSH_MS).unref();
  return b;
}

/** The per-request summary line: its request id, method, route template, status and time. */
export type AccessLine = (requestId: string, method: string, route: string, status: number, ms: number) => void;

/**
 * The writer of `log`'s per-request summary line, the same JSON line pino writes for
 * `info({ [idLabel]: id, method, route, status, ms }, 'request')` (`fixedLine`).
 */
export function accessLine(log: Logger, idLabel: string): AccessLine {
  return fixedLine(log, 'info', 'request', [idLabel, 'method', 'route', 'status', 'ms']);
}

/** A value of a fixed line's field: a primitive, so no object can carry a secret into it. */
export type LineValue = string | number | boolean | null;

/** The last name of every redacted path (`*.secret` → `secret`): no fixed line may have such a field. */
const REDACTED_NAMES = new Set(REDACT_PATHS.map((p) => p.slice(p.lastIndexOf('.') + 1)));

/**
 * The writer of one kind of line logged on a hot path: the same JSON line pino writes for
 * `log[level]({ [names[0]]: values[0], … }, msg)`, built as one template string from the
 * logger's own bindings and destination. pino redacts every line (a walk of REDACT_PATHS'
 * wildcards) and walks its object generically: that was a large share of a cached request's CPU
 * on the request summary, and a measurable share of a delivery's on its outcome line
 * (BENCHMARKS.md).
 * Such a line needs no redaction: its field names are checked here against the redacted ones,
 * and its values are primitives, JSON-escaped as pino does. A logger that is not pino's own (no
 * destination to write to) logs it through pino.
 */
export function fixedLine(log: Logger, level: 'info' | 'warn', msg: string, names: readonly string[]): (...values: LineValue[]) => void {
  for (const n of names) if (REDACTED_NAMES.has(n)) throw new Error(`a fixed log line cannot have the redacted field ${n}`);
  const dest = (log as unknown as Record<symbol, unknown>)[pino.symbols.streamSym] as DestinationStream | undefined;
  const chindings = (log as unknown as Record<symbol, unknown>)[pino.symbols.chindingsSym];
  if (dest === undefined || typeof chindings !== 'string') {
    return (...values) => {
      const obj: Record<string, LineValue> = {};
      names.forEach((n, i) => (obj[n] = values[i] ?? null));
      log[level](obj, msg);
    };
  }
  const head = `{"level":${log.levels.values[level]},"time":"`;
  const afterTime = `"${chindings}`;
  const keys = names.map((n) => `,${JSON.stringify(n)}:`);
  const tail = `,"msg":${JSON.stringify(msg)}}\n`;
  return (...values) => {
    if (!log.isLevelEnabled(level)) return;
    let line = head + new Date().toISOString() + afterTime;
    for (let i = 0; i < keys.length; i++) line += keys[i]! + JSON.stringify(values[i] ?? null);
    dest.write(line + tail);
  };
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
