/**
 * Maps viem errors to application errors: a transient node fault (unreachable, timed out, HTTP
 * 5xx or 429, rate-limited) is 503 (CHAIN_UNAVAILABLE, with Retry-After); a call the node
 * answered with another error keeps its cause for the log.
 */
import { BaseError, ContractFunctionExecutionError, HttpRequestError, TimeoutError, RpcRequestError } from 'viem';
import { AppError, Errors, isAppError } from '../errors.js';

/** True when the node could not be reached at all (down, refused, timed out). */
export function isUnreachable(err: unknown): boolean {
  if (!(err instanceof BaseError)) return false;
  return Boolean(err.walk((e) => e instanceof HttpRequestError || e instanceof TimeoutError));
}

/**
 * The HTTP status of a non-2xx answer that carried a JSON-RPC error body: viem throws it as an
 * RpcRequestError with `status` (not an HttpRequestError), e.g. a load balancer's 503 or a
 * provider's 429 with `{"error":{"code":-32603,…}}`. Null when the answer was a 2xx or never came.
 */
export function httpStatusOf(err: unknown): number | null {
  if (!(err instanceof BaseError)) return null;
  const found = err.walk((e) => e instanceof RpcRequestError && typeof e.status === 'number') as RpcRequestError | null;
  return found?.status ?? null;
}

/**
 * A read about block H when no endpoint (head read again just now) has reached H: no node could
 * answer it yet, and no endpoint below H is asked (its "not found" or "no logs" would be false).
 */
export class NotYetAtHeightError extends BaseError {
  constructor(height: number) {
    super(`No RPC endpoint has reached block ${height} yet`, { name: 'NotYetAtHeightError' });
  }
}

/**
 * Every endpoint asked refused a signed transaction, but an earlier send of the very same bytes
 * (a retry asks fewer endpoints: one that failed is skipped) had an endpoint that did not answer
 * and may hold it: the sender cannot know (a fault, never a refusal).
 */
export class MayBeHeldError extends BaseError {
  // No cause: the refusal's words would be read as the answer (broadcast.ts `nodeMessage`).
  constructor() {
    super('An endpoint that did not answer an earlier send may hold the transaction', { name: 'MayBeHeldError' });
  }
}

/** True when a read failed because no endpoint has (any longer) the block it is about. */
export function isNotYetAtHeight(err: unknown): boolean {
  return err instanceof BaseError && Boolean(err.walk((e) => e instanceof NotYetAtHeightError));
}

/** A JSON-RPC error that says the node limits this client (rate limits and quotas). */
const RATE_LIMITED = /rate.?limit|too many requests|request limit|quota|daily request count/i;
/** JSON-RPC "limit exceeded" (EIP-1474), which providers answer when they rate-limit. */
const LIMIT_EXCEEDED = -32005;

/** The node's own words along an error's cause chain (viem's `details` and short messages). */
export function nodeWords(err: unknown): string {
  const out: string[] = [];
  for (let e: unknown = err; e instanceof Error; e = e.cause) {
    const details = (e as { details?: unknown }).details;
    out.push(typeof details === 'string' ? details : '', (e as { shortMessage?: string }).shortMessage ?? e.message);
  }
  return out.join(' ');
}

/** A node that already has the transaction (its pool or its chain): an acceptance. */
export const ALREADY_KNOWN = /already known|known transaction|already imported|alreadyknown|already exists/i;
/** A definite refusal that says the sender's nonce is below the node's count. */
export const NONCE_TOO_LOW = /nonce too low|nonce is too low|nonce has already been used|oldnonce|already used/i;
/**
 * A refusal that says the node's pool holds another transaction of the sender at this nonce, one
 * this one does not pay enough to replace: that one may yet be mined (the nonce is not free), or
 * be evicted (this one is then taken). Never final for this transaction nor for its nonce.
 */
export const NONCE_HELD = /replacement transaction underpriced|replacement[ _]underpriced/i;
/** Every other definite refusal of a transaction or of its estimate: the same request elsewhere gets the same answer. */
export const REFUSED =
  /insufficient funds|intrinsic gas|gas too low|gas required exceeds|exceeds block gas limit|gas limit reached|invalid sender|invalid signature|underpriced|max fee per gas less than block base fee|fee cap|gasprice too low|gas price too low|invalid chain|chain id|tx type not supported|oversized data|nonce too high|nonce max/i;
