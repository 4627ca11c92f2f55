// Exact money helpers. Amounts are always bigint base units; decimal strings
// are produced/consumed with pure integer arithmetic (never floats).

/** Number of decimal places used for API-facing decimal strings. */
export const OUTPUT_DECIMALS = 18;

/** ERC-20 `decimals()` is a uint8, so this is the widest we ever accept on input. */
const MAX_INPUT_DECIMALS = 255;

/** Amounts are stored as uint256 on chain; anything at or above 2^256 is nonsense. */
const MAX_BASE_UNITS_EXCLUSIVE = 1n << 256n;

/**
 * Longest string we are willing to parse. 2^256 has 78 digits; the rest is
 * headroom for a sign, a decimal point and harmless trailing zeros. Anything
 * longer is rejected before doing any bigint work on it.
 */
const MAX_INPUT_LENGTH = 200;

export type AmountErrorReason = 'format' | 'precision';

export class AmountError extends Error {
  readonly reason: AmountErrorReason;

  constructor(reason: AmountErrorReason, message: string) {
    super(message);
    this.name = 'AmountError';
    this.reason = reason;
  }
}

function assertDecimals(decimals: number, max: number): void {
  if (!Number.isInteger(decimals) || decimals < 0 || decimals > max) {
    throw new RangeError(`decimals must be an integer in 0..${max}, got ${String(decimals)}`);
  }
}

/**
 * Render `baseUnits` of a token with `decimals` decimals as a decimal string
 * with exactly 18 fractional digits, e.g. (1500000n, 6) -> "1.500000000000000000".
 * Throws RangeError for decimals > 18 (that would need truncation).
 */
export function formatUnits18(baseUnits: bigint, decimals: number): string {
  assertDecimals(decimals, OUTPUT_DECIMALS);
  const negative = baseUnits < 0n;
  const magnitude = negative ? -baseUnits : baseUnits;
  // Rescale to 18 decimals; exact because decimals <= 18.
  const scaled = magnitude * 10n ** BigInt(OUTPUT_DECIMALS - decimals);
  const unit = 10n ** BigInt(OUTPUT_DECIMALS);
  const whole = scaled / unit;
  const fraction = (scaled % unit).toString().padStart(OUTPUT_DECIMALS, '0');
  return `${negative ? '-' : ''}${whole.toString()}.${fraction}`;
}

/** A canonical integer as `bigint.toString()` writes it: no sign on zero, no leading zeros. */
const CANONICAL_INTEGER = /^(?:0|-?[1-9]\d*)$/;

/** ZEROS[n] is n zeros (n ≤ 18). */
const ZEROS = Array.from({ length: OUTPUT_DECIMALS + 1 }, (_, n) => '0'.repeat(n));

/**
 * `formatUnits18(BigInt(stored), decimals)` for an amount as the database stores it (a decimal
 * string of base units: TEXT on SQLite, NUMERIC(78,0) on PostgreSQL), without the bigint round
 * trip. Dividing by 10^decimals is moving the point, so on a canonical integer string the
 * result is a slice and some zeros, digit for digit what the bigint arithmetic gives. Anything
 * else (leading zeros, a sign on zero, decimals outside 0..18, not an integer) goes through
 * `formatUnits18` itself, so the result and the errors are always exactly its own.
 */
export function formatStoredUnits18(stored: string, decimals: number): string {
  if (!(Number.isInteger(decimals) && decimals >= 0 && decimals <= OUTPUT_DECIMALS) || !CANONICAL_INTEGER.test(stored)) {
    return formatUnits18(BigInt(stored), decimals);
  }
  const negative = stored.charCodeAt(0) === 45; // '-'
  const digits = negative ? stored.slice(1) : stored;
  const n = digits.length;
  const whole = n > decimals ? digits.slice(0, n - decimals) : '0';
  const fraction = n > decimals ? digits.slice(n - decimals) : ZEROS[decimals - n]! + digits;
  return (negative ? '-' : '') + whole + '.' + fraction + ZEROS[OUTPUT_DECIMALS - decimals]!;
}

/** Number(formatUnits18(...)) — only for API fields that must be JSON numbers. */
export function toNumber18(baseUnits: bigint, decimals: number): number {
  return Number(formatUnits18(baseUnits, decimals));
}

/** Decomposed decimal literal: value = (-1)^negative * digits * 10^-scale. */
interface DecimalParts {
  negative: boolean;
  digits: string;
  /** Number of decimal places of `digits`; may be negative (e.g. 1e21). */
  scale: number;
}

