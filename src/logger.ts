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
  return pino(
    {
      level,
      base: { service: 'wallet-service' },
      redact: { paths: REDACT_PATHS, censor: '[redacted]' },
      // Errors from viem and fetch name the RPC URL (path and query may hold an API key).
      serializers: { err: serializeError },
      timestamp: pino.stdTimeFunctions.isoTime,
    },
    destination,
  );
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

type LogMethod = 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace';
const LOG_METHODS: readonly LogMethod[] = ['fatal', 'error', 'warn', 'info', 'debug', 'trace'];

/**
 * Fastify's per-request child logger, made only when a line is written at an enabled level.
 * pino builds a child's bindings (stringified and passed through the redaction) when the child is
 * created; most requests log nothing at the level in force (the summary line is at info), so
 * the request path does not pay for a child it never uses.
 */
export function lazyChildLogger(parent: Logger, bindings: pino.Bindings, opts: pino.ChildLoggerOptions): Logger {
  let real: Logger | null = null;
  const child = () => (real ??= parent.child(bindings, opts));
  const lazy: Record<string, unknown> = {
    get level() {
      return real?.level ?? parent.level;
    },
    set level(v: string) {
      child().level = v;
    },
    silent: () => undefined,
    child: (b: pino.Bindings, o?: pino.ChildLoggerOptions) => child().child(b, o),
    isLevelEnabled: (l: string) => (real ?? parent).isLevelEnabled(l),
    bindings: () => child().bindings(),
  };
  for (const m of LOG_METHODS) {
    lazy[m] = (...args: unknown[]) => {
      if (!(real ?? parent).isLevelEnabled(m)) return;
      (child()[m] as (...a: unknown[]) => void)(...args);
    };
  }
  return lazy as unknown as Logger;
}
