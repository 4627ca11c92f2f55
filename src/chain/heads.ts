/**
 * New heads as the node announces them (`eth_subscribe("newHeads")` over a WebSocket), where the
 * node allows it: a wake-up for the watcher, never a source of chain data.
 *
 * The watcher polls (WATCHER_POLL_MS, WATCHER_PENDING_POLL_MS), so a block waited up to a poll
 * interval before the watcher read it: a deposit, a charge's payment or a transfer's confirmation
 * was seen up to a second after its block. A head announced here makes the watcher's next tick come
 * at once; the tick reads the block over HTTP as always, through the network's endpoints and their
 * guarantees (docs/architecture.md, "The chain transport: several endpoints"). So nothing the
 * subscription says is trusted: a head announced and not yet served over HTTP is read on a later
 * tick, a lost announcement is caught by the poll, and a node without WebSockets is simply polled.
 *
 * Which socket: each endpoint of the network in turn, at the endpoint's own URL with its scheme
 * made `ws:`/`wss:` (the same port and path: anvil, reth, Alchemy and QuickNode serve both
 * there; geth and Infura use another port or path, and are polled). The first that accepts the
 * subscription is followed. A socket that closes, errors or misses a keep-alive pong is
 * replaced after RETRY_MIN_MS, doubling to RETRY_MAX_MS while no endpoint accepts. The URL may
 * hold an API key: only its host is logged.
 *
 * Hand-written on `ws`, not viem's WebSocket transport: viem's socket client is shared per URL
 * across the process, gives up after five reconnections, and prints reconnection failures with
 * `console.error` (where the URL, key and all, would reach the log).
 */
import type { Logger } from 'pino';
import WebSocket from 'ws';
import { redactUrls } from '../lib/redact.js';

/** The first wait before a socket is tried again; doubles to RETRY_MAX_MS. */
export const RETRY_MIN_MS = 1000;
export const RETRY_MAX_MS = 60_000;
/** A ping every KEEPALIVE_MS; no pong before the next ping ends the socket (then replaced). */
const KEEPALIVE_MS = 30_000;
/** How long opening a socket and getting the subscription's answer may take. */
const OPEN_TIMEOUT_MS = 5000;

export interface HeadFollower {
  /** The host whose heads are followed now, or null while polling only. */
  readonly following: string | null;
  stop(): void;
}

export interface FollowOptions {
  /** The network's RPC endpoints (HTTP URLs), in the order they are tried. */
  urls: readonly string[];
  /** A head was announced (its number, when the node gave one). */
  onHead(number: bigint | null): void;
  log: Logger;
  retryMinMs?: number;
  retryMaxMs?: number;
}

/** The endpoint's URL with a WebSocket scheme; null when it is neither HTTP nor WebSocket. */
export function webSocketUrl(url: string): string | null {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    return null;
  }
  if (u.protocol === 'http:') u.protocol = 'ws:';
  else if (u.protocol === 'https:') u.protocol = 'wss:';
  else if (u.protocol !== 'ws:' && u.protocol !== 'wss:') return null;
  return u.toString();
}

function hostOf(url: string): string {
  try {
    return new URL(url).host;
  } catch {
    return '(invalid URL)';
  }
}

export function followHeads(opts: FollowOptions): HeadFollower {
  return new Follower(opts);
}

/** One socket: opened, subscribed, kept alive; `end` closes it and reports why (once). */
class HeadSocket {
  readonly ws: WebSocket;
  subscription: string | null = null;
  #awaitingPong = false;
  #ended = false;
  readonly #openTimer: NodeJS.Timeout;
  readonly #keepAlive: NodeJS.Timeout;

