/**
 * Several RPC endpoints behind one viem transport (docs/architecture.md, "The chain transport:
 * several endpoints").
 *
 * Each endpoint is viem's `http` transport over rpcFetch, without retries of its own. A call goes
 * to the endpoints in their configured order, skipping those that cannot serve it, and moves on
 * to the next on a transient fault (`isTransient`: a time-out, a connection that fails, HTTP 5xx
 * or 429, JSON-RPC -32005 or a message saying rate limit). Any other error is the node's answer
 * about the request and is thrown as it is (trying it elsewhere would only repeat it).
 *
 * - Rested: an endpoint that rate-limited a call (HTTP 429, -32005, "rate limit") is not called
 *   for its `Retry-After`, else 1 s doubling up to 60 s while it keeps limiting (a success
 *   starts the doubling over). When every endpoint is rested, the one whose rest ends first is
 *   still tried: a call is never refused without asking a node.
 * - Lagging: an endpoint whose head is more than `maxLagBlocks` behind the best head serves no
 *   reads, whatever befalls the others (it still receives broadcasts and head reads). The best
 *   head is the highest of the endpoints that are up, or that failed but whose head was read in
 *   the last HEAD_KNOWN_MS: a node that fails a call has not taken its blocks with it.
 * - Heights: a call about block H (a block, its receipts, logs up to H, state at H) goes only to
 *   endpoints whose head is known to be at or above H (none known: every head is read again
 *   first; still none: `null` for a block, else NotYetAtHeightError, a transient fault); `null`
 *   for a block, a transaction or a receipt is asked of the next such endpoint, and is the
 *   answer only when none has it. A block or receipt an endpoint answers raises its known head.
 * - Logs: an `eth_getLogs` refused for its range or result size is split in halves and retried.
 * - Broadcast: `eth_sendRawTransaction` goes to every endpoint that is `ok`, at once; one
 *   acceptance is the answer; else the first answer that is not a transient fault. Sends are
 *   batched among themselves, never with reads: the calls of one turn of the event loop share
 *   one HTTP request (`batch`), answered when its slowest call is, and a node slow to answer a
 *   send held every read batched with it, and (viem shares a head read under way) every later
 *   read of the head: each create and the watcher of the network waited for the send. The sends
 *   of one turn (creates committed together) still go in one request, in nonce order: as
 *   separate requests they reach the node in any order, and anvil then left later nonces queued
 *   behind an earlier one it never mined (a bench run stalled so, 64 transfers for 10 minutes).
 * - Health: `ok` (its last call or head read succeeded and it is not rested), head, lag,
 *   latency and `error` (why its last call failed, from a fixed vocabulary: never a URL), kept
 *   in memory by this process; a head read of every endpoint at least every
 *   `healthEveryMs` (WATCHER_POLL_MS), skipped for one whose head a call has just read.
 */
import { custom, http, type EIP1193RequestFn, type Transport } from 'viem';
import { redactUrl } from '../lib/redact.js';
import {
  ALREADY_KNOWN,
  faultOf,
  isBlockUnknown,
  isFault,
  isRangeRefused,
  isRateLimit,
  isTransient,
  MayBeHeldError,
  nodeWords,
  NotYetAtHeightError,
  refusalKind,
  retryAfterMs,
} from './errors.js';
import { rpcFetch } from './rpc-fetch.js';
import { TRACE_METHODS, TraceRoute } from './traces.js';

export interface EndpointHealth {
  /** Origin only: a path or query may hold an API key. */
  url: string;
  ok: boolean;
  head_block: number | null;
  lag_blocks: number | null;
  latency_ms: number | null;
  /** Why it is not ok or why its last call failed ("HTTP 503", "HTTP 429: rested 2 s", "timed out"…); null when its last call succeeded. Never a URL. */
  error: string | null;
  /** False when its last trace call was refused for the method, until it answers one (src/chain/traces.ts, `TraceRoute`). */
  traces: boolean;
}

