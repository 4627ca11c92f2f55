/**
 * Response serialisers: fast-json-stringify on each route's response schema (Fastify's own
 * choice), with every nullable union `anyOf: [X, {type: "null"}]` of a plain type given to it as
 * `type: [X, "null"]`. Both say the same in JSON Schema; for the union fast-json-stringify runs a
 * validator on each value to pick its branch, for the type list it only tests the value's type
 * (the transaction list: 12 nullable fields on each of up to 1,000 rows). The schemas the routes
 * declare, and so the OpenAPI document, stay as written.
 */
import fastJson from 'fast-json-stringify';

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

const PLAIN = new Set(['string', 'integer', 'number', 'boolean']);

/** A copy of `schema` (string keys only) with plain nullable unions as type lists. */
export function nullableAsTypeList(schema: unknown): Json {
  if (Array.isArray(schema)) return schema.map(nullableAsTypeList);
  if (schema === null || typeof schema !== 'object') return schema as Json;
  const s = schema as Record<string, unknown>;
  const anyOf = s.anyOf;
  if (Array.isArray(anyOf) && anyOf.length === 2) {
    const [value, none] = anyOf as Array<Record<string, unknown>>;
    if (none?.type === 'null' && Object.keys(none).length === 1 && typeof value?.type === 'string' && PLAIN.has(value.type)) {
      const { anyOf: _, ...rest } = s;
      return nullableAsTypeList({ ...rest, ...value, type: [value.type, 'null'] });
    }
  }
  const out: { [key: string]: Json } = {};
  for (const [k, v] of Object.entries(s)) out[k] = nullableAsTypeList(v);
  return out;
}

type FjsSchema = Parameters<typeof fastJson>[0];

/** A serializer compiler for `schema` alone (no shared schema to refer to). */
export function serializerCompiler({ schema }: { schema?: unknown }): (data: unknown) => string {
  return fastJson(nullableAsTypeList(schema) as unknown as FjsSchema);
}

/**
 * Fastify's serializer builder (its `schemaController.compilersFactory.buildSerializer`): the
 * compiler for every route and `reply.compileSerializationSchema`, with the schemas the app
 * registered (src/http/components.ts), by `$id`, for the routes' `$ref`s to resolve against.
 * Fastify calls it with each context's registered schemas.
 */
export function buildSerializer(externalSchemas?: unknown): typeof serializerCompiler {
  const schema: Record<string, FjsSchema> = {};
  for (const [id, s] of Object.entries((externalSchemas ?? {}) as Record<string, unknown>))
    schema[id] = nullableAsTypeList(s) as unknown as FjsSchema;
  return ({ schema: route }) => fastJson(nullableAsTypeList(route) as unknown as FjsSchema, { schema });
}
