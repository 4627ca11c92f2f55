/**
 * Maps viem errors to application errors: a node that cannot be reached is 503
 * (CHAIN_UNAVAILABLE); a call the node answered with an error keeps its cause for the log.
 */
import { BaseError, HttpRequestError, TimeoutError, RpcRequestError } from 'viem';
import { AppError, Errors, isAppError } from '../errors.js';

/** True when the node could not be reached at all (down, refused, timed out). */
export function isUnreachable(err: unknown): boolean {
  if (!(err instanceof BaseError)) return false;
  return Boolean(err.walk((e) => e instanceof HttpRequestError || e instanceof TimeoutError));
}

export function mapChainError(err: unknown): AppError {
  if (isAppError(err)) return err;
  if (isUnreachable(err)) return Errors.chainUnavailable(err);
  if (err instanceof BaseError && err.walk((e) => e instanceof RpcRequestError)) {
    return Errors.chainRejected(`The blockchain node rejected the request: ${err.shortMessage}`, err);
  }
  return Errors.internal(err);
}
