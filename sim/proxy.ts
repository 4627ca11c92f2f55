/**
 * The simulation's JSON-RPC fault proxy: the service's only way to the node. Off, it forwards
 * every request as is. On, each request draws from its own seeded stream whether it meets a
 * fault, and which:
 * - `http-5xx`: HTTP 502 without forwarding (a load balancer with no healthy backend);
 * - `http-429`: HTTP 429 with `Retry-After: 1`, not forwarded;
 * - `rpc-32005`: a JSON-RPC error -32005 "rate limit exceeded" for every call, not forwarded;
 * - `timeout`: never answered; the connection is cut after `timeoutMs` (past the service's 5 s);
 * - `reset-after-send`: a request carrying `eth_sendRawTransaction` is forwarded, the node takes
 *   the transaction, then the connection is reset before the answer (the sender cannot know);
 * - `lag`: for `lagMs` every `eth_blockNumber` answers 1 to 3 blocks below the node's head;
 * - `header-not-found`: a request with a read at a block number (balance, nonce, call) is
 *   forwarded, and each such read is answered geth's -32000 "header not found" (a balancer that
 *   sent it to a backend a block behind the one that gave the head).
 *
 * WebSockets (the watcher's new heads, src/chain/heads.ts) are passed through to the node as
 * bytes. While faults are on, half of them are cut 0.2–5 s after they open or after faults come on
 * (`ws-cut`: a node's socket server restarting, a balancer's idle timeout): the watcher polls
 * until it has subscribed again.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { connect, type AddressInfo, type Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import type { Prng } from './prng.js';

export const RPC_FAULTS = ['http-5xx', 'http-429', 'rpc-32005', 'timeout', 'reset-after-send', 'lag', 'header-not-found'] as const;
export type RpcFault = (typeof RPC_FAULTS)[number];

interface RpcCall {
  id?: unknown;
  method?: string;
  params?: unknown;
}

/** Where a read's block parameter is (the calls a balancer may send to a backend behind). */
const BLOCK_PARAM: Record<string, number> = { eth_getBalance: 1, eth_getTransactionCount: 1, eth_call: 1, eth_getCode: 1 };

/** True for a read at a block number (not a tag such as latest or pending). */
function atHeight(c: RpcCall): boolean {
  const i = BLOCK_PARAM[String(c.method)];
  return i !== undefined && Array.isArray(c.params) && typeof c.params[i] === 'string' && /^0x[0-9a-f]+$/i.test(c.params[i] as string);
}

export interface FaultProxyOptions {
  /** Chance that one request meets a fault while faults are on. */
  rate: number;
  timeoutMs: number;
  lagMs: number;
}

export class FaultProxy {
  private server: Server | null = null;
  private on = false;
  private lagBy = 0;
  private lagUntil = 0;
  readonly injected: Record<RpcFault | 'ws-cut', number> = {
    'http-5xx': 0,
    'http-429': 0,
    'rpc-32005': 0,
    timeout: 0,
    'reset-after-send': 0,
    lag: 0,
    'header-not-found': 0,
    'ws-cut': 0,
  };
  /** WebSockets passed through, each with the node's side. */
  private readonly sockets = new Map<Duplex, Socket>();
  requests = 0;

  private constructor(
    readonly target: string,
    private readonly prng: Prng,
    private readonly opts: FaultProxyOptions,
    private port = 0,
  ) {}

