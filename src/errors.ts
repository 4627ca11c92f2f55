/**
 * The one catalogue of application errors. Every error the API can answer with is
 * built here, with its HTTP status, a stable code and the message the contract names.
 * 5xx causes are kept (for the log) but never serialised.
 */
export type FieldErrors = Record<string, string[]>;
/** `data` of an error that is not a validation error (e.g. a revert's reason). */
export type ErrorDetail = { reason: string };

export class AppError extends Error {
  readonly statusCode: number;
  readonly code: string;
  readonly data: FieldErrors | ErrorDetail | null;
  readonly headers: Record<string, string>;

  constructor(
    statusCode: number,
    code: string,
    message: string,
    options: { data?: FieldErrors | ErrorDetail | null; cause?: unknown; headers?: Record<string, string> } = {},
  ) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'AppError';
    this.statusCode = statusCode;
    this.code = code;
    this.data = options.data ?? null;
    this.headers = options.headers ?? {};
  }
}

/** The Retry-After of a 503 for a transient node fault (an endpoint rate-limited without its own is rested 1 s). */
export const CHAIN_RETRY_AFTER_S = 1;

/** 422 with field → messages; the envelope message is the first message without its final period. */
export function validationError(fields: FieldErrors): AppError {
  const first = Object.values(fields).find((m) => m.length > 0)?.[0] ?? 'The given data was invalid.';
  return new AppError(422, 'VALIDATION_FAILED', first.replace(/\.$/, ''), { data: fields });
}

/** Shorthand for a single-field validation error. */
export function fieldError(field: string, message: string): AppError {
  return validationError({ [field]: [message] });
}

