/**
 * pino, with every secret redacted by path wherever it could appear in a log object.
 * Code never logs a secret on purpose; this is the second line of defence.
 */
import pino, { type DestinationStream, type Logger } from 'pino';

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
      timestamp: pino.stdTimeFunctions.isoTime,
    },
    destination,
  );
}
