/**
 * Examples for the OpenAPI document, so the reference shows a realistic body for every request
 * and every response, errors included. A schema that carries its own `examples` keeps them;
 * otherwise one is built from the schema, with values chosen by field name (an address looks
 * like an address, an amount has 18 decimals, a datetime is `YYYY-MM-DD HH:MM:SS`).
 */
import type { TSchema } from '@sinclair/typebox';
import { componentOf } from './components.js';

type Json = null | boolean | number | string | Json[] | { [k: string]: Json };

const DATETIME = '2026-01-15 12:00:00';
const ADDRESS = '0x8ba1f109551bD432803012645Ac136ddd64DBA72';
const TX_HASH = '0x5c504ed432cb51138bcf09aa5e8a410dd4a1e204ef84bfed1be16dfba1b22060';

/** Values by field name, for the fields whose generic value would mislead. */
const BY_NAME: Record<string, Json> = {
  id: 1,
  uuid: '6f1c2c1e-0f5e-4c43-9d38-2f5e3c1b9a10',
  name: 'Main wallet',
  email: 'alice@example.com',
  password: 'correct horse battery staple',
  token: 'ETH',
  token_type: 'Bearer',
  symbol: 'ETH',
  currency_symbol: 'ETH',
  address: ADDRESS,
  from: ADDRESS,
  to: '0x71C7656EC7ab88b098defB751B7401B5f6d8976F',
  from_address: ADDRESS,
  to_address: '0x71C7656EC7ab88b098defB751B7401B5f6d8976F',
  contract: '0xA0b86991c6218b36c1d19D4a2e9Eb0cE3606eB48',
  tx_hash: TX_HASH,
  hash: TX_HASH,
  block_hash: '0x9b0c2d1d6c1f2e4f3a5b7c9d0e1f2a3b4c5d6e7f8091a2b3c4d5e6f708192a3b',
  url: 'https://shop.example.com/hooks/wallet',
  rpc_url: 'https://rpc.example.com',
  block_explorer: 'https://etherscan.io',
  payment_uri: `ethereum:${ADDRESS}@1?value=250000000000000000`,
  description: 'Payments for the web shop',
  message: 'OK',
  status: 'pending',
  type: 'send',
  network: 1,
  chain_id: 1,
  decimals: 18,
  confirmations: 12,
  mnemonic: 'test test test test test test test test test test test junk',
  private_key: '0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d',
  signature: 'whsec_3f9a1c2b7d',
  secret: 'whsec_3f9a1c2b7d',
  event: 'transaction.confirmed',
  events: ['transaction.confirmed', 'charge.paid'],
};

function isAmountField(key: string): boolean {
  return (
    /(^|_)(amount|balance|fee|fees|paid_amount|value|gas_price|gas_used|max_fee|priority_fee|fee_reserved)$/.test(key) ||
    key.endsWith('_amount')
  );
}

/** The JSON Schema keywords an example is made from. */
interface SchemaWords {
  $ref?: string;
  examples?: unknown;
  example?: unknown;
  const?: unknown;
  default?: unknown;
  enum?: unknown;
  anyOf?: TSchema[];
  oneOf?: TSchema[];
  allOf?: TSchema[];
  type?: string | string[];
  properties?: Record<string, TSchema>;
  items?: TSchema;
  minimum?: number;
  format?: string;
  pattern?: string;
  minLength?: number;
}

/** An example value for `schema` (found under `key`, when it is an object's property). */
export function exampleOf(schema: TSchema | undefined, key = ''): Json {
  if (schema === undefined) return null;
  const s = schema as SchemaWords;
  if (typeof s.$ref === 'string') return exampleOf(componentOf(s.$ref), key);
  if (Array.isArray(s.examples) && s.examples.length > 0) return s.examples[0] as Json;
  if (s.example !== undefined) return s.example as Json;
  if (s.const !== undefined) return s.const as Json;
  if (s.default !== undefined) return s.default as Json;
  if (Array.isArray(s.enum) && s.enum.length > 0) return s.enum[0] as Json;
  const members = s.anyOf ?? s.oneOf;
  if (members) {
    const nonNull = members.find((m) => (m as Record<string, unknown>).type !== 'null') ?? members[0];
    return exampleOf(nonNull, key);
  }
  if (Array.isArray(s.allOf)) return Object.assign({}, ...s.allOf.map((m) => exampleOf(m, key))) as Json;
  const type = Array.isArray(s.type) ? s.type.find((t) => t !== 'null') : s.type;
  switch (type) {
    case 'null':
      return null;
    case 'object': {
      const out: Record<string, Json> = {};
      for (const [k, v] of Object.entries(s.properties ?? {})) out[k] = exampleOf(v, k);
      return out;
    }
    case 'array':
      return key === 'events' ? BY_NAME.events! : [exampleOf(s.items, singular(key))];
    case 'integer':
    case 'number':
      return typeof BY_NAME[key] === 'number' ? BY_NAME[key]! : Math.max(1, Number(s.minimum ?? 1));
    case 'boolean':
      return true;
    case 'string':
      return stringExample(s, key);
    default:
      return BY_NAME[key] ?? (isAmountField(key) ? '1.500000000000000000' : {});
  }
}

