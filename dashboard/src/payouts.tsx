/**
 * A wallet's payouts (`Approve`, `Reject` for one awaiting approval): the answer to an action (or
 * its error, in words) is shown, and the list is read again.
 */
import { useState } from 'preact/hooks';
import { api, failure } from './api.js';
import { ok, useApi } from './data.js';
import { Amount, Empty, Loading, Notice, Problem, StatusBadge, Time } from './ui.js';
import { ExportCsv } from './export.js';

export function Payouts({ wallet }: { wallet: string }) {
  const {
    data: payouts,
    error,
    reload,
  } = useApi(
    async () =>
      ok(
        await api.GET('/api/wallet/{wallet}/payout', { params: { path: { wallet }, query: { limit: 20 } } }),
        'The payouts could not be listed.',
      ).data,
    [wallet],
  );
  const [message, setMessage] = useState<string | null>(null);
  const decide = async (id: number, kind: 'approve' | 'reject') => {
    const path = { wallet, payout: String(id) };
    const r =
      kind === 'approve'
        ? await api.POST('/api/wallet/{wallet}/payout/{payout}/approve', { params: { path } })
        : await api.POST('/api/wallet/{wallet}/payout/{payout}/reject', { params: { path } });
    setMessage(
      r.data
        ? `Payout ${id} ${kind === 'approve' ? 'approved' : 'rejected'}.`
        : failure(r.error, `The payout could not be ${kind === 'approve' ? 'approved' : 'rejected'}.`),
    );
    reload();
  };
  return (
    <section aria-labelledby="payouts-title">
      <h2 id="payouts-title">Payouts</h2>
      <ExportCsv wallet={wallet} kind="payouts" />
      <Notice message={message} />
      {error ? (
        <Problem text={error} />
      ) : !payouts ? (
        <Loading what="payouts" />
      ) : payouts.length === 0 ? (
        <Empty text="No payouts yet." />
      ) : (
        <ul class="plain">
          {payouts.map((p) => (
            <li key={p.id} data-payout={p.id}>
              <StatusBadge status={p.status} /> Payout {p.id}: <Amount value={p.total} symbol={p.token} /> to {p.items.length}{' '}
              {p.items.length === 1 ? 'recipient' : 'recipients'} · <Time utc={p.created_at} />
              {p.status === 'awaiting_approval' && (
                <span class="actions">
                  <button type="button" onClick={() => void decide(p.id, 'approve')} aria-label={`Approve payout ${p.id}`}>
                    Approve
                  </button>
                  <button type="button" onClick={() => void decide(p.id, 'reject')} aria-label={`Reject payout ${p.id}`}>
                    Reject
                  </button>
                </span>
              )}
            </li>
          ))}
        </ul>
      )}
    </section>
  );
}