export interface EndpointStats {
  host: string;
  calls: number;
  errors: number;
}

export interface EndpointOptions {
  timeoutMs: number;
  maxLagBlocks: number;
  healthEveryMs: number;
}

const REST_FIRST_MS = 1_000;
/** How long the head of an endpoint that failed since still counts toward the best head. */
const HEAD_KNOWN_MS = 60_000;
const REST_MAX_MS = 60_000;
/**
 * How long after a send that an endpoint left unanswered a refusal of the same bytes by every
 * endpoint asked is not final (`broadcast`): the transport's own retry of that send (at once,
 * asking fewer endpoints) is inside it. A caller's later re-send is never a first send, so its
 * refusal is not final anyway, and it needs the refusal's words (its fees, or stuck).
 */
const MAY_HOLD_MS = 2_000;
const MAY_HOLD_KEPT = 10_000;
/** Calls whose `null` means "this node does not have it": asked of the next endpoint. */
const NULL_MEANS_NOT_HERE = new Set([
  'eth_getBlockByNumber',
  'eth_getBlockByHash',
  'eth_getBlockReceipts',
  'eth_getTransactionByHash',
  'eth_getTransactionReceipt',
]);
/** Where a call's block height is: the index of its block parameter. */
const BLOCK_PARAM: Record<string, number> = {
  eth_getBlockByNumber: 0,
  eth_getBlockReceipts: 0,
  eth_getBalance: 1,
  eth_getTransactionCount: 1,
  eth_getCode: 1,
  eth_getStorageAt: 2,
  eth_call: 1,
};

/**
 * The endpoint list of a network: `rpc_urls` (a JSON array) when it is a list that starts with
 * `rpc_url`, else `rpc_url` alone (a previous version may have changed `rpc_url` since; migration 015).
 */
export function endpointUrls(n: { rpc_url: string; rpc_urls?: string | null }): string[] {
  if (!n.rpc_urls) return [n.rpc_url];
  try {
    const list = JSON.parse(n.rpc_urls) as unknown;
    if (Array.isArray(list) && list.length > 0 && list[0] === n.rpc_url && list.every((u) => typeof u === 'string'))
      return list as string[];
  } catch {
    // not a list: the first endpoint alone
  }
  return [n.rpc_url];
}

/** The block height a call is about, or null (latest, pending, a hash, or none). */
export function heightOf(method: string, params: unknown): number | null {
  if (!Array.isArray(params)) return null;
  if (method === 'eth_getLogs') {
    const filter = params[0] as { toBlock?: unknown } | undefined;
    return hexHeight(filter?.toBlock);
  }
  const i = BLOCK_PARAM[method];
  return i === undefined ? null : hexHeight(params[i]);
}

/** The block a successful answer shows its endpoint has (a block's number, a receipt's block), or null. */
function heightAnswered(method: string, result: unknown): number | null {
  if (result === null || typeof result !== 'object') return null;
  if (method === 'eth_getBlockByNumber' || method === 'eth_getBlockByHash') return hexHeight((result as { number?: unknown }).number);
  if (method === 'eth_getTransactionReceipt') return hexHeight((result as { blockNumber?: unknown }).blockNumber);
  return null;
}

function hexHeight(v: unknown): number | null {
  return typeof v === 'string' && /^0x[0-9a-f]+$/i.test(v) ? Number(BigInt(v)) : null;
}

interface LogFilter {
  fromBlock?: unknown;
  toBlock?: unknown;
  [k: string]: unknown;
}

const toHex = (n: number) => `0x${n.toString(16)}`;

let lastStamp = 0;
/**
 * `Date.now()`, but strictly increasing from one call to the next: when a call was sent, and when
 * an outcome was taken, ordered even within one millisecond. An endpoint's outcomes are ordered
 * by when their calls were sent (`succeeded`, `failed`); with plain milliseconds, a success of a
 * call sent in the same millisecond as a rate-limited one, answered after it, counted as newer:
 * it cleared the reason while the rest went on (health `ok` false, `error` null).
 */
