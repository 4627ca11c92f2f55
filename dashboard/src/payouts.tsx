/**
 * A wallet's payouts: each opens its own page (payout.tsx) with every item; one awaiting approval
 * lists its recipients here, and `Approve` and `Reject` ask in the confirm dialog first. The answer
 * to an action (or its error, in words) is shown, and the list is read again.
 */
import { useState } from 'preact/hooks';
import { api } from './api.js';
import { ok, useApi } from './data.js';
import { Empty, Loading, Notice, Problem, StatusBadge, Time } from './ui.js';
import { ExportCsv } from './export.js';
import { DecisionButtons, payoutSummary, Recipients, usePayoutDecision } from './payout.js';

/** `explorer`: the network's explorer, linking the recipients (none: shown unlinked). */
export function Payouts({ wallet, explorer = '' }: { wallet: string; explorer?: string }) {
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
  const [message, setMessage] = useState<{ error: boolean; text: string } | null>(null);
  const { decide, dialog } = usePayoutDecision(wallet, explorer, (m) => {
    setMessage(m);
    reload();
  });
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
              <StatusBadge status={p.status} /> <a href={`#/wallet/${wallet}/payout/${p.id}`}>Payout {p.id}</a>: {payoutSummary(p)} ·{' '}
              <Time utc={p.created_at} />
              {p.status === 'awaiting_approval' && (
                <>
                  <Recipients p={p} explorer={explorer} />
                  <DecisionButtons p={p} decide={decide} />
                </>
              )}
            </li>
          ))}
        </ul>
      )}
      {dialog}
    </section>
  );
}
