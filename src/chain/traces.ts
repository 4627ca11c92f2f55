/**
 * Value carried by internal calls (a contract sending native coin on: no transaction addressed to
 * the recipient), read from the node's trace API: `debug_traceBlockByHash` with the built-in
 * `callTracer` (geth, erigon, reth, nethermind, anvil). Reading only: which recipients matter is
 * decided in src/modules/charges/charges.chain-sync.ts (deposit addresses) and
 * src/modules/transactions/transactions.chain-sync.ts (wallets' main addresses).
 *
 * Several endpoints (`TraceRoute`, used by src/chain/endpoints.ts): not every provider offers the
 * trace API, and one that does may refuse it for a while (a key's plan, a flaky gateway). A trace
 * is asked of each endpoint in turn until one answers: one that says it has no such method
 * (`isTracesUnsupported`) is `traces: false` and not asked again for a while (1 s, doubling to
 * TRACES_OFF_MAX_MS while it keeps refusing; an answer starts it over); one that fails otherwise
 * (a fault, or "block not found": the trace is by hash, and an endpoint behind has not got the
 * block) is passed over for this call only. When none answered, the caller is told whether
 * every endpoint refused the method (`NoTraceEndpointError`: the network has no trace API now)
 * or some failed otherwise (that error: ask again later). Never "no internal transfers".
 */
import { BaseError, HttpRequestError, RpcRequestError, type Hex, type PublicClient } from 'viem';

/** A native-coin movement inside a transaction (not its top-level call), that was not reverted. */
export interface InternalTransfer {
  txHash: Hex;
  /** The frame's position in the transaction's call tree (depth first, from 1): unique in the transaction. */
  index: number;
  from: Hex;
  to: Hex;
  value: bigint;
}

/** The node has no trace API (or does not allow it): internal transfers cannot be read from it. */
export class TracesUnsupported extends Error {
  constructor(cause: unknown) {
    super('the node does not answer debug_traceBlockByHash with callTracer', { cause });
  }
}

interface CallFrame {
  type?: string;
  from?: Hex;
  to?: Hex;
  value?: Hex;
  error?: string;
  calls?: CallFrame[];
}

const UNSUPPORTED =
  /method\b.*(does not exist|not (available|supported|allowed|whitelisted|enabled))|(unsupported|unknown) method|method not found|trace.* not (available|supported|enabled)|tracer not found/i;
/** HTTP statuses a provider answers a method it does not offer (or not to this key) with. */
const UNSUPPORTED_STATUS = new Set([401, 403, 404, 405, 501]);

/**
 * The node's answer that it has no such method (JSON-RPC -32601, -32004, or words to that
 * effect; or an HTTP refusal of the method). A time-out, a rate limit or "block not found" is
 * not: the trace is asked elsewhere, or later, so nothing is skipped for a fault.
 */
export function isTracesUnsupported(err: unknown): boolean {
  if (!(err instanceof BaseError)) return false;
  const http = err.walk(
    (e) => (e instanceof HttpRequestError || e instanceof RpcRequestError) && typeof e.status === 'number',
  ) as HttpRequestError | null;
  if (http?.status !== undefined && UNSUPPORTED_STATUS.has(http.status)) return true;
  const rpc = err.walk((e) => e instanceof RpcRequestError) as RpcRequestError | null;
  if (!rpc) return false;
  return rpc.code === -32601 || rpc.code === -32004 || UNSUPPORTED.test(`${rpc.details ?? ''} ${rpc.shortMessage}`);
}

/**
 * The internal transfers with value of the block `blockHash` (by hash: the block the follower
 * read, never a replacement at its height). A reverted frame moves nothing, nor do its children.
 * Throws `TracesUnsupported` when the node has no such method; any other error as it is.
 */
