import { describe, expect, it } from 'vitest';
import { recordNumberSources, numberText } from './exact-json.js';
import { AmountError, formatStoredUnits18, formatUnits18, parseAmount, parseNumberText, toNumber18 } from './money.js';

const MAX_UINT256 = (1n << 256n) - 1n;

function reasonOf(fn: () => unknown): string | undefined {
  try {
    fn();
  } catch (err) {
    if (err instanceof AmountError) return err.reason;
    throw err;
  }
  return undefined;
}

describe('formatUnits18', () => {
  it.each([
    [1500000n, 6, '1.500000000000000000'],
    [1n, 18, '0.000000000000000001'],
    [0n, 18, '0.000000000000000000'],
    [0n, 0, '0.000000000000000000'],
    [0n, 6, '0.000000000000000000'],
    [-500000n, 6, '-0.500000000000000000'],
    [-1n, 18, '-0.000000000000000001'],
    [-1234567n, 6, '-1.234567000000000000'],
    [1n, 0, '1.000000000000000000'],
    [42n, 0, '42.000000000000000000'],
    [1n, 6, '0.000001000000000000'],
    [10n ** 18n, 18, '1.000000000000000000'],
    [123456789012345678901234567890n, 18, '123456789012.345678901234567890'],
    [1n, 1, '0.100000000000000000'],
    [MAX_UINT256, 18, '115792089237316195423570985008687907853269984665640564039457.584007913129639935'],
  ])('(%s, %i) -> %s', (value, decimals, expected) => {
    expect(formatUnits18(value, decimals)).toBe(expected);
  });

  it('refuses decimals above 18 instead of truncating', () => {
    expect(() => formatUnits18(1n, 19)).toThrow(RangeError);
    expect(() => formatUnits18(1n, 36)).toThrow(RangeError);
  });

  it('refuses invalid decimals', () => {
    expect(() => formatUnits18(1n, -1)).toThrow(RangeError);
    expect(() => formatUnits18(1n, 1.5)).toThrow(RangeError);
    expect(() => formatUnits18(1n, Number.NaN)).toThrow(RangeError);
  });
});

describe('formatStoredUnits18 (a stored decimal string of base units)', () => {
  /** The definition it must match, result and errors: the bigint path. */
  const viaBigint = (stored: string, decimals: number) => formatUnits18(BigInt(stored), decimals);
  const outcome = (fn: () => string) => {
    try {
      return fn();
    } catch (e) {
      return `${(e as Error).name}: ${(e as Error).message}`;
    }
  };

  it('gives exactly what formatUnits18 gives for every decimals and length', () => {
    const values = [
      '0',
      '1',
      '9',
      '10',
      '21000',
      '1000000000',
      '1500000',
      String(MAX_UINT256),
      String(10n ** 18n),
      String(10n ** 18n - 1n),
    ];
    for (let len = 1; len <= 80; len++) values.push('7'.repeat(len), '1' + '0'.repeat(len - 1), String(len) + '9'.repeat(len));
    for (const v of [...values]) if (v !== '0') values.push(`-${v}`);
    for (const v of values) for (let d = 0; d <= 18; d++) expect(formatStoredUnits18(v, d), `${v} @${d}`).toBe(viaBigint(v, d));
  });

  it('matches on random amounts', () => {
    let seed = 7n;
    for (let i = 0; i < 20_000; i++) {
      seed = (seed * 6364136223846793005n + 1442695040888963407n) % (1n << 64n);
      const v = (seed * seed * seed) % (1n << BigInt(Number(seed % 257n)) || 1n);
      const d = Number(seed % 19n);
      expect(formatStoredUnits18(v.toString(), d)).toBe(formatUnits18(v, d));
    }
  });

  it('leaves anything not canonical, and bad decimals, to the bigint path with its errors', () => {
    for (const v of ['007', '-0', '00', ' 1', '1 ', '+1', '1.5', '', 'abc', '0x10', '1e5', '-', '--1']) {
      for (const d of [0, 6, 18])
        expect(
          outcome(() => formatStoredUnits18(v, d)),
          JSON.stringify(v),
        ).toBe(outcome(() => viaBigint(v, d)));
    }
    for (const d of [-1, 19, 36, 1.5, Number.NaN])
      expect(outcome(() => formatStoredUnits18('1', d))).toBe(outcome(() => viaBigint('1', d)));
    expect(() => formatStoredUnits18('1', 19)).toThrow(RangeError);
  });
});

