/**
 * The simulation's JSON-RPC fault proxy: one of the service's endpoints to the node (the run puts
 * several in front of one anvil, each with its own seeded stream: `--endpoints`). Off, it forwards
 * every request as is. On, each request draws from its own stream whether it meets a fault, and
 * which. The `rpc` kind (whole requests):
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
 * The kinds real providers add (each on only when the run asks for it):
 * - `behind`: now and then, for 2–8 s, the proxy serves a view 1–3 blocks behind the node's head
 *   (sim/views.ts): every read at its own height, null for what it has not seen;
 * - `refuse`: a broadcast answered, without forwarding, with a definite refusal (-32000 "nonce
 *   too low", "insufficient funds for gas * price + value", "replacement transaction
 *   underpriced", "transaction underpriced"); or forwarded and then never answered until the
 *   connection is cut (`forward-hang`), or answered HTTP 502 (`forward-502`). With several
 *   proxies, one refusing while another forwarded and gave no answer comes up by itself
 *   (counted by the SendLedger);
 * - `glitch`: one call of a request answered HTTP 200 with JSON-RPC -32603 "internal error" or
 *   -32000 "header not found"; a broadcast is forwarded first half the time. Or (`ahead`) a read at
 *   a block number (balance, nonce, call) at or above the node's head answered from its pending
 *   state, as a node under load answers a read at its head from the block it is mining;
 * - traces: `none` answers every debug_trace and trace_ call -32601 (the method does not exist)
 *   the whole run, faults on or off (a provider without the trace API); `flaky` answers HTTP 403
 *   to 40% of the requests carrying one while faults are on.
 *
 * WebSockets (the watcher's new heads, src/chain/heads.ts) are passed through to the node as
 * bytes. While `rpc` faults are on, half of them are cut 0.2–5 s after they open or after faults
 * come on (`ws-cut`: a node's socket server restarting, a balancer's idle timeout): the watcher
 * polls until it has subscribed again.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { connect, type AddressInfo, type Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import type { Prng } from './prng.js';
import { SendLedger, type SendOutcome } from './sends.js';
import { behindPlan, headerNotFound, type CallPlan, type RpcAnswer, type RpcCall } from './views.js';

export const RPC_FAULTS = ['http-5xx', 'http-429', 'rpc-32005', 'timeout', 'reset-after-send', 'lag', 'header-not-found'] as const;
export type RpcFault = (typeof RPC_FAULTS)[number];
/** Faults of whole requests carrying a broadcast (`refuse` kind): forwarded, then no usable answer. */
type SendFault = 'forward-hang' | 'forward-502' | 'trace-403';
type WholeFault = RpcFault | SendFault;
type Counted = WholeFault | 'ws-cut' | 'refuse' | 'glitch' | 'ahead' | 'behind' | 'behind-rewritten' | 'behind-absent' | 'no-trace';

/** Which fault kinds this proxy injects. */
export interface ProxyKinds {
  rpc: boolean;
  behind: boolean;
  refuse: boolean;
  glitch: boolean;
  /** `all`: traces served; `none`: every trace call -32601, the whole run; `flaky`: HTTP 403 to some while faults are on. */
  traces: 'all' | 'none' | 'flaky';
}

export interface FaultProxyOptions {
  /** Chance that one request meets an `rpc` fault while faults are on. */
  rate: number;
  timeoutMs: number;
  lagMs: number;
  kinds?: Partial<ProxyKinds>;
  /** Chance that a broadcast meets a `refuse`-kind fault (a refusal, a hang or a 502 after forwarding). */
  sendRate?: number;
  /** Chance that a request has one call glitched. */
  glitchRate?: number;
  /** This proxy's number among the run's endpoints, and the ledger of broadcasts they share. */
  index?: number;
  ledger?: SendLedger;
}

/** Where a read's block parameter is (the calls a balancer may send to a backend behind). */
const BLOCK_PARAM: Record<string, number> = { eth_getBalance: 1, eth_getTransactionCount: 1, eth_call: 1, eth_getCode: 1 };

/** True for a read at a block number (not a tag such as latest or pending). */
function atHeight(c: RpcCall): boolean {
  const i = BLOCK_PARAM[String(c.method)];
  return i !== undefined && Array.isArray(c.params) && typeof c.params[i] === 'string' && /^0x[0-9a-f]+$/i.test(c.params[i]);
}

