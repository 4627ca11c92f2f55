/** Display helpers: amounts stay strings (exact, never a float); datetimes in the viewer's zone with UTC kept for the title. */

/** `1.500000000000000000` → `1.5`; `0.000000000000000000` → `0`. */
export function amount(value: string): string {
  if (!value.includes('.')) return value;
  return value.replace(/0+$/, '').replace(/\.$/, '');
}

/** The API's `YYYY-MM-DD HH:MM:SS` (UTC) as the viewer's local date and time. */
export function localTime(utc: string): string {
  const d = new Date(`${utc.replace(' ', 'T')}Z`);
  return Number.isNaN(d.getTime()) ? utc : d.toLocaleString(undefined, { dateStyle: 'medium', timeStyle: 'short' });
}

export function shortHash(hash: string): string {
  return `${hash.slice(0, 10)}…${hash.slice(-8)}`;
}

/** An explorer link for a hash or an address, when the network has an explorer; null otherwise. */
export function explorerUrl(explorer: string | null | undefined, kind: 'tx' | 'address', value: string): string | null {
  if (!explorer) return null;
  return `${explorer.replace(/\/+$/, '')}/${kind}/${value}`;
}

/**
 * A fraction of the API (`0.400000000000000000`) as a share in percent, rounded down to at most two
 * places (`40`, `33.33`): exact string arithmetic, so a share never reads as paid before it is.
 */
export function percent(fraction: string): string {
  const [whole = '0', part = ''] = fraction.split('.');
  const digits = `${whole}${part.padEnd(4, '0').slice(0, 4)}`.replace(/^0+(?=\d{3})/, '');
  const shifted = `${digits.slice(0, -2)}.${digits.slice(-2)}`;
  return amount(shifted);
}
