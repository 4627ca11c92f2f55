/**
 * The response serializer compiler (src/http/serializer.ts): plain nullable unions become type
 * lists for fast-json-stringify, with the same output as the union gives, and nothing else changes.
 */
import { Type } from '@sinclair/typebox';
import fastJson from 'fast-json-stringify';
import { describe, expect, it } from 'vitest';
import { buildSerializer, nullableAsTypeList, serializerCompiler } from '../../src/http/serializer.js';
import type { ListRow } from '../../src/modules/transactions/transactions.list.repository.js';
import { TransactionSchema } from '../../src/modules/transactions/transactions.schemas.js';
import { transactionListItem } from '../../src/modules/transactions/transactions.views.js';

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

describe('shared schemas', () => {
  const Item = Type.Object({ id: Type.Integer(), note: Type.Union([Type.String(), Type.Null()]) }, { $id: 'Item' });
  const inline = Type.Object({ item: Type.Object({ id: Type.Integer(), note: Type.Union([Type.String(), Type.Null()]) }) });

  it('resolves a `$ref` to a registered schema, in a type list too, and writes what the inline schema writes', () => {
    const compile = buildSerializer({ Item });
    for (const schema of [
      Type.Object({ item: Type.Unsafe({ $ref: 'Item#' }) }),
      Type.Object({ item: Type.Unsafe({ allOf: [{ $ref: 'Item#' }] }) }),
    ]) {
      const compiled = compile({ schema });
      for (const value of [{ item: { id: 1, note: null } }, { item: { id: 2, note: 'x', secret: 's' }, other: 1 }]) {
        expect(compiled(value)).toBe(serializerCompiler({ schema: inline })(value));
      }
      // A field the shared schema does not declare never leaves.
      expect(compiled({ item: { id: 2, note: 'x', secret: 's' } })).toBe('{"item":{"id":2,"note":"x"}}');
    }
  });
});

describe('the transaction list page', () => {
  const row = (over: Partial<ListRow>): ListRow => ({
    id: 7,
    type: 'transfer',
    status: 'confirmed',
    amount: '1500000000000000000',
    tx_hash: `0x${'ab'.repeat(32)}`,
    block_number: 12,
    block_timestamp: 1_764_000_000,
    block_hash: `0x${'cd'.repeat(32)}`,
    nonce: 3,
    gas: '21000',
    gas_price: '1000000000',
    gas_used: '21000',
    cumulative_gas_used: '42000',
    receipt_status: 1,
    created_at: 1_764_000_000_123,
    updated_at: 1_764_000_001_456,
    data: null,
    failure_reason: null,
    replaced_hashes: null,
    stuck_at: null,
    stuck_reason: null,
    symbol: 'ETH',
    decimals: 18,
    refund_id: null,
    payout_id: null,
    reference: null,
    log_index: -1,
    batch_index: null,
    held_rule: null,
    held_limit: null,
    held_symbol: null,
    held_decimals: null,
    // As a node answers (lower case) and all upper case: the item shows them checksummed.
    from_address: '0x000000000000000000000000000000000000beef',
    to_address: '0xA0EE7A142D267C1F36714E4A8F75612F20A79720',
    ...over,
  });

  it('writes each item with JSON.stringify byte for byte as the schema serialiser does', () => {
    const schemaSerializer = serializerCompiler({ schema: TransactionSchema });
    const rows = [
      row({}),
      row({
        status: 'pending',
        tx_hash: `0x${'01'.repeat(32)}`,
        block_number: null,
        block_timestamp: null,
        block_hash: null,
        gas_used: null,
        cumulative_gas_used: null,
        receipt_status: null,
        stuck_at: 1,
      }),
      row({
        status: 'failed',
        failure_reason: 'cancelled',
        replaced_hashes: `0x${'02'.repeat(32)},0x${'03'.repeat(32)}`,
        receipt_status: 0,
      }),
      row({ type: 'contract', data: '0xa9059cbb0000', symbol: 'TUSD', decimals: 6, amount: '0' }),
      row({
        status: 'awaiting_approval',
        tx_hash: null,
        nonce: null,
        gas: null,
        gas_price: null,
        block_number: null,
        block_timestamp: null,
        block_hash: null,
        held_rule: 'approval_above',
        held_limit: '2500000',
        held_symbol: 'T "6" \\ é',
        held_decimals: 6,
      }),
      row({ type: 'contract', status: 'awaiting_approval', tx_hash: null, nonce: null, held_rule: 'contract_call' }),
      row({ type: 'receipt', refund_id: 4, payout_id: 9, reference: 'inv "42" \\ é ✓ \u0001', symbol: 'Ünicode "sym"' }),
    ];
    for (const r of rows) {
      const item = transactionListItem(r);
      expect(JSON.stringify(item)).toBe(schemaSerializer(item));
      expect([item.from, item.to]).toEqual(['0x000000000000000000000000000000000000bEEF', '0xa0Ee7A142d267C1f36714E4a8F75612F20a79720']);
    }
  });
});