describe('toNumber18', () => {
  it('converts to a JSON number', () => {
    expect(toNumber18(1500000n, 6)).toBe(1.5);
    expect(toNumber18(0n, 18)).toBe(0);
    expect(toNumber18(-250n, 3)).toBe(-0.25);
    expect(toNumber18(1n, 18)).toBe(1e-18);
    expect(toNumber18(10n ** 20n, 18)).toBe(100);
  });

  it('refuses decimals above 18', () => {
    expect(() => toNumber18(1n, 24)).toThrow(RangeError);
  });
});

describe('parseAmount', () => {
  it.each<[unknown, number, bigint]>([
    ['1.5', 6, 1500000n],
    ['0.000001', 6, 1n],
    ['10', 6, 10000000n],
    ['10', 0, 10n],
    ['0', 18, 0n],
    ['0.0', 18, 0n],
    ['1.000000', 6, 1000000n],
    ['1.50', 2, 150n],
    ['0.000000000000000000', 18, 0n],
    ['-0', 6, 0n],
    ['-1.5', 6, -1500000n],
    ['007', 2, 700n],
    ['0.000000000000000001', 18, 1n],
    ['123456789.123456789012345678', 18, 123456789123456789012345678n],
    ['1', 36, 10n ** 36n],
    [1.5, 6, 1500000n],
    [2, 18, 2n * 10n ** 18n],
    [0, 6, 0n],
    [-0, 6, 0n],
    [-2.25, 2, -225n],
    [0.1, 18, 10n ** 17n],
    [1e-7, 7, 1n],
    [1e-7, 18, 10n ** 11n],
    [1.5e-7, 8, 15n],
    [1e21, 0, 10n ** 21n],
    [1e21, 6, 10n ** 27n],
    [1.5e21, 0, 15n * 10n ** 20n],
    [123456789012345680000, 0, 123456789012345680000n],
    [Number.MAX_SAFE_INTEGER, 0, 9007199254740991n],
  ])('parseAmount(%j, %i) -> %s', (input, decimals, expected) => {
    expect(parseAmount(input, decimals)).toBe(expected);
  });

  it('accepts exactly 2^256 - 1 base units', () => {
    expect(parseAmount(MAX_UINT256.toString(), 0)).toBe(MAX_UINT256);
    expect(parseAmount((-MAX_UINT256).toString(), 0)).toBe(-MAX_UINT256);
  });

  it.each<[unknown, number]>([
    [undefined, 6],
    [null, 6],
    [true, 6],
    [{}, 6],
    [[], 6],
    [['1'], 6],
    [1n, 6],
    ['', 6],
    [Number.NaN, 6],
    [Number.POSITIVE_INFINITY, 6],
    [Number.NEGATIVE_INFINITY, 6],
    ['NaN', 6],
    ['Infinity', 6],
    ['1.2.3', 6],
    ['abc', 6],
    [' 1', 6],
    ['1 ', 6],
    ['+1', 6],
    ['0x10', 6],
    ['1e5', 6],
    ['1E5', 6],
    ['.5', 6],
    ['5.', 6],
    ['-', 6],
    ['--1', 6],
    ['1,5', 6],
    ['1_000', 6],
    ['١', 6], // non-ASCII digit
    ['1'.repeat(201), 0],
  ])('rejects %o with reason "format"', (input, decimals) => {
    expect(reasonOf(() => parseAmount(input, decimals))).toBe('format');
  });

  it.each<[unknown, number]>([
    ['1.5', 0],
    ['0.0000001', 6],
    ['1.55', 1],
    ['0.0000000000000000001', 18],
    ['-0.5', 0],
    [1.5, 0],
    [0.1 + 0.2, 6], // 0.30000000000000004
    [1e-7, 6],
    [5e-324, 18],
  ])('rejects %j with %i decimals with reason "precision"', (input, decimals) => {
    expect(reasonOf(() => parseAmount(input, decimals))).toBe('precision');
  });

  // docs/architecture.md: no more decimal places than the token has, trailing zeros included.
  it.each<[string, number]>([
    ['1.0000000', 6],
    ['1.500000000', 6],
    ['1.000000000000000000', 6],
    ['1.50', 1],
    ['2.000', 0],
    ['0.0', 0],
    ['-0.00', 1],
    ['0.0000000000000000000', 18],
  ])('rejects %j with %i decimals (trailing zeros count) with reason "precision"', (input, decimals) => {
    expect(reasonOf(() => parseAmount(input, decimals))).toBe('precision');
  });

  it('rejects values >= 2^256 base units with reason "format"', () => {
    expect(reasonOf(() => parseAmount((MAX_UINT256 + 1n).toString(), 0))).toBe('format');
    expect(reasonOf(() => parseAmount((-(MAX_UINT256 + 1n)).toString(), 0))).toBe('format');
    // 2^256 ~ 1.16e77: 1e60 tokens of 18 decimals is 1e78 base units.
    expect(reasonOf(() => parseAmount('1' + '0'.repeat(60), 18))).toBe('format');
    expect(reasonOf(() => parseAmount(1e60, 18))).toBe('format');
    expect(reasonOf(() => parseAmount(Number.MAX_VALUE, 0))).toBe('format');
  });

  it('throws AmountError instances with a message', () => {
    try {
      parseAmount('1.2.3', 6);
      expect.unreachable();
    } catch (err) {
      expect(err).toBeInstanceOf(AmountError);
      expect(err).toBeInstanceOf(Error);
      expect((err as AmountError).name).toBe('AmountError');
      expect((err as AmountError).message).not.toBe('');
    }
  });

  it('refuses invalid decimals with RangeError', () => {
    expect(() => parseAmount('1', -1)).toThrow(RangeError);
    expect(() => parseAmount('1', 2.5)).toThrow(RangeError);
    expect(() => parseAmount('1', 256)).toThrow(RangeError);
  });

  it('round-trips with formatUnits18', () => {
    for (const [text, decimals] of [
      ['1.5', 6],
      ['0.000001', 6],
      ['-3.141592653589793238', 18],
      ['98765', 0],
    ] as const) {
      const base = parseAmount(text, decimals);
      // formatUnits18 always writes 18 places, so it reads back at 18 decimals.
      expect(parseAmount(formatUnits18(base, decimals), 18)).toBe(base * 10n ** BigInt(18 - decimals));
    }
  });
});

