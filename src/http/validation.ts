/**
 * Request validation: the JSON body parser (nesting depth checked before parsing), one Ajv for
 * bodies (no type coercion: a number where a string belongs is an error) and one for query
 * strings and params (strings coerced to the declared type), and the translation of Ajv errors
 * into the contract's field → messages wording.
 */
import AjvModule, { type ErrorObject } from 'ajv';
import formatsModule from 'ajv-formats';
import type { FastifyRequest, FastifySchemaCompiler } from 'fastify';
import secureJson from 'secure-json-parse';
import { Errors, fieldError, validationError, type AppError, type FieldErrors } from '../errors.js';
import { CLOSE_ARRAY, CLOSE_OBJECT, COMMA, OPEN_ARRAY, OPEN_OBJECT, QUOTE, recordNumberSources, stringEnd } from '../lib/exact-json.js';

/**
 * Deepest nesting a JSON body may have, the body itself being level 1 (`{"content": {}}` is 2).
 * Far beyond any field of the API (webhook `with_headers`, charge `content`/`info`, contract
 * `args` are a few levels), and shallow enough that every recursive walk of a body
 * (JSON.stringify, canonical JSON, Ajv) stays far from the stack limit. V8's JSON.parse is not
 * recursive but is slow on deep nesting (a body of nothing but `[` holds the event loop for a
 * noticeable time), so depth is checked before parsing.
 */
export const MAX_JSON_DEPTH = 64;

/** Field names longer than this are not echoed back; the error is then on `body`. */
const MAX_ECHOED_KEY_CHARS = 100;

function decodeKey(raw: string): string | null {
  if (raw.length > MAX_ECHOED_KEY_CHARS) return null;
  try {
    const key = JSON.parse(`"${raw}"`) as string;
    return key === '' ? null : key;
  } catch {
    return null;
  }
}

/**
 * One linear pass over a JSON text, outside strings, counting `{`/`[` nesting. Returns null
 * when the text stays within MAX_JSON_DEPTH, else the 422: on the top-level field whose value
 * goes too deep, or on `body` when the root is an array (or the key cannot be told).
 * It does not check the text is valid JSON; JSON.parse does that afterwards.
 */
export function jsonDepthError(text: string): AppError | null {
  let depth = 0;
  let rootIsObject = false;
  let expectKey = false;
  let keyStart = -1;
  let keyEnd = -1;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === QUOTE) {
      const start = i + 1;
      i = stringEnd(text, i);
      if (depth === 1 && expectKey) [keyStart, keyEnd, expectKey] = [start, i, false];
    } else if (c === OPEN_OBJECT || c === OPEN_ARRAY) {
      depth++;
      if (depth === 1) expectKey = rootIsObject = c === OPEN_OBJECT;
      if (depth > MAX_JSON_DEPTH) {
        const key = rootIsObject && keyStart >= 0 ? decodeKey(text.slice(keyStart, keyEnd)) : null;
        return key === null
          ? fieldError('body', `The request body must not be nested more than ${MAX_JSON_DEPTH} levels deep.`)
          : fieldError(key, `The ${key} field must not be nested more than ${MAX_JSON_DEPTH} levels deep.`);
      }
    } else if (c === CLOSE_OBJECT || c === CLOSE_ARRAY) {
      depth--;
    } else if (c === COMMA && depth === 1) {
      expectKey = rootIsObject;
    }
  }
  return null;
}

/** A body refused by the parser with a 422, answered after the wallet guard (see checkParsedBody). */
const refusedBodies = new WeakMap<FastifyRequest, AppError>();

/**
 * The `application/json` parser. An empty body is `{}` so missing fields are reported by name;
 * prototype-poisoning keys are dropped by secure-json-parse (what Fastify's own parser does).
 * Numbers are JS numbers as usual; the exact text of those a double cannot hold is recorded
 * for the money fields (lib/exact-json.ts), so `1.123456789012345678` is read as written.
 * Broken JSON is 400 at once. A body nested too deep is never parsed: the request gets a
 * `null` body and its 422 is kept for checkParsedBody, because the order of checks
 * (docs/architecture.md, "HTTP") puts validation (422) after the wallet and the other path
 * objects (404).
 */
export function parseJsonBody(req: FastifyRequest, body: string | Buffer, done: (err: Error | null, body?: unknown) => void): void {
  const text = typeof body === 'string' ? body : body.toString('utf8');
  if (text.trim() === '') return done(null, {});
  const tooDeep = jsonDepthError(text);
  if (tooDeep) {
    refusedBodies.set(req, tooDeep);
    return done(null, null);
  }
  let parsed: unknown;
  try {
    parsed = secureJson.parse(text, undefined, { protoAction: 'remove', constructorAction: 'remove' });
  } catch {
    return done(Errors.malformedJson());
  }
  recordNumberSources(text, parsed);
  done(null, parsed);
}