// Plain decimal strings: optional '-', integer digits, optional '.digits'.
// No '+', no whitespace, no exponent, no hex, no bare '.5' or '5.'.
const STRING_AMOUNT = /^(-?)(\d+)(?:\.(\d+))?$/;

// What String(n) produces for a finite JS number, e.g. "1.5", "1e-7", "1.5e+21", and a JSON
// number as written (RFC 8259: "1E5", "2e3" are numbers too).
const NUMBER_AMOUNT = /^(-?)(\d+)(?:\.(\d+))?(?:[eE]([+-]?\d+))?$/;

/**
 * Largest exponent a number text may carry. Beyond it the value is either too large (≥ 2^256
 * base units whatever the decimals) or has too many places; the bound keeps `10n ** exp`
 * from being asked for a billion digits by `1e999999999`.
 */
const MAX_EXPONENT = 400;

function splitDecimal(text: string, pattern: RegExp): DecimalParts {
  const match = pattern.exec(text);
  if (!match) throw new AmountError('format', 'amount is not a valid decimal number');
  const [, sign, intPart = '', fracPart = '', exponent] = match;
  const exp = exponent === undefined ? 0 : Number(exponent);
  if (exp > MAX_EXPONENT) throw new AmountError('format', 'amount is too large');
  if (exp < -MAX_EXPONENT) throw new AmountError('precision', 'amount has too many fractional digits');
  return { negative: sign === '-', digits: intPart + fracPart, scale: fracPart.length - exp };
}

function toDecimalParts(input: unknown): DecimalParts {
  if (typeof input === 'number') {
    if (!Number.isFinite(input)) throw new AmountError('format', 'amount must be a finite number');
    // String(n) is the shortest representation that round-trips, which is
    // what the client most plausibly meant by e.g. 0.1.
    return splitDecimal(String(input), NUMBER_AMOUNT);
  }
  if (typeof input === 'string') {
    if (input.length === 0) throw new AmountError('format', 'amount is empty');
    if (input.length > MAX_INPUT_LENGTH) throw new AmountError('format', 'amount is too long');
    return splitDecimal(input, STRING_AMOUNT);
  }
  throw new AmountError('format', 'amount must be a string or a number');
}

/**
 * Parse a JSON number exactly as the client wrote it (its source text, see lib/exact-json.ts)
 * into base units: `1.123456789012345678` stays that, never the nearest double. Same rules as
 * `parseAmount`; exponents are allowed, as in any JSON number.
 */
export function parseNumberText(text: string, decimals: number): bigint {
  assertDecimals(decimals, MAX_INPUT_DECIMALS);
  if (text.length === 0 || text.length > MAX_INPUT_LENGTH) throw new AmountError('format', 'amount is not a valid number');
  return toBaseUnits(splitDecimal(text, NUMBER_AMOUNT), decimals);
}

/**
 * Parse a user-supplied amount ("1.5", "10", 1.5, 1e-7, ...) into base units of
 * a token with `decimals` decimals. Zero and negative values are returned as-is;
 * the caller enforces sign rules.
 *
 * No more decimal places than the token has, trailing zeros included: "1.0000000" on a
 * 6-decimal token is a precision error, as docs/architecture.md words it ("no more decimal places
 * than the token has"). A JSON number is read as String(n) gives it (1.50 arrives as 1.5).
 */
export function parseAmount(input: unknown, decimals: number): bigint {
  assertDecimals(decimals, MAX_INPUT_DECIMALS);
  return toBaseUnits(toDecimalParts(input), decimals);
}

function toBaseUnits({ negative, digits: rawDigits, scale }: DecimalParts, decimals: number): bigint {
  // Leading zeros are dropped so the digit count bounds the work below (2^256 has 78 digits).
  const digits = rawDigits.replace(/^0+(?=\d)/, '');
  if (scale > decimals) {
    throw new AmountError('precision', `amount has more than ${decimals} fractional digits`);
  }
  // scale may be negative (1e21): the exponent only adds zeros, which is exact.
  if (digits !== '0' && digits.length + (decimals - scale) > 80) throw new AmountError('format', 'amount is too large');
  const magnitude = BigInt(digits) * 10n ** BigInt(decimals - scale);
  if (magnitude >= MAX_BASE_UNITS_EXCLUSIVE) throw new AmountError('format', 'amount is too large');
  return negative ? -magnitude : magnitude;
}
