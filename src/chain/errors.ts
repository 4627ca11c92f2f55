/**
 * Maps viem errors to application errors: a node that cannot be reached is 503
 * (CHAIN_UNAVAILABLE); a call the node answered with an error keeps its cause for the log.
 */
import { BaseError, ContractFunctionExecutionError, HttpRequestError, TimeoutError, RpcRequestError } from 'viem';
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

/**
 * True when a contract read reached the node and failed because of the contract: it reverted,
 * returned no data (no code at the address, or no such function) or data that does not decode.
 * A node that could not be reached is never a contract failure.
 */
export function isContractCallFailure(err: unknown): err is BaseError {
  if (!(err instanceof BaseError) || isUnreachable(err)) return false;
  return Boolean(err.walk((e) => e instanceof ContractFunctionExecutionError));
}
