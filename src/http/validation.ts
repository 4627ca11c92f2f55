/**
 * Request validation: one Ajv for bodies (no type coercion: a number where a string belongs is
 * an error) and one for query strings and params (strings coerced to the declared type), and
 * the translation of Ajv errors into the contract's field → messages wording.
 */
import AjvModule, { type ErrorObject } from 'ajv';
import formatsModule from 'ajv-formats';
import type { FastifySchemaCompiler } from 'fastify';
import { validationError, type AppError, type FieldErrors } from '../errors.js';

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

export const validatorCompiler: FastifySchemaCompiler<any> = ({ schema, httpPart }) => {
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
  const p = err.params as Record<string, unknown>;
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