describe('parseNumberText (a JSON number exactly as written)', () => {
  it.each([
    ['1.123456789012345678', 18, 1_123456789012345678n],
    ['99999999999999999999999', 18, 99999999999999999999999n * 10n ** 18n],
    ['1.5E-17', 18, 15n],
    ['2e3', 0, 2000n],
    ['1.10', 2, 110n],
    ['-0.5', 1, -5n],
  ] as const)('parseNumberText(%s, %i) -> %s', (text, decimals, expected) => {
    expect(parseNumberText(text, decimals)).toBe(expected);
  });

  it('refuses too many places and absurd exponents without big work', () => {
    expect(reasonOf(() => parseNumberText('1.0000000000000000001', 18))).toBe('precision');
    expect(reasonOf(() => parseNumberText('1e-999999999', 18))).toBe('precision');
    expect(reasonOf(() => parseNumberText('1e999999999', 18))).toBe('format');
    expect(reasonOf(() => parseNumberText('1e70', 18))).toBe('format');
    expect(reasonOf(() => parseNumberText('0x10', 18))).toBe('format');
  });
});

describe('recordNumberSources / numberText', () => {
  const parse = (text: string) => {
    const v = JSON.parse(text) as Record<string, any>;
    recordNumberSources(text, v);
    return v;
  };

  it('gives the written text of numbers a double cannot hold, at any depth', () => {
    const v = parse('{"a": 1.123456789012345678, "b": [1, 0.1000000000000000001], "c": {"d": 99999999999999999999999}, "e": 2}');
    expect(numberText(v, 'a')).toBe('1.123456789012345678');
    expect(numberText(v.b, '1')).toBe('0.1000000000000000001');
    expect(numberText(v.c, 'd')).toBe('99999999999999999999999');
    expect(numberText(v, 'e')).toBe('2');
    expect(numberText(v.b, '0')).toBe('1');
  });

  it('keeps the last of duplicate keys, as JSON.parse does, and skips strings that look like numbers', () => {
    const v = parse('{"a": 1.0000000000000000001, "s": "1.00000000000000000001,{[", "a": 3.0000000000000000003}');
    expect(numberText(v, 'a')).toBe('3.0000000000000000003');
    expect(numberText(v, 's')).toBeUndefined();
  });
});
