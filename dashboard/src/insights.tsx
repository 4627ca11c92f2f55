/**
 * Views for checking the books: a wallet's reconciliation (differences, unswept funds, `Accept`),
 * a chart of the amounts received and sent per day over the last 30 days per token, and the
 * events feed. Sums are exact (BigInt over the API's decimal strings); only bar heights are
 * scaled to numbers.
 */
import { useEffect, useState } from 'preact/hooks';
import { api, failure, type Data } from './api.js';
import { amount as short } from './format.js';
import { Amount, Empty, Loading, Problem, StatusBadge, Time, Notice } from './ui.js';

const zero = (v: string) => /^-?0(\.0+)?$/.test(v);

type Report = Data<'/api/wallet/{wallet}/reconciliation'>;
type Transaction = Data<'/api/wallet/{wallet}/transaction'>[number];
type EventRow = Data<'/api/events'>[number];

export function Reconciliation({ wallet }: { wallet: string }) {
  const [report, setReport] = useState<Report | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [message, setMessage] = useState<string | null>(null);
  const [note, setNote] = useState('');
  const [version, setVersion] = useState(0);
  useEffect(() => {
    api
      .GET('/api/wallet/{wallet}/reconciliation', { params: { path: { wallet } } })
      .then((r) => (r.data ? setReport(r.data.data) : setError(failure(r.error, 'The reconciliation could not be run.'))))
      .catch(() => setError('The service could not be reached.'));
  }, [wallet, version]);
  const accept = async (e: Event) => {
    e.preventDefault();
    const r = await api.POST('/api/wallet/{wallet}/reconciliation/accept', { params: { path: { wallet } }, body: { note } });
    setMessage(r.data ? 'The differences were accepted as adjustments.' : failure(r.error, 'The differences could not be accepted.'));
    setNote('');
    setVersion(version + 1);
  };
  const rows = report
    ? report.addresses.flatMap((a) => a.tokens.filter((t) => !zero(t.difference)).map((t) => ({ ...t, address: a.address, kind: a.kind })))
    : [];
  return (
    <section aria-labelledby="rec-title">
      <h2 id="rec-title">Reconciliation</h2>
      <Notice message={message} />
      {error ? (
        <Problem text={error} />
      ) : !report ? (
        <Loading what="the reconciliation" />
      ) : (
        <>
          <p data-reconciliation-ok={String(report.ok)}>
            <StatusBadge status={report.ok ? 'confirmed' : 'failed'} /> {report.ok ? 'Every wei accounted for' : 'Differences found'} at
            block {report.block_number}.
          </p>
          {rows.length > 0 && (
            <ul class="plain">
              {rows.map((r) => (
                <li key={`${r.address}-${r.token}`} data-difference={r.token}>
                  {r.kind} <span class="mono">{r.address}</span>: difference <Amount value={r.difference} symbol={r.token} /> (chain{' '}
                  <Amount value={r.chain_balance} />, recorded change <Amount value={r.recorded_change} />)
                </li>
              ))}
            </ul>
          )}
          {report.unswept.length > 0 && (
            <ul class="plain">
              {report.unswept.map((u) => (
                <li key={`${u.address}-${u.token}`}>
                  Unswept <Amount value={u.amount} symbol={u.token} /> on charge {u.charge_id}: {u.reason}
                </li>
              ))}
            </ul>
          )}
          {rows.length > 0 && (
            <form class="inline-form" onSubmit={(e) => void accept(e)} aria-label="Accept the differences">
              <label for="rec-note">Note for the adjustment</label>
              <input id="rec-note" required maxLength={500} value={note} onInput={(e) => setNote((e.target as HTMLInputElement).value)} />
              <button type="submit" class="primary">
                Accept
              </button>
            </form>
          )}
        </>
      )}
    </section>
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

export function Chart({ wallet }: { wallet: string }) {
  const [series, setSeries] = useState<Map<string, Day[]> | null>(null);
  const [error, setError] = useState<string | null>(null);
  useEffect(() => {
    api
      .GET('/api/wallet/{wallet}/transaction', { params: { path: { wallet }, query: { limit: 1000 } } })
      .then((r) =>
        r.data ? setSeries(perDay(r.data.data, Date.now())) : setError(failure(r.error, 'The transactions could not be read.')),
      )
      .catch(() => setError('The service could not be reached.'));
  }, [wallet]);
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

export function Events() {
  const [rows, setRows] = useState<EventRow[] | null>(null);
  const [error, setError] = useState<string | null>(null);
  useEffect(() => {
    (async () => {
      // Oldest first from a cursor: read to the end, show the newest 50.
      let after = 0;
      const all: EventRow[] = [];
      for (let i = 0; i < 20; i++) {
        const r = await api.GET('/api/events', { params: { query: { after, limit: 1000 } } });
        if (!r.data) return setError(failure(r.error, 'The events could not be read.'));
        all.push(...r.data.data);
        if (r.data.data.length < 1000) break;
        after = Number(r.response.headers.get('x-next-cursor') ?? after);
      }
      setRows(all.slice(-50).reverse());
    })().catch(() => setError('The service could not be reached.'));
  }, []);
  return (
    <section aria-labelledby="events-title" class="card">
      <h1 id="events-title">Events</h1>
      {error ? (
        <Problem text={error} />
      ) : !rows ? (
        <Loading what="events" />
      ) : rows.length === 0 ? (
        <Empty text="No events yet." />
      ) : (
        <ul class="plain">
          {rows.map((e) => (
            <li key={e.id} data-event={e.id}>
              <strong>{e.event}</strong> · wallet {e.wallet_id} · <Time utc={e.created_at} />
              <pre class="mono data" tabIndex={0} aria-label={`Data of event ${e.id}`}>
                {JSON.stringify(e.data, null, 1)}
              </pre>
            </li>
          ))}
        </ul>
      )}
    </section>
  );
}
