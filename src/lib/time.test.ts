import { describe, expect, it } from 'vitest';
import { formatDateTime, formatDateTimeOrNull } from './time.js';

/** The definition the fast formatter must match. */
const viaDate = (ms: number) => new Date(ms).toISOString().slice(0, 19).replace('T', ' ');

describe('formatDateTime', () => {
  it('formats known instants in UTC', () => {
    expect(formatDateTime(0)).toBe('1970-01-01 00:00:00');
    expect(formatDateTime(999)).toBe('1970-01-01 00:00:00');
    expect(formatDateTime(951_782_400_000)).toBe('2000-02-29 00:00:00');
    expect(formatDateTime(1_700_000_000_123)).toBe('2023-11-14 22:13:20');
    expect(formatDateTime(253_402_300_799_999)).toBe('9999-12-31 23:59:59');
  });

  it('matches Date#toISOString on every boundary and on random instants', () => {
    const samples: number[] = [];
    // Around the start and end of every month from 1970 to 2110, and leap days of century years.
    for (let y = 1970; y <= 2110; y++) {
      for (let m = 0; m < 12; m++) {
        const start = Date.UTC(y, m, 1);
        samples.push(start, start - 1, start + 1, start + 86_399_999, start - 1000, start + 1000);
      }
    }
    for (const y of [2000, 2100, 2400, 9999]) samples.push(Date.UTC(y, 1, 28, 23, 59, 59, 999), Date.UTC(y, 1, 29), Date.UTC(y, 2, 1) - 1);
    let seed = 12345;
    const next = () => (seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31) / 2 ** 31;
    for (let i = 0; i < 20_000; i++) samples.push(Math.floor(next() * 253_402_300_800_000));
    for (let i = 0; i < 5_000; i++) samples.push(Math.floor(next() * 4_102_444_800_000) + next());
    for (const ms of samples) expect(formatDateTime(ms), String(ms)).toBe(viaDate(ms));
  });

  it('falls back to Date outside 1970..9999, including its errors', () => {
    for (const ms of [-1, -86_400_001, -62_135_596_800_000, 253_402_300_800_000, 8.64e15]) expect(formatDateTime(ms)).toBe(viaDate(ms));
    expect(() => formatDateTime(Number.NaN)).toThrow(RangeError);
    expect(() => formatDateTime(8.64e15 + 1)).toThrow(RangeError);
  });

  it('formatDateTimeOrNull passes null and undefined through', () => {
    expect(formatDateTimeOrNull(null)).toBeNull();
    expect(formatDateTimeOrNull(undefined)).toBeNull();
    expect(formatDateTimeOrNull(0)).toBe('1970-01-01 00:00:00');
  });
});
