/**
 * A bare Fastify process for the benches' baselines: `GET /bare` answers the JSON in FILE,
 * `object` (parsed once, serialised by Fastify per request) or `bytes` (the same bytes as
 * they are). No logger, no hooks: the floor of answering that JSON on this machine.
 *
 *   node --import tsx bench/bare-server.ts FILE object|bytes PORT
 */
import { readFileSync } from 'node:fs';
import Fastify from 'fastify';

const [file, mode, port] = process.argv.slice(2);
if (!file || (mode !== 'object' && mode !== 'bytes') || !port) throw new Error('usage: bare-server.ts FILE object|bytes PORT');
const text = readFileSync(file, 'utf8');
const app = Fastify({ logger: false });
if (mode === 'object') {
  const body = JSON.parse(text) as unknown;
  app.get('/bare', async () => body);
} else {
  const bytes = Buffer.from(text);
  app.get('/bare', (_req, reply) => reply.type('application/json; charset=utf-8').send(bytes));
}
await app.listen({ host: '127.0.0.1', port: Number(port) });
process.on('SIGTERM', () => void app.close().then(() => process.exit(0)));