export async function internalTransfers(client: PublicClient, blockHash: Hex): Promise<InternalTransfer[]> {
  let traces: { txHash?: Hex; result?: CallFrame }[];
  try {
    traces = (await client.request({
      method: 'debug_traceBlockByHash',
      params: [blockHash, { tracer: 'callTracer' }],
    } as never)) as typeof traces;
  } catch (e) {
    const none = e instanceof BaseError ? (e.walk((x) => x instanceof NoTraceEndpointError) as NoTraceEndpointError | null) : null;
    if (none) throw new TracesUnsupported(none.cause);
    if (isTracesUnsupported(e)) throw new TracesUnsupported(e);
    throw e;
  }
  const out: InternalTransfer[] = [];
  for (const t of traces ?? []) {
    if (!t.txHash || !t.result || t.result.error) continue;
    let index = 0;
    const walk = (frames: CallFrame[] | undefined) => {
      for (const f of frames ?? []) {
        index += 1;
        if (f.error) continue;
        const value = f.value ? BigInt(f.value) : 0n;
        const type = (f.type ?? '').toUpperCase();
        if (value > 0n && f.from && f.to && (type === 'CALL' || type === 'SELFDESTRUCT'))
          out.push({ txHash: t.txHash!, index, from: f.from, to: f.to, value });
        walk(f.calls);
      }
    };
    walk(t.result.calls);
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// Trace calls over several endpoints.
// ---------------------------------------------------------------------------------------------

/** The methods that read call traces: routed by `TraceRoute`, not as ordinary reads. */
export const TRACE_METHODS: ReadonlySet<string> = new Set([
  'debug_traceBlockByHash',
  'debug_traceBlockByNumber',
  'debug_traceTransaction',
  'trace_block',
  'trace_transaction',
]);

/** How long an endpoint that keeps refusing the trace API is left unasked, at most (a provider may add it). */
export const TRACES_OFF_MAX_MS = 10 * 60_000;
const TRACES_OFF_FIRST_MS = 1_000;

/** Every endpoint of the network refused the trace method lately (none was asked this time, or each refused it now). */
export class NoTraceEndpointError extends BaseError {
  constructor(cause: unknown) {
    super('No RPC endpoint of the network offers debug_traceBlockByHash now', {
      name: 'NoTraceEndpointError',
      cause: cause instanceof Error ? cause : undefined,
    });
  }
}

/** What the route needs of an endpoint (src/chain/endpoints.ts). */
export interface TraceEndpoint {
  head: number | null;
  up: boolean | null;
  rested(nowMs: number): boolean;
}

interface TraceState {
  /** Not asked for traces before this time (it refused the method). */
  offUntilMs: number;
  /** Its current time off (doubling while it keeps refusing); 0 after an answer. */
  offMs: number;
  /** Its last refusal, given as the cause when every endpoint refused. */
  refusal: unknown;
  /** Its last trace call was refused for the method (not an answer since). */
  refused: boolean;
}

/** The trace calls of one network's endpoints, and what each endpoint showed of its trace API. */
export class TraceRoute<E extends TraceEndpoint> {
  private readonly state = new Map<E, TraceState>();

  constructor(
    private readonly endpoints: readonly E[],
    private readonly call: (e: E, method: string, params: unknown) => Promise<unknown>,
  ) {
    for (const e of endpoints) this.state.set(e, { offUntilMs: 0, offMs: 0, refusal: null, refused: false });
  }

  /** False while the endpoint is left unasked after refusing the trace API. */
  offers(e: E, nowMs = Date.now()): boolean {
    return (this.state.get(e)?.offUntilMs ?? 0) <= nowMs;
  }

  /** What `rpc_endpoints[].traces` says: false when its last trace call was refused for the method, until one is answered. */
  shows(e: E): boolean {
    return !(this.state.get(e)?.refused ?? false);
  }

  /**
   * Asks the endpoints that offer traces, the freshest that is up first, until one answers.
   * Throws NoTraceEndpointError when every endpoint refused the method (now, or lately), else
   * the last other failure (a fault, or an endpoint without the block: ask again later).
   */
  async read(method: string, params: unknown): Promise<unknown> {
    const now = Date.now();
    const offering = this.endpoints.filter((e) => this.offers(e, now));
    const ready = offering.filter((e) => e.up !== false && !e.rested(now)).sort((a, b) => (b.head ?? -1) - (a.head ?? -1));
    const order = [...ready, ...offering.filter((e) => !ready.includes(e))];
    let failure: unknown = null;
    for (const e of order) {
      const st = this.state.get(e)!;
      try {
        const result = await this.call(e, method, params);
        st.offMs = 0;
        st.refused = false;
        return result;
      } catch (err) {
        if (!isTracesUnsupported(err)) {
          failure = err;
          continue;
        }
        st.offMs = st.offMs === 0 ? TRACES_OFF_FIRST_MS : Math.min(st.offMs * 2, TRACES_OFF_MAX_MS);
        st.offUntilMs = Date.now() + st.offMs;
        st.refusal = err;
        st.refused = true;
      }
    }
    if (failure !== null) throw failure as Error;
    throw new NoTraceEndpointError([...this.state.values()].find((s) => s.refusal !== null)?.refusal ?? null);
  }
}
