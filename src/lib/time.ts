/** Clock and datetime formatting. Timestamps are integer milliseconds since the epoch (UTC). */
export interface Clock {
  nowMs(): number;
}

export const systemClock: Clock = { nowMs: () => Date.now() };

const MS_PER_DAY = 86_400_000;
/** 9999-12-31 23:59:59.999 UTC: the last instant with a four-digit year. */
export const LAST_FOUR_DIGIT_YEAR_MS = 253_402_300_799_999;
/** PAD2[n] is n on two digits (0 ≤ n ≤ 99). */
const PAD2 = Array.from({ length: 100 }, (_, n) => (n < 10 ? `0${n}` : String(n)));

/**
 * `YYYY-MM-DD HH:MM:SS` in UTC, the contract's datetime shape: what
 * `new Date(ms).toISOString().slice(0, 19).replace('T', ' ')` gives, computed with integer
 * arithmetic (a list page formats thousands of these; the Date and the two intermediate strings
 * cost several times more). Instants before 1970 or after year 9999 go through Date itself.
 */
export function formatDateTime(ms: number): string {
  if (!(ms >= 0 && ms <= LAST_FOUR_DIGIT_YEAR_MS)) return new Date(ms).toISOString().slice(0, 19).replace('T', ' ');
  const days = Math.floor(ms / MS_PER_DAY);
  const secondOfDay = Math.floor((ms - days * MS_PER_DAY) / 1000);
  // Days since 1970-01-01 to the civil date (H. Hinnant's days_from_civil inverse), in eras of 400 years from 0000-03-01.
  const z = days + 719_468;
  const era = Math.floor(z / 146_097);
  const dayOfEra = z - era * 146_097;
  const yearOfEra = Math.floor(
    (dayOfEra - Math.floor(dayOfEra / 1460) + Math.floor(dayOfEra / 36_524) - Math.floor(dayOfEra / 146_096)) / 365,
  );
  const dayOfYear = dayOfEra - (365 * yearOfEra + Math.floor(yearOfEra / 4) - Math.floor(yearOfEra / 100));
  const mp = Math.floor((5 * dayOfYear + 2) / 153);
  const day = dayOfYear - Math.floor((153 * mp + 2) / 5) + 1;
  const month = mp < 10 ? mp + 3 : mp - 9;
  const year = yearOfEra + era * 400 + (month <= 2 ? 1 : 0);
  const hour = Math.floor(secondOfDay / 3600);
  const minute = Math.floor((secondOfDay - hour * 3600) / 60);
  const second = secondOfDay - hour * 3600 - minute * 60;
  return `${year}-${PAD2[month]}-${PAD2[day]} ${PAD2[hour]}:${PAD2[minute]}:${PAD2[second]}`;
}

const DATETIME = /^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}$/;

/** The instant of a `YYYY-MM-DD HH:MM:SS` UTC datetime, or null when it is not a real one of that shape. */
export function parseDateTime(text: string): number | null {
  const ms = DATETIME.test(text) ? Date.parse(`${text.replace(' ', 'T')}Z`) : Number.NaN;
  return Number.isNaN(ms) || formatDateTime(ms) !== text ? null : ms;
}

export function formatDateTimeOrNull(ms: number | null | undefined): string | null {
  return ms === null || ms === undefined ? null : formatDateTime(ms);
}

export function unixSeconds(ms: number): number {
  return Math.floor(ms / 1000);
}