export const Errors = {
  unauthenticated: () => new AppError(401, 'UNAUTHENTICATED', 'Unauthenticated'),
  invalidToken: () => new AppError(401, 'INVALID_TOKEN', 'Invalid token'),
  insufficientScope: () => new AppError(403, 'INSUFFICIENT_SCOPE', 'Insufficient scope'),
  invalidCredentials: () => new AppError(401, 'INVALID_CREDENTIALS', 'Invalid credentials'),
  walletNotFound: () => new AppError(404, 'WALLET_NOT_FOUND', 'Wallet not found'),
  transactionNotFound: () => new AppError(404, 'TRANSACTION_NOT_FOUND', 'Transaction not found'),
  webhookNotFound: () => new AppError(404, 'WEBHOOK_NOT_FOUND', 'Webhook not found'),
  deliveryNotFound: () => new AppError(404, 'DELIVERY_NOT_FOUND', 'Delivery not found'),
  tokenNotFound: () => new AppError(404, 'TOKEN_NOT_FOUND', 'Token not found'),
  chargeNotFound: () => new AppError(404, 'CHARGE_NOT_FOUND', 'Charge not found'),
  eventNotFound: () => new AppError(404, 'EVENT_NOT_FOUND', 'Event not found'),
  keyNotFound: () => new AppError(404, 'KEY_NOT_FOUND', 'Key not found'),
  payoutNotFound: () => new AppError(404, 'PAYOUT_NOT_FOUND', 'Payout not found'),
  refundNotFound: () => new AppError(404, 'REFUND_NOT_FOUND', 'Refund not found'),
  allowlistEntryNotFound: () => new AppError(404, 'ALLOWLIST_ENTRY_NOT_FOUND', 'Allowlist entry not found'),
  networkNotFound: () => new AppError(404, 'NETWORK_NOT_FOUND', 'Network not found'),
  routeNotFound: () => new AppError(404, 'ROUTE_NOT_FOUND', 'Route not found'),
  methodNotAllowed: (allow: string[]) =>
    new AppError(405, 'METHOD_NOT_ALLOWED', 'Method not allowed', { headers: { allow: allow.join(', ') } }),
  malformedJson: () => new AppError(400, 'MALFORMED_JSON', 'Malformed JSON body'),
  malformedUrl: () => new AppError(400, 'MALFORMED_URL', 'Malformed URL'),
  uriTooLong: () => new AppError(414, 'URI_TOO_LONG', 'URI too long'),
  headersTooLarge: () => new AppError(431, 'HEADERS_TOO_LARGE', 'Request header fields too large'),
  requestTimeout: () => new AppError(408, 'REQUEST_TIMEOUT', 'Request timeout'),
  badRequest: (message: string) => new AppError(400, 'BAD_REQUEST', message),
  payloadTooLarge: () => new AppError(413, 'PAYLOAD_TOO_LARGE', 'Payload too large'),
  unsupportedMediaType: () => new AppError(415, 'UNSUPPORTED_MEDIA_TYPE', 'Unsupported media type'),
  tooManyRequests: (retryAfterS: number) =>
    new AppError(429, 'TOO_MANY_REQUESTS', 'Too Many Requests', { headers: { 'retry-after': String(retryAfterS) } }),
  insufficientBalance: () => new AppError(400, 'INSUFFICIENT_BALANCE', 'Insufficient balance for transaction'),
  /** A payout's total and its items' maximum fees, checked as a whole before anything is sent. */
  insufficientBalanceForPayout: () => new AppError(400, 'INSUFFICIENT_BALANCE_FOR_PAYOUT', 'Insufficient balance for payout'),
  /** Approve or reject of a payout that is not (or no longer) `awaiting_approval`. */
  payoutNotAwaitingApproval: () => new AppError(400, 'NOT_AWAITING_APPROVAL', 'Payout is not awaiting approval'),
  /** The wallet's spending policy refuses the transfer (src/modules/policies/policies.check.ts). */
  overPerTransactionLimit: () => new AppError(400, 'POLICY_PER_TRANSACTION', 'Policy: over the per-transaction limit'),
  overDailyLimit: () => new AppError(400, 'POLICY_DAILY', 'Policy: over the daily limit'),
  notAllowlisted: () => new AppError(400, 'POLICY_ALLOWLIST', 'Policy: address not on the allowlist'),
  /** A transfer, contract call, payout item or refund to an address on SCREENING_FILE's list (src/modules/screening/screening.ts). */
  addressBlocked: () => new AppError(400, 'ADDRESS_BLOCKED', 'Address is blocked by screening'),
  /** More than MAX_PENDING_PER_WALLET outgoing transactions of the wallet would be unconfirmed. */
  tooManyPending: () => new AppError(400, 'TOO_MANY_PENDING', 'Too many pending transactions'),
  /** A create that must take exactly `required` (a gap filler) got another nonce: nothing was recorded. */
  nonceMoved: (required: number, allocated: number) =>
    new AppError(409, 'NONCE_MOVED', `Nonce ${required} is no longer the next to fill (allocation gave ${allocated})`),
  userExists: () =>
    new AppError(422, 'USER_EXISTS', 'The email has already been taken', { data: { email: ['The email has already been taken.'] } }),
  dashboardNotBuilt: () => new AppError(503, 'DASHBOARD_NOT_BUILT', 'The dashboard is not built: run npm run build:dashboard'),
  /** Another 4xx Fastify itself answered (a route it does not have, a request it cannot read). */
  fastifyRefused: (status: number) => new AppError(status, 'BAD_REQUEST', status === 404 ? 'Route not found' : 'Bad request'),
  /** Speed-up or cancel of a transaction that is not pending, not outgoing, or already mined. */
  cannotReplace: () => new AppError(400, 'CANNOT_REPLACE', 'Transaction cannot be replaced'),
  /** Approve or reject of a transaction that is not (or no longer) `awaiting_approval`. */
  notAwaitingApproval: () => new AppError(400, 'NOT_AWAITING_APPROVAL', 'Transaction is not awaiting approval'),
  /** Refunds (docs/money-out.md, "Refunds"): the bound, a charge with no payment, a claim used or over. */
  refundExceeds: () => new AppError(400, 'REFUND_EXCEEDS', 'Refund exceeds the amount received'),
  nothingToRefund: () => new AppError(400, 'NOTHING_TO_REFUND', 'Nothing to refund'),
  refundClaimed: () => new AppError(400, 'REFUND_CLAIMED', 'Refund already claimed'),
  refundExpired: () => new AppError(400, 'REFUND_EXPIRED', 'Refund claim expired'),
  /** A datetime field (`since`, an export's `from` and `to`) that is not a real `YYYY-MM-DD HH:MM:SS`. */
  invalidDateTime: (field: string) => fieldError(field, `The ${field} field must be a datetime in the format YYYY-MM-DD HH:MM:SS.`),
  /** The end of a datetime range before its start. */
  dateTimeBefore: (field: string, other: string) => fieldError(field, `The ${field} field must be a date after or equal to ${other}.`),
  idempotencyMismatch: () => validationError({ 'Idempotency-Key': ['Idempotency-Key already used with a different request.'] }),
  idempotencyInProgress: () => new AppError(409, 'IDEMPOTENCY_IN_PROGRESS', 'A request with this Idempotency-Key is still in progress'),
  /** A transient node fault (src/chain/errors.ts `isTransient`): the client retries after Retry-After. */
  chainUnavailable: (cause?: unknown) =>
    new AppError(503, 'CHAIN_UNAVAILABLE', 'The blockchain node is unavailable', {
      cause,
      headers: { 'retry-after': String(CHAIN_RETRY_AFTER_S) },
    }),
  chainRejected: (message: string, cause?: unknown) => new AppError(400, 'CHAIN_REJECTED', message, { cause }),
  /** eth_estimateGas of a contract call reverted; `reason` when the node gave one. */
  wouldRevert: (reason: string | null, cause?: unknown) =>
    new AppError(400, 'WOULD_REVERT', 'Transaction would revert', { data: reason === null ? null : { reason }, cause }),
  /** A read the node answered with an error that is not the caller's fault (e.g. a balance read). */
  chainError: (cause?: unknown) => new AppError(502, 'CHAIN_ERROR', 'The blockchain node returned an error', { cause }),
  internal: (cause?: unknown) => new AppError(500, 'INTERNAL', 'Internal server error', { cause }),
} as const;

export function isAppError(err: unknown): err is AppError {
  return err instanceof AppError;
}