function stamp(): number {
  lastStamp = Math.max(Date.now(), lastStamp + 0.001);
  return lastStamp;
}

class Endpoint {
  readonly origin: string;
  readonly host: string;
  readonly request: EIP1193RequestFn;
  /** The same for `eth_sendRawTransaction`, batched apart from the reads (see Broadcast above). */
  readonly send: EIP1193RequestFn;
  /**
   * The same for the trace API (src/chain/traces.ts), batched apart from the reads too: a block's
   * traces take a node far longer than a read, and a create's balance and nonce reads batched
   * with the follower's traces waited for all of them (and timed out with them: 503).
   */
  readonly trace: EIP1193RequestFn;
  /** Last call or head read succeeded (null: never asked yet). */
  up: boolean | null = null;
  head: number | null = null;
  headAtMs = 0;
  latencyMs: number | null = null;
  restUntilMs = 0;
  /** When the current (or last) rest began. */
  restFromMs = 0;
  restMs = 0;
  /** Why its last call failed (`faultOf`, with its rest), or null after a success. */
  lastError: string | null = null;
  /** When the call whose outcome `up` and `lastError` hold was sent: an older call's outcome, arriving later, says nothing newer. */
  outcomeSentAtMs = 0;
  /** The head read under way, if any. */
  checking: Promise<void> | null = null;
  calls = 0;
  errors = 0;

  constructor(
    readonly url: string,
    timeoutMs: number,
  ) {
    this.origin = redactUrl(url);
    this.host = (() => {
      try {
        return new URL(url).host;
      } catch {
        return '[invalid url]';
      }
    })();
    const transport = () =>
      http(url, {
        timeout: timeoutMs,
        retryCount: 0,
        fetchFn: rpcFetch as unknown as typeof fetch,
        // rpcFetch reads at most MAX_RPC_BODY_BYTES itself.
        maxResponseBodySize: false,
        batch: { wait: 0 },
      })({ retryCount: 0 }).request;
    this.request = transport();
    this.send = transport();
    this.trace = transport();
  }

  rested(nowMs: number): boolean {
    return nowMs < this.restUntilMs;
  }

  /** A call (sent at `sentAtMs`) answered; one sent before the newest outcome's call (in flight through a rate limit) changes nothing. */
  succeeded(latencyMs: number, sentAtMs: number): void {
    this.latencyMs = Math.round(latencyMs * 100) / 100;
    if (sentAtMs < this.outcomeSentAtMs) return;
    this.outcomeSentAtMs = sentAtMs;
    this.up = true;
    this.lastError = null;
    this.restMs = 0;
  }

  /**
   * A transient fault: down until a call or head read succeeds; rested when it rate-limited. A
   * limit met by a call sent before the current rest began (it was in flight) is the same limit:
   * it neither doubles nor moves the rest.
   */
  failed(err: unknown, nowMs: number, sentAtMs: number): void {
    const limited = isRateLimit(err);
    if (sentAtMs < this.outcomeSentAtMs && !limited) return;
    this.outcomeSentAtMs = Math.max(this.outcomeSentAtMs, sentAtMs);
    this.up = false;
    if (limited && sentAtMs >= this.restFromMs) {
      this.restMs = this.restMs === 0 ? REST_FIRST_MS : Math.min(this.restMs * 2, REST_MAX_MS);
      this.restFromMs = nowMs;
      this.restUntilMs = nowMs + (retryAfterMs(err, nowMs) ?? this.restMs);
    }
    const restS = Math.round((this.restUntilMs - this.restFromMs) / 100) / 10;
    this.lastError = limited ? `${faultOf(err)}: rested ${restS} s` : faultOf(err);
  }
}

