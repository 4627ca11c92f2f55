/**
 * The response serializer compiler (src/http/serializer.ts): plain nullable unions become type
 * lists for fast-json-stringify, with the same output as the union gives, and nothing else changes.
 */
import { Type } from '@sinclair/typebox';
import fastJson from 'fast-json-stringify';
import { describe, expect, it } from 'vitest';
import { nullableAsTypeList, serializerCompiler } from '../../src/http/serializer.js';

const Nullable = <T extends ReturnType<typeof Type.String>>(t: T) => Type.Union([t, Type.Null()]);

const schema = Type.Object({
  s: Nullable(Type.String({ description: 'text' })),
  i: Type.Union([Type.Integer(), Type.Null()]),
  b: Type.Union([Type.Boolean(), Type.Null()]),
  o: Type.Union([Type.Object({ x: Type.Integer() }), Type.Null()]),
  e: Type.Union([Type.Literal('a'), Type.Literal('b')]),
  list: Type.Array(Type.Union([Type.String(), Type.Null()])),
});

describe('serializer compiler', () => {
  it('writes plain nullable unions as type lists and leaves every other schema as it is', () => {
    const out = nullableAsTypeList(JSON.parse(JSON.stringify(schema))) as any;
    expect(out.properties.s).toEqual({ type: ['string', 'null'], description: 'text' });
    expect(out.properties.i).toEqual({ type: ['integer', 'null'] });
    expect(out.properties.b).toEqual({ type: ['boolean', 'null'] });
    expect(out.properties.list.items).toEqual({ type: ['string', 'null'] });
    expect(out.properties.o).toEqual(JSON.parse(JSON.stringify(schema.properties.o)));
    expect(out.properties.e).toEqual(JSON.parse(JSON.stringify(schema.properties.e)));
    // The route's own schema object is not touched (the OpenAPI document is built from it).
    expect(schema.properties.s.anyOf).toHaveLength(2);
  });

  it('serialises exactly as fast-json-stringify does with the unions', () => {
    const compiled = serializerCompiler({ schema });
    const plain = fastJson(schema);
    for (const value of [
      { s: null, i: null, b: null, o: null, e: 'a', list: [null, 'x'] },
      { s: 'quote " and \\ and \u0001', i: 7, b: false, o: { x: 1 }, e: 'b', list: [] },
      { s: '', i: 0, b: true, o: null, e: 'a', list: ['', null] },
    ]) {
      expect(compiled(value)).toBe(plain(value));
      expect(compiled(value)).toBe(JSON.stringify(value));
    }
  });
});
