/**
 * A backend behind the head, played by the fault proxy: for a while it serves the chain as it was
 * `lag` blocks ago (its view, at height V = the node's head − lag). Every read at `latest` or
 * `pending` is answered at V (the tag rewritten to V's number before it is forwarded); a read at a
 * number above V is -32000 "header not found"; a block, a transaction or a receipt above V is
 * `null`; logs are clamped to V. Null for what it has not seen, as a lagging provider answers.
 */

export interface RpcCall {
  jsonrpc?: string;
  id?: unknown;
  method?: string;
  params?: unknown;
}

export interface RpcAnswer {
  jsonrpc: '2.0';
  id: unknown;
  result?: unknown;
  error?: { code: number; message: string; data?: unknown };
}

/**
 * How the proxy serves one call: `answer` at once (not forwarded), else `forward` (the call,
 * possibly rewritten) and pass the node's answer through `post` (which may change it).
 * `effect` says what the view did: `rewritten` (read at V instead of the head), `absent` (a null,
 * a "header not found", logs left out: the view has not seen it), or nothing.
 */
export interface CallPlan {
  answer?: RpcAnswer;
  forward?: RpcCall;
  post?: (a: RpcAnswer) => RpcAnswer;
  effect?: 'rewritten' | 'absent';
}

/** Looks a block up on the node itself (the view needs the height of a block named by hash). */
export type BlockHeight = (hash: string) => Promise<number | null>;

const hex = (n: number): string => `0x${n.toString(16)}`;
const isNumber = (v: unknown): v is string => typeof v === 'string' && /^0x[0-9a-f]+$/i.test(v);
const LATEST = new Set(['latest', 'pending']);

export const headerNotFound = (id: unknown): RpcAnswer => ({ jsonrpc: '2.0', id, error: { code: -32000, message: 'header not found' } });
const result = (id: unknown, value: unknown): RpcAnswer => ({ jsonrpc: '2.0', id, result: value });

/** Where a state read's block parameter is. */
const STATE_PARAM: Record<string, number> = {
  eth_getBalance: 1,
  eth_getTransactionCount: 1,
  eth_call: 1,
  eth_getCode: 1,
  eth_estimateGas: 1,
  eth_getStorageAt: 2,
};

/** The plan for one call while the proxy serves a view at height `v`. */
export async function behindPlan(c: RpcCall, v: number, heightOf: BlockHeight): Promise<CallPlan> {
  const params = Array.isArray(c.params) ? [...(c.params as unknown[])] : [];
  const m = String(c.method);
  if (m === 'eth_blockNumber') return { answer: result(c.id, hex(v)), effect: 'rewritten' };
  if (m in STATE_PARAM) return atBlock(c, params, STATE_PARAM[m]!, v);
  if (m === 'eth_getBlockByNumber' || m === 'eth_getBlockReceipts' || m === 'debug_traceBlockByNumber') {
    const tag = params[0];
    if (typeof tag === 'string' && LATEST.has(tag)) return { forward: { ...c, params: [hex(v), ...params.slice(1)] }, effect: 'rewritten' };
    if (isNumber(tag) && Number(BigInt(tag)) > v)
      return { answer: m === 'debug_traceBlockByNumber' ? notFound(c.id, tag) : result(c.id, null), effect: 'absent' };
    return { forward: c };
  }
  if (m === 'eth_getBlockByHash' || m === 'eth_getTransactionReceipt' || m === 'eth_getTransactionByHash') {
    return { forward: c, post: (a) => (above(a.result, v) ? result(a.id, null) : a) };
  }
  if (m === 'debug_traceBlockByHash') {
    const n = typeof params[0] === 'string' ? await heightOf(params[0]) : null;
    return n !== null && n > v ? { answer: notFound(c.id, params[0] as string), effect: 'absent' } : { forward: c };
  }
  if (m === 'eth_getLogs') return logs(c, params, v, heightOf);
  if (m === 'eth_feeHistory' && typeof params[1] === 'string' && LATEST.has(params[1]))
    return { forward: { ...c, params: [params[0], hex(v), ...params.slice(2)] }, effect: 'rewritten' };
  return { forward: c };
}

/** A state read: at `latest`/`pending` (or no block) read at V; above V, "header not found". */
function atBlock(c: RpcCall, params: unknown[], i: number, v: number): CallPlan {
  const b = params[i];
  const n = isNumber(b)
    ? Number(BigInt(b))
    : b && typeof b === 'object' && isNumber((b as { blockNumber?: unknown }).blockNumber)
      ? Number(BigInt((b as { blockNumber: string }).blockNumber))
      : null;
  if (n !== null) return n > v ? { answer: headerNotFound(c.id), effect: 'absent' } : { forward: c };
  if (b !== undefined && b !== null && !(typeof b === 'string' && LATEST.has(b))) return { forward: c }; // earliest, safe, finalized, a block hash
  while (params.length < i) params.push(undefined);
  params[i] = hex(v);
  return { forward: { ...c, params }, effect: 'rewritten' };
}

/** Logs up to V: a range ending above V clamped to it, one starting above it "header not found". */
async function logs(c: RpcCall, params: unknown[], v: number, heightOf: BlockHeight): Promise<CallPlan> {
  const f = { ...((params[0] ?? {}) as Record<string, unknown>) };
  const drop: CallPlan['post'] = (a) => (Array.isArray(a.result) ? { ...a, result: a.result.filter((l) => !above(l, v)) } : a);
  if (typeof f.blockHash === 'string') {
    const n = await heightOf(f.blockHash);
    return n !== null && n > v
      ? { answer: { jsonrpc: '2.0', id: c.id, error: { code: -32000, message: 'unknown block' } }, effect: 'absent' }
      : { forward: c, post: drop };
  }
  const at = (x: unknown): number | null =>
    x === undefined || (typeof x === 'string' && LATEST.has(x)) ? v : isNumber(x) ? Number(BigInt(x)) : x === 'earliest' ? 0 : null;
  const from = at(f.fromBlock);
  const to = at(f.toBlock);
  if (from !== null && from > v) return { answer: headerNotFound(c.id), effect: 'absent' };
  const clamped = to !== null && (to > v || !isNumber(f.toBlock));
  if (to !== null) f.toBlock = hex(Math.min(to, v));
  if (from !== null && !isNumber(f.fromBlock)) f.fromBlock = hex(from);
  return { forward: { ...c, params: [f, ...params.slice(1)] }, post: drop, effect: clamped ? 'rewritten' : undefined };
}

/** True for a block, transaction, receipt or log whose block is above V. */
function above(x: unknown, v: number): boolean {
  if (!x || typeof x !== 'object') return false;
  const o = x as { number?: unknown; blockNumber?: unknown };
  const n = isNumber(o.blockNumber) ? o.blockNumber : isNumber(o.number) ? o.number : null;
  return n !== null && Number(BigInt(n)) > v;
}

function notFound(id: unknown, block: string): RpcAnswer {
  return { jsonrpc: '2.0', id, error: { code: -32000, message: `block ${block} not found` } };
}
