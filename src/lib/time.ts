/** Clock and datetime formatting. Timestamps are integer milliseconds since the epoch (UTC). */
export interface Clock {
  nowMs(): number;
}

export const systemClock: Clock = { nowMs: () => Date.now() };

/** `YYYY-MM-DD HH:MM:SS` in UTC, the contract's datetime shape. */
export function formatDateTime(ms: number): string {
  return new Date(ms).toISOString().slice(0, 19).replace('T', ' ');
}

export function formatDateTimeOrNull(ms: number | null | undefined): string | null {
  return ms === null || ms === undefined ? null : formatDateTime(ms);
}

export function unixSeconds(ms: number): number {
  return Math.floor(ms / 1000);
}
