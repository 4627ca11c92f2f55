/**
 * The `amount` + `token` pair of a create body (transactions, charges): the amount must be a
 * positive decimal with no more places than the token has; the token an active symbol of the
 * wallet. Returns the amount in base units and the token, or field errors in the contract's
 * wording.
 */
import type { WalletTokenRow } from '../../db/types.js';
import type { FieldErrors } from '../../errors.js';
import { AmountError, parseAmount } from '../../lib/money.js';

const PLAIN_DECIMAL = /^-?\d+(?:\.\d+)?$/;

function blank(v: unknown): boolean {
  return v === undefined || v === null || (typeof v === 'string' && v.trim() === '');
}

/** The amount's problem before the token is known: missing, not a number, or not positive. */
function amountShapeError(raw: unknown): string | null {
  if (blank(raw)) return 'The amount field is required.';
  if (typeof raw === 'number') {
    if (!Number.isFinite(raw)) return 'The amount field must be a number.';
    return raw > 0 ? null : 'The amount field must be greater than 0.';
  }
  if (typeof raw !== 'string' || raw.length > 200 || !PLAIN_DECIMAL.test(raw)) return 'The amount field must be a number.';
  return raw.startsWith('-') || !/[1-9]/.test(raw) ? 'The amount field must be greater than 0.' : null;
}

export interface AmountAndToken {
  amount: bigint;
  token: WalletTokenRow | undefined;
}

/** Adds `amount` / `token` errors to `errors`; the amount is 0n when it is not valid. */
export function checkAmountAndToken(body: Record<string, unknown>, activeTokens: WalletTokenRow[], errors: FieldErrors): AmountAndToken {
  const amountError = amountShapeError(body.amount);
  if (amountError) errors.amount = [amountError];

  let token: WalletTokenRow | undefined;
  const symbol = body.token;
  if (blank(symbol)) {
    errors.token = ['The token field is required.'];
  } else if (typeof symbol !== 'string') {
    errors.token = ['The token field must be a string.'];
  } else {
    const wanted = symbol.trim().toUpperCase();
    token = activeTokens.find((t) => t.symbol.toUpperCase() === wanted);
    if (!token) errors.token = ['The selected token is invalid.'];
  }

  let amount = 0n;
  if (!amountError && token) {
    try {
      amount = parseAmount(body.amount, token.decimals);
    } catch (e) {
      if (!(e instanceof AmountError)) throw e;
      errors.amount = [
        e.reason === 'precision'
          ? `The amount field must not have more than ${token.decimals} decimal places.`
          : /too large/.test(e.message)
            ? 'The amount field is too large.'
            : 'The amount field must be a number.',
      ];
    }
  }
  return { amount, token };
}

/** Field errors in the order the request lists its fields (the envelope message is the first). */
export function orderErrors(errors: FieldErrors, order: string[]): FieldErrors {
  const out: FieldErrors = {};
  for (const f of order) if (errors[f]) out[f] = errors[f]!;
  for (const [f, m] of Object.entries(errors)) if (!out[f]) out[f] = m;
  return out;
}
