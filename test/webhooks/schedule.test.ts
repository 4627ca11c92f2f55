/** The retry schedule (jitter, Retry-After, 410) and the Retry-After parser, as pure functions. */
import { describe, expect, it } from 'vitest';
import { JITTER, jittered, nextAfterFailure } from '../../src/workers/deliveries/schedule.js';
import { parseRetryAfter } from '../../src/modules/webhooks/webhooks.sender.js';

const NOW = 1_750_000_000_000;
const base = { statusCode: 500, retryAfterMs: null, retryDelaysS: [60, 300, 900], nowMs: NOW };

describe('retry schedule', () => {
  it('keeps every jittered delay within ±10% and uses the whole range', () => {
    expect(JITTER).toBe(0.1);
    expect(jittered(60, () => 0)).toBe(54_000);
    expect(jittered(60, () => 0.5)).toBe(60_000);
    expect(jittered(60, () => 0.999999)).toBe(66_000);
    const samples = Array.from({ length: 10_000 }, () => jittered(300));
    for (const ms of samples) {
      expect(ms).toBeGreaterThanOrEqual(270_000);
      expect(ms).toBeLessThanOrEqual(330_000);
    }
    expect(Math.min(...samples)).toBeLessThan(273_000);
    expect(Math.max(...samples)).toBeGreaterThan(327_000);
    expect(new Set(samples).size).toBeGreaterThan(1000);
  });

  it('retries after the jittered delay of the attempt, then fails when the schedule is used up', () => {
    for (const [attempts, delayS] of [
      [1, 60],
      [2, 300],
      [3, 900],
    ] as const) {
      const step = nextAfterFailure({ ...base, attempts });
      expect(step.status).toBe('retrying');
      expect(step.attempts).toBe(attempts);
      expect(step.nextAttemptAt! - NOW).toBeGreaterThanOrEqual(delayS * 900);
      expect(step.nextAttemptAt! - NOW).toBeLessThanOrEqual(delayS * 1100);
    }
    expect(nextAfterFailure({ ...base, attempts: 4 })).toEqual({ status: 'failed', attempts: 4, nextAttemptAt: null });
  });

  it('ends the delivery at once on 410 Gone', () => {
    expect(nextAfterFailure({ ...base, attempts: 1, statusCode: 410 })).toEqual({ status: 'failed', attempts: 1, nextAttemptAt: null });
  });

  it('holds the next attempt until Retry-After on 429 and 503, capped at the largest delay', () => {
    const low = () => 0; // jitter at its lowest: 54 s for the first retry
    for (const statusCode of [429, 503]) {
      expect(nextAfterFailure({ ...base, attempts: 1, statusCode, retryAfterMs: 120_000, random: low }).nextAttemptAt).toBe(NOW + 120_000);
      // Sooner than the schedule: the schedule wins.
      expect(nextAfterFailure({ ...base, attempts: 1, statusCode, retryAfterMs: 2_000, random: low }).nextAttemptAt).toBe(NOW + 54_000);
      // Beyond the largest delay (900 s): capped there.
      expect(nextAfterFailure({ ...base, attempts: 1, statusCode, retryAfterMs: 86_400_000, random: low }).nextAttemptAt).toBe(
        NOW + 900_000,
      );
    }
    // Another status: Retry-After is not honoured.
    expect(nextAfterFailure({ ...base, attempts: 1, statusCode: 500, retryAfterMs: 120_000, random: low }).nextAttemptAt).toBe(
      NOW + 54_000,
    );
    // No retries left: failed whatever Retry-After says.
    expect(nextAfterFailure({ ...base, attempts: 4, statusCode: 503, retryAfterMs: 1000 }).status).toBe('failed');
  });

  it('reads Retry-After as seconds or an HTTP date', () => {
    expect(parseRetryAfter('2', NOW)).toBe(2000);
    expect(parseRetryAfter(' 120 ', NOW)).toBe(120_000);
    expect(parseRetryAfter(new Date(NOW + 90_000).toUTCString(), NOW)).toBe(90_000);
    expect(parseRetryAfter(new Date(NOW - 90_000).toUTCString(), NOW)).toBe(0);
    expect(parseRetryAfter(['5', '9'], NOW)).toBe(5000);
    for (const bad of [undefined, '', '-1', '1.5', 'soon', '2025-01-01']) expect(parseRetryAfter(bad, NOW), String(bad)).toBeNull();
  });
});