/** A contract's revert (its reason is the contract's text, not the node's). */
const REVERTED = /revert/i;
/** JSON-RPC codes that are an answer about the request itself: a revert with data, invalid request or params, no such method, the transaction rejected. */
const ANSWER_CODES = new Set([3, -32600, -32601, -32602, -32003, -32004, -32006]);
/** A read refused for its range or result size (split by getLogs): an answer about the request. */
const RANGE_REFUSED =
  /block range|range (is )?too (large|wide|big)|max(imum)? (block )?range|range limit|more than \d+ (results|blocks|logs)|too many (results|blocks|logs)|query returned more than|response size|exceed(s|ed)? (the )?max(imum)? (block )?range/i;

/**
 * The words of a definite refusal of a transaction ("nonce too low", "replacement transaction
 * underpriced", "insufficient funds", "underpriced"…), else null.
 */
export function refusalKind(words: string): 'nonce-too-low' | 'nonce-held' | 'refused' | null {
  if (ALREADY_KNOWN.test(words)) return null;
  if (NONCE_TOO_LOW.test(words)) return 'nonce-too-low';
  if (NONCE_HELD.test(words)) return 'nonce-held';
  return REFUSED.test(words) ? 'refused' : null;
}

export function isRangeRefused(err: unknown): boolean {
  return RANGE_REFUSED.test(nodeWords(err));
}

/**
 * A node's JSON-RPC error answer that is neither a revert nor a definite refusal nor a
 * refusal of the request's form (docs/transactions.md, "Several providers: the finality rule"):
 * -32603 internal error, -32000 "header not found" for `latest`, a provider's own unknown error.
 * It says nothing about the request: another endpoint, or the same one later, may answer it.
 */
export function isNodeGlitch(err: unknown): boolean {
  if (!(err instanceof BaseError)) return false;
  const answer = err.walk((e) => e instanceof RpcRequestError) as RpcRequestError | null;
  if (!answer) return false;
  if (ANSWER_CODES.has(answer.code)) return false;
  const words = nodeWords(err);
  return !REVERTED.test(words) && !ALREADY_KNOWN.test(words) && refusalKind(words) === null && !RANGE_REFUSED.test(words);
}

/**
 * True for a fault of the node, not of the request, that a retry later may not meet
 * (docs/operating.md, "Several RPC providers"): a time-out, a connection that fails, HTTP 5xx or
 * 429 (viem's HttpRequestError: `isUnreachable`; or an RpcRequestError with that status when
 * the body was a JSON-RPC error), JSON-RPC -32005, or an error that says rate limit; no endpoint
 * at the height a read is about yet (NotYetAtHeightError); or a node's glitch (`isNodeGlitch`).
 */
export function isTransient(err: unknown): boolean {
  return isFault(err) || isNodeGlitch(err);
}

/** `isTransient` but for a node's glitch: the endpoint did not answer the request at all. */
export function isFault(err: unknown): boolean {
  if (isUnreachable(err)) return true;
  if (isNotYetAtHeight(err)) return true;
  if (err instanceof BaseError && err.walk((e) => e instanceof MayBeHeldError)) return true;
  const status = httpStatusOf(err);
  if (status !== null && (status >= 500 || status === 429)) return true;
  if (!(err instanceof BaseError)) return false;
  return Boolean(
    err.walk((e) => {
      if ((e as { code?: unknown }).code === LIMIT_EXCEEDED) return true;
      return e instanceof BaseError && RATE_LIMITED.test(`${e.details ?? ''} ${e.shortMessage}`);
    }),
  );
}

export function mapChainError(err: unknown): AppError {
  if (isAppError(err)) return err;
  if (isTransient(err)) return Errors.chainUnavailable(err);
  if (err instanceof BaseError && err.walk((e) => e instanceof RpcRequestError)) {
    return Errors.chainRejected(`The blockchain node rejected the request: ${err.shortMessage}`, err);
  }
  return Errors.internal(err);
}

/**
 * True when a contract read reached the node and failed because of the contract: it reverted,
 * returned no data (no code at the address, or no such function) or data that does not decode.
 * A node that could not be reached is never a contract failure.
 */