  constructor(
    url: string,
    readonly host: string,
    private readonly on: { subscribed(s: HeadSocket): void; head(number: bigint | null): void; ended(s: HeadSocket, reason: string): void },
  ) {
    this.ws = new WebSocket(url, { handshakeTimeout: OPEN_TIMEOUT_MS, perMessageDeflate: false, maxPayload: 1 << 20 });
    this.#openTimer = setTimeout(() => this.end(`no subscription within ${OPEN_TIMEOUT_MS / 1000} s`), OPEN_TIMEOUT_MS);
    this.#keepAlive = setInterval(() => {
      if (this.#awaitingPong) return this.end('no pong to the keep-alive ping');
      this.#awaitingPong = true;
      this.ws.ping();
    }, KEEPALIVE_MS);
    this.#keepAlive.unref();
    const ws = this.ws;
    ws.on('pong', () => {
      this.#awaitingPong = false;
    });
    ws.on('open', () => ws.send(JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'eth_subscribe', params: ['newHeads'] })));
    ws.on('unexpected-response', (_req, res) => this.end(`HTTP ${res.statusCode} to the WebSocket upgrade`));
    ws.on('error', (err) => this.end(err.message));
    ws.on('close', (code) => this.end(`closed (${code})`));
    ws.on('message', (data) => this.#message((data as Buffer).toString('utf8'))); // ws's default binary type: a Buffer
  }

  #message(text: string): void {
    let msg: {
      id?: unknown;
      result?: unknown;
      error?: { message?: unknown };
      method?: unknown;
      params?: { subscription?: unknown; result?: { number?: unknown } };
    };
    try {
      msg = JSON.parse(text) as typeof msg;
    } catch {
      return this.end('an answer that is not JSON');
    }
    if (this.subscription === null) {
      if (msg.id !== 1) return;
      if (typeof msg.result !== 'string')
        return this.end(`eth_subscribe refused: ${typeof msg.error?.message === 'string' ? msg.error.message : 'no subscription id'}`);
      this.subscription = msg.result;
      clearTimeout(this.#openTimer);
      this.on.subscribed(this);
      return;
    }
    if (msg.method !== 'eth_subscription' || msg.params?.subscription !== this.subscription) return;
    const n = msg.params.result?.number;
    this.on.head(typeof n === 'string' && /^0x[0-9a-f]+$/i.test(n) ? BigInt(n) : null);
  }

  end(reason: string): void {
    if (this.#ended) return;
    this.#ended = true;
    clearTimeout(this.#openTimer);
    clearInterval(this.#keepAlive);
    this.ws.removeAllListeners();
    this.ws.on('error', () => undefined);
    this.ws.terminate();
    this.on.ended(this, reason);
  }
}

class Follower implements HeadFollower {
  readonly #targets: string[];
  readonly #retryMin: number;
  readonly #retryMax: number;
  #stopped = false;
  #socket: HeadSocket | null = null;
  #timer: NodeJS.Timeout | null = null;
  #next = 0;
  /** Sockets tried since the last one that subscribed. */
  #failures = 0;
  /** Said once per change, so a node without WebSockets costs one line, not one a minute. */
  #told: 'following' | 'polling' | null = null;

  constructor(private readonly opts: FollowOptions) {
    this.#targets = opts.urls.map(webSocketUrl).filter((u): u is string => u !== null);
    this.#retryMin = opts.retryMinMs ?? RETRY_MIN_MS;
    this.#retryMax = opts.retryMaxMs ?? RETRY_MAX_MS;
    this.#connect();
  }

  get following(): string | null {
    return this.#socket?.subscription != null ? this.#socket.host : null;
  }

  stop(): void {
    this.#stopped = true;
    if (this.#timer) clearTimeout(this.#timer);
    this.#timer = null;
    this.#socket?.end('stopped');
  }

  #connect(): void {
    if (this.#stopped || this.#targets.length === 0) return;
    const url = this.#targets[this.#next]!;
    const host = hostOf(url);
    try {
      this.#socket = new HeadSocket(url, host, {
        subscribed: (s) => this.#subscribed(s),
        head: (n) => this.opts.onHead(n),
        ended: (s, reason) => this.#lost(s, reason),
      });
    } catch (e) {
      this.#retry(host, false, e instanceof Error ? e.message : String(e));
    }
  }

  #subscribed(s: HeadSocket): void {
    this.#failures = 0;
    if (this.#told === 'following') return;
    this.#told = 'following';
    this.opts.log.info({ host: s.host }, 'following new heads over WebSocket');
  }

  #lost(s: HeadSocket, reason: string): void {
    if (this.#socket === s) this.#socket = null;
    this.#retry(s.host, s.subscription !== null, reason);
  }

  /** The socket to `host` ended (`wasFollowing`: after it had subscribed): the next one after a wait. */
  #retry(host: string, wasFollowing: boolean, why: string): void {
    if (this.#stopped) return;
    // A message may quote a URL (ws's "Invalid URL: …"): logged as its origin only.
    const reason = redactUrls(why);
    this.#failures += 1;
    // A followed endpoint that drops is tried first again; one that never subscribed, the next.
    if (!wasFollowing) this.#next = (this.#next + 1) % this.#targets.length;
    if (this.#told !== 'polling') {
      this.#told = 'polling';
      this.opts.log.info({ host, reason }, 'new heads not followed over WebSocket; the watcher polls');
    } else {
      this.opts.log.debug({ host, reason }, 'new heads over WebSocket still unavailable');
    }
    // RETRY_MIN_MS through the first round of endpoints, then doubling to RETRY_MAX_MS.
    const rounds = Math.floor((this.#failures - 1) / this.#targets.length);
    this.#timer = setTimeout(
      () => {
        this.#timer = null;
        this.#connect();
      },
      Math.min(this.#retryMax, this.#retryMin * 2 ** Math.min(16, rounds)),
    );
    this.#timer.unref();
  }
}
