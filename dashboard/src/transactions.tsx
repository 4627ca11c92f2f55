/**
 * A wallet's transactions: the listing, a page at a time, those of the page awaiting approval
 * above it (each with its recipient, amount and the rule that held it, as its row recorded it; `Approve` and `Reject`
 * ask in the confirm dialog first), and a chart of the amounts received and sent per day over the last 30 days per
 * token. Sums are exact (BigInt over the API's decimal strings); only bar heights are scaled to
 * numbers.
 */
import { useState } from 'preact/hooks';
import { api, type Data } from './api.js';
import { ok, PAGE, useApi } from './data.js';
import { amount as short, shortHash } from './format.js';
import { useDecision, type Decision } from './confirm.js';
import { AddressLink, Amount, Empty, Hash, Listing, Loading, Notice, Problem, StatusBadge, Time, WholeAddress } from './ui.js';
import { ExportCsv } from './export.js';

type Transaction = Data<'/api/wallet/{wallet}/transaction'>[number];

export function Transactions({ wallet, explorer }: { wallet: string; explorer: string }) {
  const [page, setPage] = useState(1);
  const [pages, setPages] = useState(1);
  // A decision reads the page afresh (its Loading shown), as turning a page does.
  const [version, setVersion] = useState(0);
  const [message, setMessage] = useState<{ error: boolean; text: string } | null>(null);
  const { data: rows, error } = useApi(
    async () => {
      const r = await api.GET('/api/wallet/{wallet}/transaction', { params: { path: { wallet }, query: { page, limit: PAGE } } });
      const listed = ok(r, 'The transactions could not be listed.').data;
      setPages(Number(r.response.headers.get('x-pagination-pages') ?? '1') || 1);
      return listed;
    },
    [wallet, page, version],
    { refreshOn: ['transaction.'], wallet },
  );
  const held = rows?.filter((t) => t.status === 'awaiting_approval') ?? [];
  return (
    <section aria-labelledby="tx-title">
      <h2 id="tx-title">Transactions</h2>
      <ExportCsv wallet={wallet} kind="transactions" />
      <Notice message={message} />
      {held.length > 0 && (
        <Held
          wallet={wallet}
          explorer={explorer}
          rows={held}
          onDecided={(m) => {
            setMessage(m);
            setVersion(version + 1);
          }}
        />
      )}
      <Listing label="Transactions" rows={rows} error={error} empty="No transactions yet.">
        <table>
          <thead>
            <tr>
              <th scope="col">Status</th>
              <th scope="col">Type</th>
              <th scope="col">Amount</th>
              <th scope="col">From</th>
              <th scope="col">To</th>
              <th scope="col">Hash</th>
              <th scope="col">Created</th>
            </tr>
          </thead>
          <tbody>
            {rows?.map((t) => (
              <tr key={t.id} data-transaction={t.id}>
                <td data-label="Status">
                  <StatusBadge status={t.status} />
                </td>
                <td data-label="Type">{t.type}</td>
                <td class="num" data-label="Amount">
                  <Amount value={t.amount} symbol={t.symbol} />
                </td>
                <td data-label="From">
                  <AddressLink address={t.from} explorer={explorer} role="from" />
                </td>
                <td data-label="To">
                  <AddressLink address={t.to} explorer={explorer} role="to" />
                </td>
                <td data-label="Hash">
                  {t.tx_hash ? <Hash hash={t.tx_hash} explorer={explorer} /> : <span class="muted">not signed</span>}
                </td>
                <td data-label="Created">
                  <Time utc={t.created_at} />
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </Listing>
      <nav class="pager" aria-label="Transaction pages">
        <button type="button" disabled={page <= 1} onClick={() => setPage(page - 1)}>
          Newer
        </button>
        <span>
          Page {page} of {pages}
        </span>
        <button type="button" disabled={page >= pages} onClick={() => setPage(page + 1)}>
          Older
        </button>
      </nav>
    </section>
  );
}

/**
 * Why the policy holds a transaction, in words, from the rule its row recorded (`held_by`): over
 * the approval threshold of the token it was set for (a contract call's may be the token its
 * calldata moves), as it was at the hold; or a contract call the policy cannot read.
 */
function heldBecause(t: Transaction, approvalAbove: Record<string, string> | null): string {
  const by = t.held_by;
  if (by === null) return guessedHeldBecause(t, approvalAbove);
  if (by.rule === 'contract_call')
    return 'A contract call the spending policy cannot read, to a contract not on the allowlist: it waits for approval.';
  return `Over the approval threshold of ${short(by.limit ?? '0')} ${by.token ?? t.symbol} (spending policy, "Approval above").`;
}

/**
 * A row held before the service recorded the rule (`held_by` null): read from the wallet's policy
 * now, over `approval_above` for its token, or a contract call the policy cannot read. A
 * threshold changed since the hold is said as such.
 */
function guessedHeldBecause(t: Transaction, approvalAbove: Record<string, string> | null): string {
  const threshold = approvalAbove?.[t.symbol];
  if (threshold !== undefined && units(t.amount) > units(threshold))
    return `Over the approval threshold of ${short(threshold)} ${t.symbol} (spending policy, "Approval above").`;
  if (t.type === 'contract')
    return 'A contract call: on a wallet with a spending policy, a call to a contract not on the allowlist waits for approval.';
  return approvalAbove === null
    ? 'Held by the spending policy.'
    : `Held by the spending policy's approval threshold when it was created (now ${threshold === undefined ? 'none' : `${short(threshold)} ${t.symbol}`}).`;
}

/** A held transaction's facts, in the list and in the confirm dialog: recipient (whole, linked), amount, token, the rule. */
function HeldFacts({ t, explorer, rule }: { t: Transaction; explorer: string; rule: string }) {
  return (
    <dl class="facts">
      <div>
        <dt>To</dt>
        <dd>
          <WholeAddress address={t.to} explorer={explorer} />
        </dd>
      </div>
      <div>
        <dt>Amount</dt>
        <dd>
          <Amount value={t.amount} symbol={t.symbol} />
        </dd>
      </div>
      <div>
        <dt>Held because</dt>
        <dd data-held-because>{rule}</dd>
      </div>
    </dl>
  );
}

/** The transactions awaiting approval: each with its recipient, amount and rule; `Approve` and `Reject` ask first. */
function Held({
  wallet,
  explorer,
  rows,
  onDecided,
}: {
  wallet: string;
  explorer: string;
  rows: Transaction[];
  onDecided: (m: { error: boolean; text: string }) => void;
}) {
  // The policy is read only for rows held before their rule was recorded (`guessedHeldBecause`).
  const unrecorded = rows.some((t) => t.held_by === null);
  const { data: approvalAbove } = useApi(
    async () =>
      unrecorded
        ? ok(await api.GET('/api/wallet/{wallet}/policy', { params: { path: { wallet } } }), 'The policy could not be read.').data
            .approval_above
        : null,
    [wallet, unrecorded],
  );
  const { decide, dialog } = useDecision(
    'Transaction',
    (id, kind) => {
      const path = { wallet, transaction: String(id) };
      return kind === 'approve'
        ? api.POST('/api/wallet/{wallet}/transaction/{transaction}/approve', { params: { path } })
        : api.POST('/api/wallet/{wallet}/transaction/{transaction}/reject', { params: { path } });
    },
    onDecided,
  );
  const ask = (t: Transaction, kind: Decision) =>
    decide(
      t.id,
      kind,
      `${kind === 'approve' ? 'Approve' : 'Reject'} ${t.type === 'contract' ? 'contract call' : 'transfer'} of ${short(t.amount)} ${t.symbol} to ${shortHash(t.to)}`,
      <>
        <HeldFacts t={t} explorer={explorer} rule={heldBecause(t, approvalAbove)} />
        <p>
          {kind === 'approve'
            ? 'It is signed and sent at once; a sent transaction cannot be called back.'
            : 'It is not sent, and its amount is free again.'}
        </p>
      </>,
    );
  return (
    <div class="held" role="region" aria-labelledby="held-title">
      <h3 id="held-title">Awaiting approval</h3>
      <ul class="plain">
        {rows.map((t) => (
          <li key={t.id} data-held={t.id}>
            <p class="held-head">
              Transaction {t.id} · <Time utc={t.created_at} />
            </p>
            <HeldFacts t={t} explorer={explorer} rule={heldBecause(t, approvalAbove)} />
            <span class="actions">
              <button type="button" onClick={() => void ask(t, 'approve')} aria-label={`Approve transaction ${t.id}`}>
                Approve
              </button>
              <button type="button" onClick={() => void ask(t, 'reject')} aria-label={`Reject transaction ${t.id}`}>
                Reject
              </button>
            </span>
          </li>
        ))}
      </ul>
      {dialog}
    </div>
  );
}

/** An API decimal string as 10^-18 units (exact). */
function units(v: string): bigint {
  const neg = v.startsWith('-');
  const [i, f = ''] = (neg ? v.slice(1) : v).split('.');
  const u = BigInt(i + f.padEnd(18, '0').slice(0, 18));
  return neg ? -u : u;
}

function decimal(u: bigint): string {
  const s = u.toString().padStart(19, '0');
  return short(`${s.slice(0, -18)}.${s.slice(-18)}`);
}

interface Day {
  day: string;
  received: bigint;
  sent: bigint;
}

/** Received (confirmed receipts) and sent (confirmed transfers and calls) per UTC day and token, the last 30 days. */
function perDay(rows: Transaction[], nowMs: number): Map<string, Day[]> {
  const days: string[] = [];
  for (let i = 29; i >= 0; i--) days.push(new Date(nowMs - i * 86_400_000).toISOString().slice(0, 10));
  const out = new Map<string, Day[]>();
  for (const t of rows) {
    if (t.status !== 'confirmed') continue;
    const day = String(t.created_at).slice(0, 10);
    const i = days.indexOf(day);
    if (i < 0) continue;
    if (!out.has(t.symbol))
      out.set(
        t.symbol,
        days.map((d) => ({ day: d, received: 0n, sent: 0n })),
      );
    const slot = out.get(t.symbol)![i];
    if (t.type === 'receipt') slot.received += units(t.amount);
    else slot.sent += units(t.amount);
  }
  return out;
}

function Bars({ symbol, days }: { symbol: string; days: Day[] }) {
  const max = days.reduce((m, d) => (d.received > m ? d.received : d.sent > m ? d.sent : m), 1n);
  const h = (v: bigint) => Number((v * 1000n) / max) / 10; // percent of the chart's height
  const total = (k: 'received' | 'sent') => decimal(days.reduce((s, d) => s + d[k], 0n));
  return (
    <figure class="chart" data-chart={symbol}>
      <svg
        viewBox="0 0 300 110"
        role="img"
        aria-label={`${symbol}: received ${total('received')}, sent ${total('sent')} in the last 30 days`}
      >
        {days.map((d, i) => (
          <g key={d.day}>
            <rect x={i * 10 + 1} y={100 - h(d.received)} width="4" height={h(d.received)} fill="#15803d">
              <title>{`${d.day}: received ${decimal(d.received)} ${symbol}`}</title>
            </rect>
            <rect x={i * 10 + 5} y={100 - h(d.sent)} width="4" height={h(d.sent)} fill="#4338ca">
              <title>{`${d.day}: sent ${decimal(d.sent)} ${symbol}`}</title>
            </rect>
          </g>
        ))}
        <line x1="0" y1="100.5" x2="300" y2="100.5" stroke="#94a3b8" />
      </svg>
      <figcaption>
        {symbol}: received {total('received')}, sent {total('sent')} (green received, blue sent; per UTC day, last 30 days)
      </figcaption>
    </figure>
  );
}

/** The chart's rows read at once: pages are read, newest first, only until one reaches past the 30 days. */
const CHART_PAGE = 100;

export function Chart({ wallet }: { wallet: string }) {
  const { data: series, error } = useApi(
    async () => {
      const since = new Date(Date.now() - 30 * 86_400_000).toISOString().slice(0, 10);
      const rows: Transaction[] = [];
      for (let page = 1; ; page++) {
        const query = { page, limit: CHART_PAGE };
        const r = await api.GET('/api/wallet/{wallet}/transaction', { params: { path: { wallet }, query } });
        const listed = ok(r, 'The transactions could not be read.').data;
        rows.push(...listed);
        if (listed.length < CHART_PAGE || String(listed.at(-1)!.created_at).slice(0, 10) < since) break;
      }
      return perDay(rows, Date.now());
    },
    [wallet],
    { refreshOn: ['transaction.'], wallet },
  );
  return (
    <section aria-labelledby="chart-title">
      <h2 id="chart-title">Received and sent, last 30 days</h2>
      {error ? (
        <Problem text={error} />
      ) : !series ? (
        <Loading what="the chart" />
      ) : series.size === 0 ? (
        <Empty text="Nothing received or sent in the last 30 days." />
      ) : (
        [...series].map(([symbol, days]) => <Bars key={symbol} symbol={symbol} days={days} />)
      )}
    </section>
  );
}
