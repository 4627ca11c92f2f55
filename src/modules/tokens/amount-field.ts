/**
 * Money fields of create bodies (transactions, charges): the `amount` + `token` pair (the
 * amount a positive decimal with no more places than the token has; the token an active
 * symbol of the wallet) and other decimals such as explicit fees. A field is a plain decimal
 * string or a JSON number, read exactly as the client wrote it (lib/exact-json.ts): `1.1` and
 * `"1.1"` are the same amount. Results are base units, or field errors in the contract's
 * wording.
 */
import type { WalletTokenRow } from '../../db/types.js';
import type { FieldErrors } from '../../errors.js';
import { numberText } from '../../lib/exact-json.js';
import { AmountError, parseAmount, parseNumberText } from '../../lib/money.js';

const PLAIN_DECIMAL = /^-?\d+(?:\.\d+)?$/;
const JSON_NUMBER = /^-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?$/;
const MAX_TEXT_CHARS = 200;

function blank(v: unknown): boolean {
  return v === undefined || v === null || (typeof v === 'string' && v.trim() === '');
}

/** The field as decimal text: a string as sent, a JSON number as written; null if neither. */
function decimalText(body: Record<string, unknown>, field: string): { text: string; json: boolean } | null {
  const raw = body[field];
  if (typeof raw === 'number') return Number.isFinite(raw) ? { text: numberText(body, field)!, json: true } : null;
  return typeof raw === 'string' ? { text: raw, json: false } : null;
}

/** The field's problem before the token is known: missing, not a number, or not positive. */
function shapeError(body: Record<string, unknown>, field: string, allowZero: boolean): string | null {
  if (blank(body[field])) return `The ${field} field is required.`;
  const d = decimalText(body, field);
  if (d === null || d.text.length > MAX_TEXT_CHARS || !(d.json ? JSON_NUMBER : PLAIN_DECIMAL).test(d.text))
    return `The ${field} field must be a number.`;
  const mantissa = d.text.split(/[eE]/)[0]!;
  if (mantissa.startsWith('-') && /[1-9]/.test(mantissa))
    return allowZero ? `The ${field} field must be at least 0.` : `The ${field} field must be greater than 0.`;
  return allowZero || /[1-9]/.test(mantissa) ? null : `The ${field} field must be greater than 0.`;
}

/** Base units of a field whose shape passed, or its error (too many places, too large). */
function toUnits(body: Record<string, unknown>, field: string, decimals: number): bigint | string {
  const d = decimalText(body, field)!;
  try {
    const v = d.json ? parseNumberText(d.text, decimals) : parseAmount(d.text, decimals);
    return v < 0n ? -v : v; // "-0" is zero
  } catch (e) {
    if (!(e instanceof AmountError)) throw e;
    if (e.reason === 'precision') return `The ${field} field must not have more than ${decimals} decimal places.`;
    return /too large/.test(e.message) ? `The ${field} field is too large.` : `The ${field} field must be a number.`;
  }
}

/**
 * An optional or required decimal field with `decimals` places (e.g. a fee per gas unit in
 * wei: 18). Adds its error to `errors`; returns its base units, or null (absent or invalid).
 */
export function checkDecimalField(
  body: Record<string, unknown>,
  field: string,
  decimals: number,
  errors: FieldErrors,
  opts: { required?: boolean; allowZero?: boolean } = {},
): bigint | null {
  if (!opts.required && blank(body[field])) return null;
  const shape = shapeError(body, field, opts.allowZero ?? false);
  if (shape) {
    errors[field] = [shape];
    return null;
  }
  const units = toUnits(body, field, decimals);
  if (typeof units === 'string') {
    errors[field] = [units];
    return null;
  }
  return units;
}

export interface AmountAndToken {
  amount: bigint;
  token: WalletTokenRow | undefined;
}

/** Adds `amount` / `token` errors to `errors`; the amount is 0n when it is not valid. `allowZero`: contract calls may send 0. */
export function checkAmountAndToken(
  body: Record<string, unknown>,
  activeTokens: WalletTokenRow[],
  errors: FieldErrors,
  opts: { allowZero?: boolean } = {},
): AmountAndToken {
  const amountError = shapeError(body, 'amount', opts.allowZero ?? false);
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
    const units = toUnits(body, 'amount', token.decimals);
    if (typeof units === 'string') errors.amount = [units];
    else amount = units;
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
