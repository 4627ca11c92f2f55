/**
 * A wallet's reconciliation: the chain's balances against the recorded changes, the differences
 * and unswept funds, and `Accept` (the differences recorded as adjustments, with a note).
 */
import { useState } from 'preact/hooks';
import { api, failure } from './api.js';
import { ok, useApi } from './data.js';
import { Amount, Loading, Notice, Problem, StatusBadge } from './ui.js';

const zero = (v: string) => /^-?0(\.0+)?$/.test(v);

export function Reconciliation({ wallet }: { wallet: string }) {
  const {
    data: report,
    error,
    reload,
  } = useApi(async () => {
    const r = await api.GET('/api/wallet/{wallet}/reconciliation', { params: { path: { wallet } } });
    return ok(r, 'The reconciliation could not be run.').data;
  }, [wallet]);
  const [message, setMessage] = useState<string | null>(null);
  const [note, setNote] = useState('');
  const accept = async (e: Event) => {
    e.preventDefault();
    const r = await api.POST('/api/wallet/{wallet}/reconciliation/accept', { params: { path: { wallet } }, body: { note } });
    setMessage(r.data ? 'The differences were accepted as adjustments.' : failure(r.error, 'The differences could not be accepted.'));
    setNote('');
    reload();
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
