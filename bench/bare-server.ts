/**
 * A bare Fastify process for the benches' baselines. No logger, no hooks, no database:
 *
 * - `object` / `bytes`: `GET /bare` answers the JSON in FILE, parsed once and serialised by
 *   Fastify per request, or the same bytes as they are: the floor of answering that JSON.
 * - `relay`: FILE is `{ "receiver": URL, "bodyBytes": N }`. `POST /api/wallet/:id/update` with
 *   `{ name }` is answered `{ data: { id, name } }` at once and then POSTed on to the receiver as
 *   an N-byte `wallet.updated` body over one undici pool of 32 connections: an update request
 *   answered and its webhook sent, the HTTP of the deliveries bench alone (bench/webhooks.ts).
 *   `GET /bare` answers `ok` (the bench's readiness probe).
 *
 *   node --import tsx bench/bare-server.ts FILE object|bytes|relay PORT
 */
import { readFileSync } from 'node:fs';
import Fastify from 'fastify';
import { Pool } from 'undici';

const [file, mode, port] = process.argv.slice(2);
if (!file || (mode !== 'object' && mode !== 'bytes' && mode !== 'relay') || !port)
  throw new Error('usage: bare-server.ts FILE object|bytes|relay PORT');
const text = readFileSync(file, 'utf8');
const app = Fastify({ logger: false });
if (mode === 'object') {
  const body = JSON.parse(text) as unknown;
  app.get('/bare', async () => body);
} else if (mode === 'bytes') {
  const bytes = Buffer.from(text);
  app.get('/bare', (_req, reply) => reply.type('application/json; charset=utf-8').send(bytes));
} else {
  const { receiver, bodyBytes } = JSON.parse(text) as { receiver: string; bodyBytes: number };
  const target = new URL(receiver);
  const pool = new Pool(target.origin, { connections: 32, pipelining: 1 });
  const relay = (name: string) => {
    const head = JSON.stringify({ event: 'wallet.updated', data: { name, pad: '' } });
    const body = JSON.stringify({ event: 'wallet.updated', data: { name, pad: 'x'.repeat(Math.max(0, bodyBytes - head.length)) } });
    pool
      .request({ path: target.pathname, method: 'POST', body, headers: { 'content-type': 'application/json' } })
      .then((res) => res.body.text())
      .catch((e: unknown) => process.stderr.write(`relay: ${String(e)}\n`));
  };
  app.get('/bare', async () => 'ok');
  app.post<{ Params: { id: string }; Body: { name: string } }>('/api/wallet/:id/update', async (req) => {
    const name = req.body.name;
    setImmediate(relay, name);
    return { data: { id: Number(req.params.id), name } };
  });
}
await app.listen({ host: '127.0.0.1', port: Number(port) });
process.on('SIGTERM', () => void app.close().then(() => process.exit(0)));