const isSend = (c: RpcCall): boolean => c.method === 'eth_sendRawTransaction';
const isTrace = (c: RpcCall): boolean => /^(debug_trace|trace_)/.test(String(c.method));
const rawOf = (c: RpcCall): unknown => (Array.isArray(c.params) ? c.params[0] : undefined);

/** geth's definite refusals of a broadcast (JSON-RPC -32000). */
const REFUSALS = [
  'nonce too low',
  'insufficient funds for gas * price + value',
  'replacement transaction underpriced',
  'transaction underpriced',
] as const;
/** Chance that a request with a read at a block number has it answered `ahead` (when that block is the head). */
const AHEAD_RATE = 0.2;
const GLITCHES = [
  { code: -32603, message: 'internal error' },
  { code: -32000, message: 'header not found' },
] as const;

/** What one request drew: a fault of the whole request, or changes to some of its calls. */
interface Draw {
  whole: WholeFault | null;
  refuse: boolean;
  /** The index of the call answered with a glitch, and whether a broadcast is forwarded first. */
  glitch: { at: number; forwardFirst: boolean; error: RpcAnswer['error'] } | null;
  /** The index of the read at a block number answered from the pending state when that block is the head. */
  ahead: number | null;
}

export class FaultProxy {
  private server: Server | null = null;
  private on = false;
  private lagBy = 0;
  private lagUntil = 0;
  private behindBy = 0;
  private behindUntil = 0;
  private behindTimer: NodeJS.Timeout | null = null;
  private readonly kinds: ProxyKinds;
  private readonly schedule: Prng;
  private rpcId = 0;
  readonly injected: Record<Counted, number> = {
    'http-5xx': 0,
    'http-429': 0,
    'rpc-32005': 0,
    timeout: 0,
    'reset-after-send': 0,
    lag: 0,
    'header-not-found': 0,
    'ws-cut': 0,
    'forward-hang': 0,
    'forward-502': 0,
    refuse: 0,
    glitch: 0,
    ahead: 0,
    behind: 0,
    'behind-rewritten': 0,
    'behind-absent': 0,
    'no-trace': 0,
    'trace-403': 0,
  };
  /** WebSockets passed through, each with the node's side. */
  private readonly sockets = new Map<Duplex, Socket>();
  requests = 0;

  private constructor(
    readonly target: string,
    private readonly prng: Prng,
    private readonly opts: FaultProxyOptions,
    private port = 0,
  ) {
    this.kinds = { rpc: true, behind: false, refuse: false, glitch: false, traces: 'all', ...opts.kinds };
    // The behind windows' timing, its own stream: what the requests draw does not move it.
    this.schedule = prng.fork('behind');
  }

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

  /** What this proxy is, for the run's first lines. */
  describe(): string {
    const k = this.kinds;
    return (
      [
        k.rpc && 'rpc',
        k.behind && 'behind',
        k.refuse && 'refuse',
        k.glitch && 'glitch',
        k.traces === 'none' ? 'no trace API' : k.traces === 'flaky' ? 'traces 403 at times' : null,
      ]
        .filter(Boolean)
        .join(', ') || 'no faults'
    );
  }

  /** Faults on or off (off also ends a lag or a view behind at once; a missing trace API stays). */
  setFaults(on: boolean): void {
    this.on = on;
    if (this.behindTimer) clearTimeout(this.behindTimer);
    this.behindTimer = null;
    if (!on) {
      this.lagUntil = 0;
      this.behindUntil = 0;
      return;
    }
    if (this.kinds.rpc) for (const client of this.sockets.keys()) this.maybeCut(client);
    this.scheduleBehind();
  }

