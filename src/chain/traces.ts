/**
 * Value carried by internal calls (a contract sending native coin on: no transaction addressed to
 * the recipient), read from the node's trace API: `debug_traceBlockByHash` with the built-in
 * `callTracer` (geth, erigon, reth, nethermind, anvil). Reading only: which recipients matter is
 * decided in src/modules/charges/charges.chain-sync.ts.
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

const UNSUPPORTED = /method\b.*(does not exist|not (available|supported|allowed|whitelisted|enabled))|(unsupported|unknown) method|method not found|trace.* not (available|supported|enabled)|tracer not found/i;
/** HTTP statuses a provider answers a method it does not offer (or not to this key) with. */
const UNSUPPORTED_STATUS = new Set([401, 403, 404, 405, 501]);

/**
 * The node's answer that it has no such method (JSON-RPC -32601, -32004, or words to that
 * effect; or an HTTP refusal of the method). A time-out, a 5xx, a rate limit or "block not
 * found" is not: the follower's tick fails and is retried, so nothing is skipped for a fault.
 */
function isUnsupported(err: unknown): boolean {
  if (!(err instanceof BaseError)) return false;
  const http = err.walk((e) => (e instanceof HttpRequestError || e instanceof RpcRequestError) && typeof e.status === 'number') as HttpRequestError | null;
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
    traces = (await client.request({ method: 'debug_traceBlockByHash', params: [blockHash, { tracer: 'callTracer' }] } as never)) as typeof traces;
  } catch (e) {
    if (isUnsupported(e)) throw new TracesUnsupported(e);
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
        if (value > 0n && f.from && f.to && (type === 'CALL' || type === 'SELFDESTRUCT')) out.push({ txHash: t.txHash!, index, from: f.from, to: f.to, value });
        walk(f.calls);
      }
    };
    walk(t.result.calls);
  }
  return out;
}