function singular(key: string): string {
  return key.endsWith('s') ? key.slice(0, -1) : key;
}

function stringExample(s: SchemaWords, key: string): Json {
  const named = BY_NAME[key];
  if (typeof named === 'string') return named;
  if (isAmountField(key)) return '1.500000000000000000';
  if (key.endsWith('_at') || s.format === 'date-time') return DATETIME;
  if (s.format === 'email') return 'alice@example.com';
  if (s.format === 'uri' || s.format === 'url') return 'https://shop.example.com/hooks/wallet';
  if (typeof s.pattern === 'string' && s.pattern.includes('0x')) return ADDRESS;
  const text = key === '' ? 'text' : key.replace(/_/g, ' ');
  return typeof s.minLength === 'number' && text.length < s.minLength ? text.padEnd(s.minLength, 'x') : text;
}

/**
 * What each error status means on this API, with the envelope it answers with, and the name of
 * the shared response (`#/components/responses/NotFound`) the operations that answer it so point to.
 */
export const ERROR_EXAMPLES: Record<number, { name: string; description: string; message: string; data?: Json }> = {
  400: {
    name: 'BadRequest',
    description: 'Malformed JSON, or a business rule refused the request (e.g. insufficient balance)',
    message: 'Malformed JSON body',
  },
  401: {
    name: 'Unauthenticated',
    description: 'No bearer token (`Unauthenticated`), or an expired, revoked or unknown one (`Invalid token`)',
    message: 'Unauthenticated',
  },
  403: {
    name: 'Forbidden',
    description: 'An API key without the scope the route needs, or any API key where the route takes a login token only',
    message: 'Insufficient scope',
  },
  404: {
    name: 'NotFound',
    description: 'The wallet (or another object in the path) does not exist or belongs to another user',
    message: 'Wallet not found',
  },
  405: {
    name: 'MethodNotAllowed',
    description: 'The path exists but does not take this method (see the Allow header)',
    message: 'Method not allowed',
  },
  409: {
    name: 'Conflict',
    description: 'A request with the same Idempotency-Key is still being processed',
    message: 'A request with this Idempotency-Key is still in progress',
  },
  413: { name: 'PayloadTooLarge', description: 'The body is larger than 1 MiB', message: 'Payload too large' },
  415: { name: 'UnsupportedMediaType', description: 'The body is not application/json', message: 'Unsupported media type' },
  422: {
    name: 'ValidationFailed',
    description: 'Validation failed: `data` maps each field to its messages',
    message: 'The amount field is required',
    data: { amount: ['The amount field is required.'] },
  },
  429: {
    name: 'TooManyRequests',
    description: 'Over the per-user rate limit (or the failed-login limit); see Retry-After',
    message: 'Too Many Requests',
  },
  500: {
    name: 'InternalError',
    description: 'An internal error; the details are in the log under the X-Request-Id',
    message: 'Internal server error',
  },
  502: { name: 'NodeError', description: 'The blockchain node answered with an error', message: 'The blockchain node returned an error' },
  503: {
    name: 'Unavailable',
    description:
      'The blockchain node (or the database) is unavailable; a transient node fault (time-out, HTTP 5xx or 429, rate limit) carries Retry-After',
    message: 'The blockchain node is unavailable',
  },
};

/** A copy of `schema` with a description and an example, unless it has its own. */
export function withExample(schema: TSchema, description: string, example: Json): TSchema {
  const s = schema as Record<string, unknown>;
  return {
    ...schema,
    description: (s.description as string | undefined) ?? description,
    examples: Array.isArray(s.examples) ? s.examples : [example],
  } as TSchema;
}

/** The responses of a route with a description and an example each. */
export function describeResponses(response: Record<string, TSchema>): Record<string, TSchema> {
  const out: Record<string, TSchema> = {};
  for (const [code, schema] of Object.entries(response)) {
    // A response with its own media types (a CSV file: csvResponses) carries its own example.
    if ('content' in schema) {
      out[code] = schema;
      continue;
    }
    const error = ERROR_EXAMPLES[Number(code)];
    out[code] = error
      ? withExample(schema, error.description, { status: 'error', message: error.message, data: error.data ?? null })
      : withExample(schema, 'Success: the envelope with `data`', exampleOf(schema));
  }
  return out;
}