/** The endpoints of one network, with their health; `transport()` is what its viem client uses. */
export class EndpointSet {
  private readonly endpoints: Endpoint[];
  /** Trace calls go to the endpoints that offer them, each asked in turn (src/chain/traces.ts). */
  private readonly traceRoute: TraceRoute<Endpoint>;
  private timer: NodeJS.Timeout | null = null;
  private firstCheck: Promise<void> | null = null;
  /** Signed transactions (their bytes) a send left with an endpoint that did not answer, and when: see `broadcast`. */
  private readonly mayHold = new Map<string, number>();

  constructor(
    urls: readonly string[],
    private readonly opts: EndpointOptions,
  ) {
    this.endpoints = urls.map((u) => new Endpoint(u, opts.timeoutMs));
    this.traceRoute = new TraceRoute(this.endpoints, (e, method, params) => this.call(e, method, params));
  }

  transport(retryCount: number, retryDelay: number): Transport {
    return custom(
      { request: ({ method, params }: { method: string; params?: unknown }) => this.request(method, params) },
      { retryCount, retryDelay },
    );
  }

  /** Starts the head reads (every `healthEveryMs`; the timer does not hold the process open). */
  start(): void {
    if (this.timer !== null) return;
    this.timer = setInterval(() => void this.refresh(), this.opts.healthEveryMs);
    this.timer.unref();
    this.firstCheck = this.refresh();
  }

  stop(): void {
    if (this.timer !== null) clearInterval(this.timer);
    this.timer = null;
  }

  /** Health of every endpoint, as this process knows it now. */
  health(nowMs = Date.now()): EndpointHealth[] {
    const best = this.bestHead();
    return this.endpoints.map((e) => ({
      url: e.origin,
      ok: e.up === true && !e.rested(nowMs),
      head_block: e.head,
      lag_blocks: e.head !== null && best !== null ? Math.max(0, best - e.head) : null,
      latency_ms: e.latencyMs,
      error: e.lastError,
      traces: this.traceRoute.shows(e),
    }));
  }

  /** Health after the first round of head reads (at most `waitMs` for it). */
  async checkedHealth(waitMs: number): Promise<EndpointHealth[]> {
    this.start();
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([this.firstCheck, new Promise<void>((r) => (timer = setTimeout(r, waitMs)))]);
    clearTimeout(timer);
    return this.health();
  }

  /** Health after a head read of every endpoint now (at most `waitMs` for it; one already being read is not read twice). */
  async freshHealth(waitMs: number): Promise<EndpointHealth[]> {
    this.start();
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([this.refresh(true), new Promise<void>((r) => (timer = setTimeout(r, waitMs)))]);
    clearTimeout(timer);
    return this.health();
  }

  stats(): EndpointStats[] {
    return this.endpoints.map((e) => ({ host: e.host, calls: e.calls, errors: e.errors }));
  }

  /**
   * The best head: the highest of the endpoints that are up, or that failed but whose head was
   * read in the last HEAD_KNOWN_MS (one failed call does not make a lagging endpoint the best; a
   * node down for longer no longer sets the pace).
   */
  bestHead(nowMs = Date.now()): number | null {
    let best: number | null = null;
    for (const e of this.endpoints) {
      const counts = e.up === true || nowMs - e.headAtMs <= HEAD_KNOWN_MS;
      if (counts && e.head !== null && (best === null || e.head > best)) best = e.head;
    }
    return best;
  }

  /**
   * A head read of every endpoint not rested and (unless `all`) not read by a call just now; one
   * already being read is not read twice (with `all`, that read is awaited).
   */
  async refresh(all = false): Promise<void> {
    const now = Date.now();
    const due = this.endpoints.filter((e) => !e.rested(now) && (all || now - e.headAtMs >= this.opts.healthEveryMs));
    await Promise.all(due.map((e) => (e.checking ? (all ? e.checking : Promise.resolve()) : this.readHead(e))));
  }

  /** Reads every head again (not a rested one's), until one is at or above `height` or all have answered. */
  private async reach(height: number): Promise<void> {
    const now = Date.now();
    const reads = this.endpoints
      .filter((e) => !e.rested(now))
      .map(async (e) => {
        await (e.checking ?? this.readHead(e));
        if (e.head === null || e.head < height) throw new NotYetAtHeightError(height);
      });
    await Promise.any(reads).catch(() => undefined);
  }

