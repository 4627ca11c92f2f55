/** The response envelope `{status, message, data}` and its TypeBox schemas. */
import { Type, type Static, type TSchema } from '@sinclair/typebox';
import { component } from './components.js';

/** The `data` of a 422: each failing field with its messages. */
export const FieldErrorsSchema = Type.Record(Type.String(), Type.Array(Type.String()));

const ErrorEnvelopeSchema = Type.Object({
  status: Type.Literal('error'),
  message: Type.String(),
  data: Type.Union([Type.Null(), component('ValidationErrors', FieldErrorsSchema), Type.Object({ reason: Type.String() })]),
});

/**
 * The error envelope as a route's response: the component inside an `allOf` of one, because the
 * document keeps no keyword beside a `$ref` and each route gives its error responses their own
 * description and example (src/http/examples.ts). The serializer treats the two forms alike.
 */
export const ErrorEnvelope = Type.Unsafe<Static<typeof ErrorEnvelopeSchema>>({ allOf: [component('ErrorEnvelope', ErrorEnvelopeSchema)] });

export function Envelope<T extends TSchema>(data: T) {
  return Type.Object({
    status: Type.Literal('success'),
    message: Type.String(),
    data,
  });
}

export interface SuccessBody<T> {
  status: 'success';
  message: string;
  data: T;
}

export function ok<T>(data: T, message = 'OK'): SuccessBody<T> {
  return { status: 'success', message, data };
}

/** Error statuses every authenticated route can answer with. */
const COMMON_ERRORS = [400, 401, 403, 404, 413, 415, 422, 429, 500, 503] as const;

/** Response schemas: the success envelope for 200, the error envelope for every error status. */
export function responses<T extends TSchema>(data: T, extraErrors: number[] = []) {
  const out: Record<number, TSchema> = { 200: Envelope(data) };
  for (const code of [...COMMON_ERRORS, ...extraErrors]) out[code] = ErrorEnvelope;
  return out;
}

/**
 * Response schemas of a route that answers a CSV file: `text/csv` for 200 (its example the
 * file's first lines), the error envelope for every error status, as `responses`.
 */
export function csvResponses(description: string, example: string) {
  const out: Record<number, TSchema> = {
    200: Type.Unsafe<string>({ description, content: { 'text/csv': { schema: Type.String(), example } } }),
  };
  for (const code of COMMON_ERRORS) out[code] = ErrorEnvelope;
  return out;
}
