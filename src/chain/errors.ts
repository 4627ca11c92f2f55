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

/** True when a read failed because no endpoint has (any longer) the block it is about. */
export function isNotYetAtHeight(err: unknown): boolean {
  return err instanceof BaseError && Boolean(err.walk((e) => e instanceof NotYetAtHeightError));
}

/** A JSON-RPC error that says the node limits this client (rate limits and quotas). */
const RATE_LIMITED = /rate.?limit|too many requests|request limit|quota|daily request count/i;
/** JSON-RPC "limit exceeded" (EIP-1474), which providers answer when they rate-limit. */
const LIMIT_EXCEEDED = -32005;

/**
 * True for a fault of the node, not of the request, that a retry later may not meet (CONTRACT.md,
 * "Chains as they are"): a time-out, a connection that fails, HTTP 5xx or 429 (viem's
 * HttpRequestError: `isUnreachable`; or an RpcRequestError with that status when the body was a
 * JSON-RPC error), JSON-RPC -32005, or an error that says rate limit; or no endpoint at the
 * height a read is about yet (NotYetAtHeightError).
 */
export function isTransient(err: unknown): boolean {
  if (isUnreachable(err)) return true;
  if (isNotYetAtHeight(err)) return true;
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
