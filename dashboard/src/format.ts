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
