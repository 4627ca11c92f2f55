/**
 * A success envelope whose `data` is a long array, sent in chunks.
 *
 * The route's serializer (fast-json-stringify) builds one string by appending: for a
 * 1000-transaction page, a 650 KB rope of some 50,000 pieces. Fastify then measures it
 * (`Buffer.byteLength`, which flattens the rope into a new 650 KB string) and Node copies it into a
 * new 650 KB buffer. Objects that large are allocated in fresh memory every time (V8's large
 * object space, a fresh mapping for the buffer), and on this project's machines the page faults of
 * that fresh memory cost more than serialising the rows (BENCHMARKS.md, "A 1000-row page").
 * Sent in chunks of about CHUNK_CHARS, every string and buffer is small, from memory reused
 * request after request. The bytes are the same as the route's serializer writes (each item by
 * the same schema, compiled by Fastify's serializer compiler); the answer goes out with chunked
 * transfer encoding instead of a Content-Length.
 */
import { Readable } from 'node:stream';
import type { TSchema } from '@sinclair/typebox';
import type { FastifyReply } from 'fastify';

/** From this many items on, a list answers in chunks (a short page answers in one piece). */
export const CHUNKED_FROM_ITEMS = 100;
/** About this many characters a chunk (well under V8's large-object size). */
const CHUNK_CHARS = 48 * 1024;

type SerializeItem = (item: never) => string;

function* chunks(head: string, items: readonly unknown[], serialize: SerializeItem): Generator<Buffer> {
  let s = head;
  for (let i = 0; i < items.length; i++) {
    s += (i === 0 ? '' : ',') + serialize(items[i] as never);
    if (s.length >= CHUNK_CHARS) {
      yield Buffer.from(s);
      s = '';
    }
  }
  yield Buffer.from(`${s}]}`);
}

/**
 * Sends `{"status":"success","message":…,"data":[…items]}`, each item serialised by `itemSchema`,
 * or by `JSON.stringify` when `item` is `'exact'`: the items are built field for field in the
 * schema's order with the schema's types (a test holds the two serialisations byte-equal), and V8's
 * native stringify does in one pass what the schema's serialiser does with a JavaScript escape
 * loop per string (a fifth of a 1000-row page's time). `'json'`: each item is its JSON already.
 */
export function sendEnvelopeInChunks(
  reply: FastifyReply,
  items: readonly object[],
  itemSchema: TSchema | 'exact',
  message: string,
): FastifyReply;
export function sendEnvelopeInChunks(reply: FastifyReply, items: readonly string[], itemSchema: 'json', message: string): FastifyReply;
export function sendEnvelopeInChunks(
  reply: FastifyReply,
  items: readonly unknown[],
  itemSchema: TSchema | 'exact' | 'json',
  message: string,
): FastifyReply {
  const serialize: SerializeItem =
    itemSchema === 'json'
      ? (item: string) => item
      : itemSchema === 'exact'
        ? (JSON.stringify as SerializeItem)
        : (reply.compileSerializationSchema(itemSchema as unknown as Record<string, unknown>) as SerializeItem);
  const head = `{"status":"success","message":${JSON.stringify(message)},"data":[`;
  return reply.type('application/json; charset=utf-8').send(Readable.from(chunks(head, items, serialize), { objectMode: false }));
}