  private readHead(e: Endpoint): Promise<void> {
    e.checking = this.call(e, 'eth_blockNumber', [])
      .then(
        () => undefined,
        () => undefined, // recorded on the endpoint
      )
      .finally(() => {
        e.checking = null;
      });
    return e.checking;
  }

  private async call(e: Endpoint, method: string, params: unknown): Promise<unknown> {
    const t0 = performance.now();
    const sentAtMs = stamp();
    e.calls += 1;
    try {
      const result = await (method === 'eth_sendRawTransaction' ? e.send : TRACE_METHODS.has(method) ? e.trace : e.request)({
        method,
        params,
      } as never);
      e.succeeded(performance.now() - t0, sentAtMs);
      if (method === 'eth_blockNumber' && typeof result === 'string') {
        e.head = Number(BigInt(result));
        e.headAtMs = Date.now();
      } else {
        const at = heightAnswered(method, result);
        if (at !== null && (e.head === null || at > e.head)) e.head = at;
      }
      return result;
    } catch (err) {
      e.errors += 1;
      // A range refused is an answer about the request (split by getLogs), not a fault of the node.
      if (isTransient(err) && !isRangeRefused(err)) e.failed(err, stamp(), sentAtMs);
      else e.succeeded(performance.now() - t0, sentAtMs);
      throw err;
    }
  }

  async request(method: string, params: unknown): Promise<unknown> {
    if (method === 'eth_sendRawTransaction') return this.broadcast(params);
    if (method === 'eth_getLogs') return this.getLogs(params as [LogFilter]);
    if (TRACE_METHODS.has(method)) return this.traceRoute.read(method, params);
    return this.read(method, params);
  }

  /**
   * eth_getLogs; refused for its range or result size by every endpoint that could serve it, the
   * range is halved and each half asked (recursively: at most log2(range) levels), in order.
   */
  private async getLogs(params: [LogFilter]): Promise<unknown> {
    try {
      return await this.read('eth_getLogs', params);
    } catch (err) {
      const f = params[0];
      const from = hexHeight(f?.fromBlock);
      const to = hexHeight(f?.toBlock);
      if (!isRangeRefused(err) || from === null || to === null || to <= from) throw err;
      const mid = from + Math.floor((to - from) / 2);
      const left = (await this.getLogs([{ ...f, toBlock: toHex(mid) }])) as unknown[];
      const right = (await this.getLogs([{ ...f, fromBlock: toHex(mid + 1) }])) as unknown[];
      return [...left, ...right];
    }
  }

  private async read(method: string, params: unknown): Promise<unknown> {
    const height = heightOf(method, params);
    let order = this.readOrder(height);
    if (order.length === 0 && height !== null) {
      await this.reach(height);
      order = this.readOrder(height);
    }
    if (order.length === 0) {
      if (NULL_MEANS_NOT_HERE.has(method)) return null;
      throw new NotYetAtHeightError(height ?? 0);
    }
    const best = this.bestHead();
    let lastErr: unknown = null;
    let absentAtBest = false;
    for (const e of order) {
      try {
        const result = await this.call(e, method, params);
        if (result === null && NULL_MEANS_NOT_HERE.has(method)) {
          // An absence counts from an endpoint at the block it is about, or (a hash: no block
          // known) at the best head: one a block or three behind has not seen the newest ones.
          if (height !== null || best === null || (e.head !== null && e.head >= best)) absentAtBest = true;
          continue;
        }
        return result;
      } catch (err) {
        if (height !== null && isBlockUnknown(err)) {
          // The endpoint is below `height` (its head read again before it serves that height).
          if (e.head === null || e.head >= height) e.head = height - 1;
          lastErr = new NotYetAtHeightError(height);
          continue;
        }
        if (!isTransient(err) || isRangeRefused(err)) throw err;
        lastErr = err;
      }
    }
    // "Not found" is the answer only when an endpoint at the height answered it and none of the
    // others failed to answer (one that timed out may be the one that has it).
    if (absentAtBest && lastErr === null) return null;
    throw (lastErr ?? new NotYetAtHeightError(best ?? 0)) as Error;
  }