/** The last preValidation step of every route: throws the 422 the body parser kept, if any. */
export async function checkParsedBody(req: FastifyRequest): Promise<void> {
  const refused = refusedBodies.get(req);
  if (refused) throw refused;
}

// ajv and ajv-formats are CommonJS with a `default` export; under NodeNext ESM it sits one level down.
const Ajv = AjvModule.default;
const addFormats = formatsModule.default;
type Ajv = InstanceType<typeof Ajv>;

function makeAjv(coerce: boolean): Ajv {
  const ajv = new Ajv({
    allErrors: true,
    coerceTypes: coerce ? 'array' : false,
    useDefaults: true,
    removeAdditional: false,
    strict: false,
  });
  addFormats(ajv);
  return ajv;
}

const bodyAjv = makeAjv(false);
const queryAjv = makeAjv(true);

export const validatorCompiler: FastifySchemaCompiler<unknown> = ({ schema, httpPart }) => {
  const ajv = httpPart === 'body' ? bodyAjv : queryAjv;
  return ajv.compile(schema as object);
};

/** `/events/0` → `events.0`; `/with_headers/X-A` → `with_headers.X-A`. */
function fieldOf(err: ErrorObject): string {
  const base = err.instancePath
    .split('/')
    .slice(1)
    .map((s) => s.replace(/~1/g, '/').replace(/~0/g, '~'))
    .join('.');
  if (err.keyword === 'required') {
    const missing = (err.params as { missingProperty: string }).missingProperty;
    return base === '' ? missing : `${base}.${missing}`;
  }
  return base;
}

const TYPE_WORDS: Record<string, string> = {
  string: 'a string',
  integer: 'an integer',
  number: 'a number',
  boolean: 'true or false',
  array: 'an array',
  object: 'an object',
  null: 'null',
};

function messageOf(err: ErrorObject, field: string): string | null {
  const p = err.params as { type?: unknown; limit?: number; format?: string };
  const label = `The ${field} field`;
  switch (err.keyword) {
    case 'required':
      return `${label} is required.`;
    case 'type': {
      const t = String(p.type).split(',')[0] ?? 'valid';
      return `${label} must be ${TYPE_WORDS[t] ?? t}.`;
    }
    case 'minLength':
      return p.limit === 1 ? `${label} is required.` : `${label} must be at least ${p.limit} characters.`;
    case 'maxLength':
      return `${label} must not be greater than ${p.limit} characters.`;
    case 'minimum':
      return `${label} must be at least ${p.limit}.`;
    case 'exclusiveMinimum':
      return `${label} must be greater than ${p.limit}.`;
    case 'maximum':
      return `${label} must not be greater than ${p.limit}.`;
    case 'enum':
    case 'const':
      return `The selected ${field} is invalid.`;
    case 'format':
      if (p.format === 'email') return `${label} must be a valid email address.`;
      if (p.format === 'uri' || p.format === 'url') return `${label} must be a valid URL.`;
      return `${label} format is invalid.`;
    case 'pattern':
      return `${label} format is invalid.`;
    case 'minItems':
      return p.limit === 1 ? `${label} is required.` : `${label} must have at least ${p.limit} items.`;
    case 'maxItems':
    case 'maxProperties':
      return `${label} must not have more than ${p.limit} items.`;
    case 'anyOf':
    case 'oneOf':
      return `${label} is invalid.`;
    case 'additionalProperties':
      return null; // unknown fields are ignored, never an error
    default:
      return `${label} is invalid.`;
  }
}

export function ajvToAppError(errors: ErrorObject[], context: string | undefined): AppError {
  const fields: FieldErrors = {};
  for (const err of errors) {
    const field = fieldOf(err);
    let message: string | null;
    if (field === '') {
      // The whole body or query string has the wrong shape (e.g. a JSON array or a string).
      message = `The request ${context === 'querystring' ? 'query' : 'body'} must be a JSON object.`;
    } else {
      message = messageOf(err, field);
    }
    if (message === null) continue;
    const key = field === '' ? (context === 'querystring' ? 'query' : 'body') : field;
    // anyOf reports every branch's error and then its own; keep one clear message a field.
    if (fields[key]?.length) continue;
    (fields[key] ??= []).push(message);
  }
  return validationError(fields);
}
