/** Small pieces every view uses: loading, empty and error states, listings, exact amounts, times, hashes, statuses. */
import type { ComponentChildren } from 'preact';
import { amount, explorerUrl, localTime, shortHash } from './format.js';

export function Loading({ what }: { what: string }) {
  return (
    <p class="state" role="status">
      Loading {what}…
    </p>
  );
}

export function Empty({ text }: { text: string }) {
  return <p class="state">{text}</p>;
}

export function Problem({ text }: { text: string }) {
  return (
    <p class="error" role="alert">
      {text}
    </p>
  );
}

/** Loading, error and empty states around a table that scrolls sideways on a phone. */
export function Listing({
  label,
  rows,
  error,
  empty,
  children,
}: {
  label: string;
  rows: unknown[] | null;
  error: string | null;
  empty: string;
  children: ComponentChildren;
}) {
  if (error) return <Problem text={error} />;
  if (!rows) return <Loading what={label.toLowerCase()} />;
  if (rows.length === 0) return <Empty text={empty} />;
  return (
    <div class="table-wrap" tabIndex={0} role="region" aria-label={`${label}, scrollable`}>
      {children}
    </div>
  );
}

/** An exact amount (the API's decimal string, trailing zeros dropped), never a float. */
export function Amount({ value, symbol }: { value: string; symbol?: string }) {
  return (
    <span class="amount" title={value}>
      {amount(value)}
      {symbol ? ` ${symbol}` : ''}
    </span>
  );
}

/** The viewer's local time; the UTC time the API gave on hover. */
export function Time({ utc }: { utc: string }) {
  return (
    <time dateTime={`${utc.replace(' ', 'T')}Z`} title={`${utc} UTC`}>
      {localTime(utc)}
    </time>
  );
}

/** A transaction hash, linked to the network's explorer when it has one. */
export function Hash({ hash, explorer }: { hash: string; explorer: string }) {
  const url = explorerUrl(explorer, 'tx', hash);
  const text = <span class="mono">{shortHash(hash)}</span>;
  return url ? (
    <a
      href={url}
      target="_blank"
      rel="noopener noreferrer"
      title={hash}
      aria-label={`${shortHash(hash)}: transaction ${hash} on the explorer`}
    >
      {text}
    </a>
  ) : (
    <span title={hash} data-hash={hash}>
      {text}
    </span>
  );
}

/** An address, shortened, linked to the network's explorer when it has one; the whole address in its title. */
export function AddressLink({ address, explorer, role }: { address: string; explorer: string; role: 'from' | 'to' }) {
  const url = explorerUrl(explorer, 'address', address);
  const text = <span class="mono">{shortHash(address)}</span>;
  return url ? (
    <a
      href={url}
      target="_blank"
      rel="noopener noreferrer"
      title={address}
      aria-label={`${shortHash(address)}: ${role} ${address} on the explorer`}
    >
      {text}
    </a>
  ) : (
    <span title={address} data-address={address}>
      {text}
    </span>
  );
}

export function StatusBadge({ status }: { status: string }) {
  return <span class={`badge badge-${status}`}>{status.replace(/_/g, ' ')}</span>;
}

/** The answer to an action: a status in words, or an alert when it failed. */
export function Notice({ message }: { message: { error: boolean; text: string } | string | null }) {
  if (message === null) return null;
  const m = typeof message === 'string' ? { error: false, text: message } : message;
  return (
    <p class={m.error ? 'error' : 'notice'} role={m.error ? 'alert' : 'status'}>
      {m.text}
    </p>
  );
}

/** An address in full (a recipient to check before approving), linked to the network's explorer when it has one. */
export function WholeAddress({ address, explorer }: { address: string; explorer: string }) {
  const url = explorerUrl(explorer, 'address', address);
  return (
    <span class="mono whole" data-recipient={address}>
      {url ? (
        <a href={url} target="_blank" rel="noopener noreferrer">
          {address}
        </a>
      ) : (
        address
      )}
    </span>
  );
}
