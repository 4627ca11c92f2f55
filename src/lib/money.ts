// Exact money helpers. Amounts are always bigint base units; decimal strings
// are produced/consumed with pure integer arithmetic (never floats).

/** Number of decimal places used for API-facing decimal strings. */
const OUTPUT_DECIMALS = 18;

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

// What String(n) produces for a finite JS number, e.g. "1.5", "1e-7", "1.5e+21".
const NUMBER_AMOUNT = /^(-?)(\d+)(?:\.(\d+))?(?:e([+-]\d+))?$/;

function splitDecimal(text: string, pattern: RegExp): DecimalParts {
  const match = pattern.exec(text);
  if (!match) throw new AmountError('format', 'amount is not a valid decimal number');
  const [, sign, intPart = '', fracPart = '', exponent] = match;
  const exp = exponent === undefined ? 0 : Number(exponent);
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
 * Parse a user-supplied amount ("1.5", "10", 1.5, 1e-7, ...) into base units of
 * a token with `decimals` decimals. Zero and negative values are returned as-is;
 * the caller enforces sign rules.
 */
export function parseAmount(input: unknown, decimals: number): bigint {
  assertDecimals(decimals, MAX_INPUT_DECIMALS);
  const { negative, digits, scale } = toDecimalParts(input);
  const mantissa = BigInt(digits);
  let magnitude: bigint;
  if (scale <= decimals) {
    magnitude = mantissa * 10n ** BigInt(decimals - scale);
  } else {
    // More fractional digits than the token has: fine only if the extra ones are zeros.
    const divisor = 10n ** BigInt(scale - decimals);
    if (mantissa % divisor !== 0n) {
      throw new AmountError('precision', `amount has more than ${decimals} fractional digits`);
    }
    magnitude = mantissa / divisor;
  }
  if (magnitude >= MAX_BASE_UNITS_EXCLUSIVE) throw new AmountError('format', 'amount is too large');
  return negative ? -magnitude : magnitude;
}
