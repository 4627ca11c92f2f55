/**
 * A real HTTP receiver on loopback for webhook tests: records every request (method, path, the
 * exact body bytes, headers) and answers as the test scripts it: a status and body per request,
 * a delay, or a hang (never answers; the socket is destroyed on close).
 */
import { createServer, type IncomingHttpHeaders, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';

export interface ReceivedRequest {
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  /** Header names exactly as sent, with values, in order. */
  rawHeaders: string[];
  body: string;
  receivedAtMs: number;
}

export interface Behaviour {
  status?: number;
  body?: string;
  headers?: Record<string, string>;
  delayMs?: number;
  /** Never answer. */
  hang?: boolean;
}

/** Decides the answer to a request; `n` counts requests to the same path, from 0. */
export type Handler = (req: ReceivedRequest, n: number) => Behaviour;

export interface Receiver {
  readonly url: string;
  readonly requests: ReceivedRequest[];
  /** Requests to one path. */
  to(path: string): ReceivedRequest[];
  /** The most requests to one path that were open (received, not yet answered) at once. */
  maxOpen(path: string): number;
  /** Script the answers of one path (default for every path: 200 `ok`). */
  on(path: string, handler: Handler): void;
  close(): Promise<void>;
}

export async function startReceiver(defaultHandler: Handler = () => ({ status: 200, body: 'ok' })): Promise<Receiver> {
  const requests: ReceivedRequest[] = [];
  const handlers = new Map<string, Handler>();
  const counts = new Map<string, number>();
  const sockets = new Set<Socket>();
  const timers = new Set<NodeJS.Timeout>();
  const open = new Map<string, number>();
  const maxOpen = new Map<string, number>();

  const server: Server = createServer((req, res) => {
    const openPath = (req.url ?? '/').split('?')[0] ?? '/';
    open.set(openPath, (open.get(openPath) ?? 0) + 1);
    maxOpen.set(openPath, Math.max(maxOpen.get(openPath) ?? 0, open.get(openPath)!));
    res.on('close', () => open.set(openPath, open.get(openPath)! - 1));
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const path = (req.url ?? '/').split('?')[0] ?? '/';
      const r: ReceivedRequest = {
        method: req.method ?? '',
        path,
        headers: req.headers,
        rawHeaders: req.rawHeaders,
        body: Buffer.concat(chunks).toString('utf8'),
        receivedAtMs: Date.now(),
      };
      requests.push(r);
      const n = counts.get(path) ?? 0;
      counts.set(path, n + 1);
      const b = (handlers.get(path) ?? defaultHandler)(r, n);
      if (b.hang) return;
      const answer = (out: ServerResponse) => {
        out.writeHead(b.status ?? 200, { 'content-type': 'text/plain', ...b.headers });
        out.end(b.body ?? '');
      };
      if (b.delayMs) {
        const t = setTimeout(() => {
          timers.delete(t);
          answer(res);
        }, b.delayMs);
        timers.add(t);
      } else answer(res);
    });
  });
  server.keepAliveTimeout = 60_000;
  server.on('connection', (s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;

  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    to: (path) => requests.filter((r) => r.path === path),
    maxOpen: (path) => maxOpen.get(path) ?? 0,
    on: (path, handler) => void handlers.set(path, handler),
    async close() {
      for (const t of timers) clearTimeout(t);
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