export function isContractCallFailure(err: unknown): err is BaseError {
  if (!(err instanceof BaseError) || isUnreachable(err)) return false;
  return Boolean(err.walk((e) => e instanceof ContractFunctionExecutionError));
}

/*
 * The endpoint set's words for its health and its rests (chain/endpoints.ts): which fault an
 * error is, when the node asked to be left alone until, and whether a read's block is unknown.
 */

/**
 * An error answer to a read at a block height that says the node has no such block yet: geth's
 * "header not found" (a load balancer's backend a block or two behind the one that gave the head),
 * anvil's "BlockOutOfRangeError" (-32602, its height lowered for a moment by a reorg), others'
 * "unknown block" / "block not found". Not a fault of the request: the endpoint is below that height.
 */
const BLOCK_UNKNOWN =
  /header not found|unknown block|block not found|BlockOutOfRange|block height is \d+ but requested|beyond (the )?current head/i;

/** Seconds of an HTTP Retry-After (delta-seconds or a date), as milliseconds; null without one. */
export function retryAfterMs(err: unknown, nowMs: number): number | null {
  let e: unknown = err;
  while (e instanceof Error) {
    if ((e instanceof HttpRequestError || e instanceof RpcRequestError) && e.headers) {
      const v = e.headers.get('retry-after');
      if (v === null) return null;
      if (/^\d+$/.test(v.trim())) return Number(v.trim()) * 1000;
      const at = Date.parse(v);
      return Number.isNaN(at) ? null : Math.max(0, at - nowMs);
    }
    e = e.cause;
  }
  return null;
}

/** Connection error codes (Node's and undici's) as the health's words. */
const CONNECTION_FAULTS: Record<string, string> = {
  ECONNREFUSED: 'connection refused',
  ECONNRESET: 'connection reset',
  UND_ERR_SOCKET: 'connection reset',
  ENOTFOUND: 'host not found',
  EAI_AGAIN: 'host not found',
  EHOSTUNREACH: 'host unreachable',
  ENETUNREACH: 'host unreachable',
};

/**
 * A transient fault in a few fixed words for the endpoint's health (never the error's own
 * message, which may carry the URL and its key): "timed out", "HTTP 503", "JSON-RPC -32005 rate
 * limited", "connection refused", "rate limited", else "request failed".
 */
export function faultOf(err: unknown): string {
  let status: number | null = null;
  let rpcLimit = false;
  let connection: string | null = null;
  for (let e: unknown = err; e instanceof Error; e = e.cause) {
    if (e instanceof TimeoutError) return 'timed out';
    if ((e instanceof HttpRequestError || e instanceof RpcRequestError) && typeof e.status === 'number' && status === null)
      status = e.status;
    const code = (e as { code?: unknown }).code;
    if (code === -32005) rpcLimit = true;
    if (typeof code === 'string' && connection === null) connection = CONNECTION_FAULTS[code] ?? 'connection failed';
  }
  if (status !== null && (status < 200 || status >= 300)) return `HTTP ${status}`;
  if (rpcLimit) return 'JSON-RPC -32005 rate limited';
  if (connection !== null) return connection;
  return isRateLimit(err) ? 'rate limited' : 'request failed';
}

/** True when a node answered a read at a height that it has no block at that height (BLOCK_UNKNOWN). */
export function isBlockUnknown(err: unknown): boolean {
  if (isFault(err)) return false;
  const words = nodeWords(err);
  return BLOCK_UNKNOWN.test(words) && !REVERTED.test(words);
}

/** A fault that says the endpoint limits this client: JSON-RPC -32005, HTTP 429, or its words (not a range refusal). */
export function isRateLimit(err: unknown): boolean {
  if (isRangeRefused(err)) return false;
  let e: unknown = err;
  while (e instanceof Error) {
    if ((e as { code?: unknown }).code === -32005) return true;
    if ((e instanceof HttpRequestError || e instanceof RpcRequestError) && e.status === 429) return true;
    const details = (e as { details?: unknown }).details;
    if (RATE_LIMITED.test(`${typeof details === 'string' ? details : ''} ${(e as { shortMessage?: string }).shortMessage ?? ''}`))
      return true;
    e = e.cause;
  }
  return false;
}