  async close(): Promise<void> {
    if (this.behindTimer) clearTimeout(this.behindTimer);
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

  /** The next view behind: 4–20 s from now, for 2–8 s, 1–3 blocks behind the node. */
  private scheduleBehind(): void {
    if (!this.on || !this.kinds.behind) return;
    this.behindTimer = setTimeout(
      () => {
        if (!this.on) return;
        this.behindBy = this.schedule.int(1, 3);
        const lasts = this.schedule.int(2_000, 8_000);
        this.behindUntil = Date.now() + lasts;
        this.injected.behind += 1;
        this.behindTimer = setTimeout(() => this.scheduleBehind(), lasts);
        this.behindTimer.unref();
      },
      this.schedule.int(4_000, 20_000),
    );
    this.behindTimer.unref();
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
    if (this.kinds.rpc) this.maybeCut(client);
  }

  /** While faults are on, half the sockets are cut 0.2–5 s later. */
  private maybeCut(client: Duplex): void {
    if (!this.on || !this.prng.chance(0.5)) return;
    setTimeout(
      () => {
        if (!this.sockets.has(client)) return;
        this.injected['ws-cut'] += 1;
        client.destroy();
      },
      this.prng.int(200, 5000),
    ).unref();
  }

  /** The faults of one request (drawn only while faults are on; nothing drawn for a kind that is off). */
  private draw(calls: RpcCall[]): Draw {
    const none: Draw = { whole: null, refuse: false, glitch: null, ahead: null };
    if (!this.on) return none;
    const k = this.kinds;
    const sends = calls.some(isSend);
    // A broadcast meets a fault more often, and most often the worst one: taken, then cut.
    if (sends && k.rpc && this.prng.chance(this.opts.rate * 3)) {
      return {
        ...none,
        whole: this.prng.chance(0.6) ? 'reset-after-send' : this.prng.pick<RpcFault>(['http-5xx', 'rpc-32005', 'timeout']),
      };
    }
    if (sends && k.refuse && this.prng.chance(this.opts.sendRate ?? 0.3)) {
      const f = this.prng.weighted({ refuse: 2, 'forward-hang': 1, 'forward-502': 1 });
      if (f !== 'refuse') return { ...none, whole: f };
      return { ...none, refuse: true };
    }
    if (k.traces === 'flaky' && calls.some(isTrace) && this.prng.chance(0.4)) return { ...none, whole: 'trace-403' };
    if (k.glitch && calls.length > 0 && this.prng.chance(this.opts.glitchRate ?? 0.03)) {
      const at = this.prng.int(0, calls.length - 1);
      return { ...none, glitch: { at, forwardFirst: this.prng.chance(0.5), error: { ...this.prng.pick(GLITCHES) } } };
    }
    const read = calls.findIndex(atHeight);
    // Until this endpoint has answered one read ahead, every eligible read is tried, so a short
    // run always exercises the fault whatever its timing.
    const aheadRate = this.injected.ahead === 0 ? 1 : AHEAD_RATE;
    if (k.glitch && read >= 0 && this.prng.chance(aheadRate)) return { ...none, ahead: read };
    if (!k.rpc || !this.prng.chance(this.opts.rate)) return none;
    if (calls.some(atHeight) && this.prng.chance(0.3)) return { ...none, whole: 'header-not-found' };
    return {
      ...none,
      whole: this.prng.weighted<Exclude<RpcFault, 'reset-after-send' | 'header-not-found'>>({
        'http-5xx': 2,
        'http-429': 2,
        'rpc-32005': 2,
        timeout: 1,
        lag: 1,
      }),
    };
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
    const d = this.draw(calls);
    try {
      if (d.whole) {
        this.injected[d.whole] += 1;
        if (await this.answerWhole(d.whole, parsed, calls, body, req, res)) {
          this.recordSends(
            calls,
            d.whole === 'reset-after-send' || d.whole === 'forward-hang' || d.whole === 'forward-502'
              ? 'unanswered'
              : d.whole === 'header-not-found'
                ? 'answered'
                : 'lost',
          );
          return;
        }
      }
      await this.answerCalls(d, parsed, calls, body, res);
    } catch {
      req.socket.destroy();
    }
  }

  private recordSends(calls: RpcCall[], outcome: SendOutcome): void {
    if (!this.opts.ledger) return;
    for (const c of calls) if (isSend(c)) this.opts.ledger.record(rawOf(c), this.opts.index ?? 0, outcome);
  }

  /** A fault of the whole request; false when the request is then served as usual (a lag starting). */
  private async answerWhole(
    fault: WholeFault,
    parsed: RpcCall | RpcCall[] | null,
    calls: RpcCall[],
    body: string,
    req: IncomingMessage,
    res: ServerResponse,
  ): Promise<boolean> {
    switch (fault) {
      case 'http-5xx':
        send(res, 502, { error: 'bad gateway' });
        return true;
      case 'http-429':
        send(res, 429, { error: 'too many requests' }, { 'retry-after': '1' });
        return true;
      case 'trace-403':
        send(res, 403, { error: 'forbidden: the trace API is not enabled for this key' });
        return true;
      case 'rpc-32005': {
        const errs = calls.map((c) => ({ jsonrpc: '2.0', id: c.id ?? null, error: { code: -32005, message: 'rate limit exceeded' } }));
        send(res, 200, Array.isArray(parsed) ? errs : errs[0]);
        return true;
      }
      case 'timeout':
        setTimeout(() => req.socket.destroy(), this.opts.timeoutMs);
        return true;
      case 'reset-after-send':
        await this.forward(body);
        req.socket.destroy();
        return true;
      case 'forward-hang':
        await this.forward(body);
        setTimeout(() => req.socket.destroy(), this.opts.timeoutMs);
        return true;
      case 'forward-502':
        await this.forward(body);
        send(res, 502, { error: 'bad gateway' });
        return true;
      case 'header-not-found': {
        const up = await this.forward(body);
        res.writeHead(up.status, { 'content-type': 'application/json' });
        res.end(parsed === null ? up.text : behind(calls, up.text));
        return true;
      }
      case 'lag':
        this.lagBy = this.prng.int(1, 3);
        this.lagUntil = Date.now() + this.opts.lagMs;
        return false;
    }
  }

  /** Each call as its plan says: a view behind, a refusal, a glitch, no trace API; else forwarded. */
  private async answerCalls(
    d: Draw,
    parsed: RpcCall | RpcCall[] | null,
    calls: RpcCall[],
    body: string,
    res: ServerResponse,
  ): Promise<void> {
    const plans = parsed === null ? [] : await this.plans(d, calls);
    if (plans.every((p, i) => p.forward === calls[i] && !p.post)) {
      const up = await this.forward(body);
      return this.reply(res, up.status, parsed, up.text);
    }
    const forwarded = plans.filter((p) => p.forward).map((p) => p.forward!);
    let answers: RpcAnswer[] = [];
    if (forwarded.length > 0) {
      const up = await this.forward(JSON.stringify(Array.isArray(parsed) ? forwarded : forwarded[0]));
      let out: RpcAnswer | RpcAnswer[];
      try {
        out = JSON.parse(up.text) as RpcAnswer | RpcAnswer[];
      } catch {
        return this.reply(res, up.status, parsed, up.text);
      }
      if (up.status !== 200) return this.reply(res, up.status, parsed, up.text);
      answers = Array.isArray(out) ? out : [out];
    }
    const final = plans.map((p, i) => {
      if (p.answer) return p.answer;
      const a = answers.find((x) => x.id === p.forward!.id) ?? {
        jsonrpc: '2.0' as const,
        id: calls[i]!.id ?? null,
        error: { code: -32603, message: 'no answer' },
      };
      return p.post ? p.post(a) : a;
    });
    return this.reply(res, 200, parsed, JSON.stringify(Array.isArray(parsed) ? final : final[0]));
  }

  /** Answers, the `lag` applied to eth_blockNumber while it lasts. */
  private reply(res: ServerResponse, status: number, parsed: RpcCall | RpcCall[] | null, text: string): void {
    const out = Date.now() < this.lagUntil && parsed !== null && status === 200 ? this.lower(parsed, text) : text;
    res.writeHead(status, { 'content-type': 'application/json' });
    res.end(out);
  }

  /** How each call is served; sends recorded in the ledger by what becomes of them. */
  private async plans(d: Draw, calls: RpcCall[]): Promise<CallPlan[]> {
    const view = Date.now() < this.behindUntil ? (await this.nodeHead()) - this.behindBy : null;
    const out: CallPlan[] = [];
    for (const [i, c] of calls.entries()) {
      const err = (error: RpcAnswer['error']): RpcAnswer => ({ jsonrpc: '2.0', id: c.id ?? null, error });
      if (isTrace(c) && this.kinds.traces === 'none') {
        this.injected['no-trace'] += 1;
        out.push({ answer: err({ code: -32601, message: `the method ${String(c.method)} does not exist/is not available` }) });
      } else if (d.glitch?.at === i) {
        this.injected.glitch += 1;
        // A broadcast may reach the node before the glitch is answered; a read need not.
        const forwardFirst = isSend(c) && d.glitch.forwardFirst;
        if (isSend(c)) this.opts.ledger?.record(rawOf(c), this.opts.index ?? 0, forwardFirst ? 'unanswered' : 'lost');
        const e = d.glitch.error;
        out.push(forwardFirst ? { forward: c, post: (a) => ({ jsonrpc: '2.0', id: a.id, error: e }) } : { answer: err(e) });
      } else if (d.ahead === i) {
        out.push(await this.ahead(c));
      } else if (isSend(c) && d.refuse) {
        this.injected.refuse += 1;
        this.opts.ledger?.record(rawOf(c), this.opts.index ?? 0, 'refused');
        out.push({ answer: err({ code: -32000, message: this.prng.pick(REFUSALS) }) });
      } else if (view !== null) {
        if (isSend(c)) this.opts.ledger?.record(rawOf(c), this.opts.index ?? 0, 'answered');
        const p = await behindPlan(c, Math.max(0, view), (h) => this.heightOf(h));
        if (p.effect) this.injected[p.effect === 'absent' ? 'behind-absent' : 'behind-rewritten'] += 1;
        const post = p.post;
        // An answer the view changed (a null, logs left out) is one more absence it served.
        if (post) p.post = (a) => this.countAbsent(a, post(a));
        out.push(p);
      } else {
        if (isSend(c)) this.opts.ledger?.record(rawOf(c), this.opts.index ?? 0, 'answered');
        out.push({ forward: c });
      }
    }
    return out;
  }

  /** A read at a block number at or above the node's head, answered from its pending state. */
  private async ahead(c: RpcCall): Promise<CallPlan> {
    const i = BLOCK_PARAM[String(c.method)]!;
    const params = [...(c.params as unknown[])];
    if (Number(BigInt(params[i] as string)) < (await this.nodeHead())) return { forward: c };
    this.injected.ahead += 1;
    params[i] = 'pending';
    return { forward: { ...c, params } };
  }

  private countAbsent(before: RpcAnswer, after: RpcAnswer): RpcAnswer {
    if (JSON.stringify(after) !== JSON.stringify(before)) this.injected['behind-absent'] += 1;
    return after;
  }

  /** The node's own head (the view behind is this less `behindBy`). */
  private async nodeHead(): Promise<number> {
    const up = await this.forward(JSON.stringify({ jsonrpc: '2.0', id: `proxy-${++this.rpcId}`, method: 'eth_blockNumber', params: [] }));
    return Number(BigInt((JSON.parse(up.text) as { result: string }).result));
  }

  /** The height of a block named by hash, read from the node (null when it has none). */
  private async heightOf(hash: string): Promise<number | null> {
    const up = await this.forward(
      JSON.stringify({ jsonrpc: '2.0', id: `proxy-${++this.rpcId}`, method: 'eth_getBlockByHash', params: [hash, false] }),
    );
    const b = (JSON.parse(up.text) as { result: { number: string } | null }).result;
    return b ? Number(BigInt(b.number)) : null;
  }

  /** `eth_blockNumber` answers `lagBy` blocks low while a lag lasts. */
  private lower(parsed: RpcCall | RpcCall[], text: string): string {
    const calls = Array.isArray(parsed) ? parsed : [parsed];
    if (!calls.some((c) => c.method === 'eth_blockNumber')) return text;
    let out: Array<{ id?: unknown; result?: unknown }> | { id?: unknown; result?: unknown };
    try {
      out = JSON.parse(text) as typeof out;
    } catch {
      return text;
    }
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
  const out = JSON.parse(text) as
    Array<{ id?: unknown; result?: unknown; error?: unknown }> | { id?: unknown; result?: unknown; error?: unknown };
  const list = Array.isArray(out) ? out : [out];
  for (const r of list) {
    const call = calls.find((c) => c.id === r.id);
    if (call && atHeight(call)) {
      delete r.result;
      r.error = headerNotFound(r.id).error;
    }
  }
  return JSON.stringify(out);
}

function send(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  res.writeHead(status, { 'content-type': 'application/json', ...headers });
  res.end(JSON.stringify(body));
}