  /**
   * Who serves a read, in order: of the endpoints not lagging and (for a read about block
   * `height`) whose head is known to be at or above it, those up (or never asked) and not rested,
   * the highest head first; then those that failed their last call, not rested. When every one of
   * them is rested, the one whose rest ends first. Empty when none is at `height`.
   */
  private readOrder(height: number | null): Endpoint[] {
    const now = Date.now();
    const best = this.bestHead(now);
    const lagging = (e: Endpoint) => best !== null && e.head !== null && best - e.head > this.opts.maxLagBlocks;
    const high = (e: Endpoint) => height === null || (e.head !== null && e.head >= height);
    const serving = this.endpoints.filter((e) => !lagging(e) && high(e));
    const usable = serving.filter((e) => !e.rested(now));
    // The freshest first (ties keep the configured order): a block read by hash, or logs by block
    // hash, then go where the block just read came from.
    const freshest = (list: Endpoint[]) => [...list].sort((a, b) => (b.head ?? -1) - (a.head ?? -1));
    const order = [...freshest(usable.filter((e) => e.up !== false)), ...usable.filter((e) => e.up === false)];
    if (order.length > 0) return order;
    return [...serving].sort((a, b) => a.restUntilMs - b.restUntilMs).slice(0, 1);
  }

  /**
   * Every endpoint that is ok at once (else every one not rested, else all): one acceptance wins.
   * A refusal is the answer only when every endpoint asked refused it definitely (`refusalKind`):
   * one that timed out, failed or glitched may hold the transaction, so that is the answer then
   * (a fault: the sender cannot know). "Already known" is an acceptance.
   */
  private async broadcast(params: unknown): Promise<unknown> {
    const now = Date.now();
    const okNow = this.endpoints.filter((e) => e.up !== false && !e.rested(now));
    const notRested = this.endpoints.filter((e) => !e.rested(now));
    const targets = okNow.length > 0 ? okNow : notRested.length > 0 ? notRested : this.endpoints;
    const answers = await Promise.allSettled(targets.map((e) => this.call(e, 'eth_sendRawTransaction', params)));
    const accepted = answers.find((a) => a.status === 'fulfilled');
    if (accepted) return (accepted as PromiseFulfilledResult<unknown>).value;
    const reasons = answers.map((a) => (a as PromiseRejectedResult).reason as unknown);
    const refused = (r: unknown) => !isFault(r) && refusalKind(nodeWords(r)) !== null;
    const known = reasons.find((r) => ALREADY_KNOWN.test(nodeWords(r)));
    if (known !== undefined) throw known as Error;
    const key = Array.isArray(params) && typeof params[0] === 'string' ? params[0] : JSON.stringify(params);
    const unknown = reasons.find((r) => !refused(r));
    if (unknown !== undefined) {
      this.heldMaybe(key, Date.now());
      throw unknown as Error;
    }
    // Every endpoint asked refused it; but the client's retry of a send that one did not answer
    // asks fewer (that one is down now): it may still hold the transaction.
    const since = this.mayHold.get(key);
    if (since !== undefined && Date.now() - since < MAY_HOLD_MS) throw new MayBeHeldError();
    throw reasons[0];
  }

  /** Remembers that an endpoint may hold the signed transaction `key` (at most MAY_HOLD_KEPT, the oldest forgotten first). */
  private heldMaybe(key: string, nowMs: number): void {
    this.mayHold.delete(key);
    this.mayHold.set(key, nowMs);
    if (this.mayHold.size > MAY_HOLD_KEPT) this.mayHold.delete(this.mayHold.keys().next().value!);
  }
}