  static async start(target: string, prng: Prng, opts: FaultProxyOptions): Promise<FaultProxy> {
    const p = new FaultProxy(target, prng, opts);
    const server = createServer((req, res) => void p.handle(req, res));
    server.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => p.upgrade(req, socket, head));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
    p.port = (server.address() as AddressInfo).port;
    p.server = server;
    return p;
  }

  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  /** Faults on or off (off also ends a lag at once). */
  setFaults(on: boolean): void {
    this.on = on;
    if (!on) this.lagUntil = 0;
    else for (const client of this.sockets.keys()) this.maybeCut(client);
  }

  async close(): Promise<void> {
    const s = this.server;
    this.server = null;
    if (!s) return;
    s.closeAllConnections();
    for (const [client, node] of this.sockets) {
      client.destroy();
      node.destroy();
    }
    await new Promise<void>((resolve) => s.close(() => resolve()));
  }

  /** A WebSocket upgrade: the request passed on to the node as it came, then bytes both ways. */
  private upgrade(req: IncomingMessage, client: Duplex, head: Buffer): void {
    const { hostname, port } = new URL(this.target);
    const node = connect(Number(port), hostname);
    const lines = [`${req.method} ${req.url} HTTP/1.1`];
    for (let i = 0; i < req.rawHeaders.length; i += 2) lines.push(`${req.rawHeaders[i]}: ${req.rawHeaders[i + 1]}`);
    node.write(`${lines.join('\r\n')}\r\n\r\n`);
    if (head.length > 0) node.write(head);
    client.pipe(node).pipe(client);
    this.sockets.set(client, node);
    const close = () => {
      this.sockets.delete(client);
      client.destroy();
      node.destroy();
    };
    for (const s of [client, node]) {
      s.on('error', close);
      s.on('close', close);
    }
    this.maybeCut(client);
  }

  /** While faults are on, half the sockets are cut 0.2–5 s later. */
  private maybeCut(client: Duplex): void {
    if (!this.on || !this.prng.chance(0.5)) return;
    setTimeout(() => {
      if (!this.sockets.has(client)) return;
      this.injected['ws-cut'] += 1;
      client.destroy();
    }, this.prng.int(200, 5000)).unref();
  }

  /** The fault for one request, if any (drawn only while faults are on). */
  private draw(calls: RpcCall[]): RpcFault | null {
    if (!this.on) return null;
    const methods = calls.map((c) => String(c.method));
    // A broadcast meets a fault more often, and most often the worst one: taken, then cut.
    if (methods.includes('eth_sendRawTransaction') && this.prng.chance(this.opts.rate * 3)) {
      return this.prng.chance(0.6) ? 'reset-after-send' : this.prng.pick<RpcFault>(['http-5xx', 'rpc-32005', 'timeout']);
    }
    if (!this.prng.chance(this.opts.rate)) return null;
    if (calls.some(atHeight) && this.prng.chance(0.3)) return 'header-not-found';
    return this.prng.weighted<Exclude<RpcFault, 'reset-after-send' | 'header-not-found'>>({ 'http-5xx': 2, 'http-429': 2, 'rpc-32005': 2, timeout: 1, lag: 1 });
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const body = Buffer.concat(chunks).toString('utf8');
    this.requests += 1;
    let parsed: RpcCall | RpcCall[] | null = null;
    try {
      parsed = JSON.parse(body) as RpcCall | RpcCall[];
    } catch {
      /* forwarded as is */
    }
    const calls = parsed === null ? [] : Array.isArray(parsed) ? parsed : [parsed];
    const fault = this.draw(calls);
    if (fault) this.injected[fault] += 1;
    try {
      await this.answer(fault, parsed, calls, body, req, res);
    } catch {
      req.socket.destroy();
    }
  }

  private async answer(fault: RpcFault | null, parsed: RpcCall | RpcCall[] | null, calls: RpcCall[], body: string, req: IncomingMessage, res: ServerResponse): Promise<void> {
    switch (fault) {
      case 'http-5xx':
        return send(res, 502, { error: 'bad gateway' });
      case 'http-429':
        return send(res, 429, { error: 'too many requests' }, { 'retry-after': '1' });
      case 'rpc-32005': {
        const errs = calls.map((c) => ({ jsonrpc: '2.0', id: c.id ?? null, error: { code: -32005, message: 'rate limit exceeded' } }));
        return send(res, 200, Array.isArray(parsed) ? errs : errs[0]);
      }
      case 'timeout':
        setTimeout(() => req.socket.destroy(), this.opts.timeoutMs);
        return;
      case 'reset-after-send':
        await this.forward(body);
        req.socket.destroy();
        return;
      case 'header-not-found': {
        const up = await this.forward(body);
        res.writeHead(up.status, { 'content-type': 'application/json' });
        res.end(parsed === null ? up.text : behind(calls, up.text));
        return;
      }
      case 'lag':
        this.lagBy = this.prng.int(1, 3);
        this.lagUntil = Date.now() + this.opts.lagMs;
        break;
      case null:
        break;
    }
    const up = await this.forward(body);
    const text = Date.now() < this.lagUntil && parsed !== null ? this.lower(parsed, up.text) : up.text;
    res.writeHead(up.status, { 'content-type': 'application/json' });
    res.end(text);
  }

  /** `eth_blockNumber` answers `lagBy` blocks low while a lag lasts. */
  private lower(parsed: RpcCall | RpcCall[], text: string): string {
    const calls = Array.isArray(parsed) ? parsed : [parsed];
    if (!calls.some((c) => c.method === 'eth_blockNumber')) return text;
    const out = JSON.parse(text) as Array<{ id?: unknown; result?: unknown }> | { id?: unknown; result?: unknown };
    const list = Array.isArray(out) ? out : [out];
    for (const r of list) {
      const call = calls.find((c) => c.id === r.id);
      if (call?.method === 'eth_blockNumber' && typeof r.result === 'string') {
        r.result = `0x${Math.max(0, Number(BigInt(r.result)) - this.lagBy).toString(16)}`;
      }
    }
    return JSON.stringify(out);
  }

  private async forward(body: string): Promise<{ status: number; text: string }> {
    const up = await fetch(this.target, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
    return { status: up.status, text: await up.text() };
  }
}

/** The node's answer with each read at a block number replaced by geth's "header not found". */
function behind(calls: RpcCall[], text: string): string {
  const out = JSON.parse(text) as Array<{ id?: unknown; result?: unknown; error?: unknown }> | { id?: unknown; result?: unknown; error?: unknown };
  const list = Array.isArray(out) ? out : [out];
  for (const r of list) {
    const call = calls.find((c) => c.id === r.id);
    if (call && atHeight(call)) {
      delete r.result;
      r.error = { code: -32000, message: 'header not found' };
    }
  }
  return JSON.stringify(out);
}

function send(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  res.writeHead(status, { 'content-type': 'application/json', ...headers });
  res.end(JSON.stringify(body));
}
