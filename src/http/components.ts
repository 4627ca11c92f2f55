/**
 * Shared schemas: the objects several routes answer with (a transaction, a charge, the error
 * envelope...), each declared once with an `$id` and referenced from the routes by
 * `{ $ref: 'Name#' }`. The app registers them all (`addSchema`) before any route; the OpenAPI
 * document lists them once under `components.schemas` and points to them, so the types generated
 * from it (the dashboard's client) name each object once instead of repeating it in every
 * operation. The response serializer resolves the references against the same registered
 * schemas (src/http/serializer.ts), so what a response carries is what the schema says either way.
 *
 * Only response objects are components: request bodies, query strings and path params stay
 * inline, so their validation (and its error wording) never depends on a reference.
 */
import { CloneType, Type, type Static, type TSchema, type TUnsafe } from '@sinclair/typebox';

const registered = new Map<string, TSchema>();

/**
 * Registers `schema` as the component `name` and returns a reference to it, typed as `schema`
 * (a route's handler is checked against the object it refers to). Called once a name, at module
 * load; a second schema under a name taken is a mistake.
 */
export function component<T extends TSchema>(name: string, schema: T): TUnsafe<Static<T>> {
  if (registered.has(name)) throw new Error(`The component ${name} is declared twice`);
  registered.set(name, CloneType(schema, { $id: name }));
  return Type.Unsafe<Static<T>>({ $ref: `${name}#` });
}

/** Every component, in the order declared: for `addSchema` before the routes. */
export function componentSchemas(): TSchema[] {
  return [...registered.values()];
}

/** The schema a `{ $ref: 'Name#' }` points to (undefined for any other reference). */
export function componentOf(ref: string): TSchema | undefined {
  return registered.get(ref.endsWith('#') ? ref.slice(0, -1) : ref);
}
