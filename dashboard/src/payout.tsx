/**
 * One payout (#/wallet/{id}/payout/{payout}): every item with its recipient, amount, status,
 * transaction hash and why it failed; `Approve` and `Reject` while it awaits approval, each asked
 * in the confirm dialog with its recipients listed. Read again every few seconds while it is being
 * sent, so each item's status and hash appear as they come. The decision and the recipients list
 * are shared with the wallet's payouts listing (payouts.tsx).
 */
import { useEffect, useState } from 'preact/hooks';
import { api, type Data } from './api.js';
import { ok, useApi } from './data.js';
import { amount as short } from './format.js';
import { useDecision, type Decision } from './confirm.js';
import { Amount, Hash, Listing, Loading, Notice, Problem, StatusBadge, Time, WholeAddress } from './ui.js';

export type Payout = Data<'/api/wallet/{wallet}/payout/{payout}'>;

/** How often a payout being sent is read again. */
const FOLLOW_MS = 2000;

/** "1.1 ETH to 2 recipients": what a payout sends, as the confirm button and the listing say it. */
export function payoutSummary(p: Payout): string {
  return `${short(p.total)} ${p.token} to ${p.items.length} ${p.items.length === 1 ? 'recipient' : 'recipients'}`;
}

/** The recipients of a payout and what each receives. */
export function Recipients({ p, explorer }: { p: Payout; explorer: string }) {
  return (
    <ol class="recipients" aria-label={`Recipients of payout ${p.id}`}>
      {p.items.map((i) => (
        <li key={i.id} data-item={i.id}>
          <WholeAddress address={i.address} explorer={explorer} /> <Amount value={i.amount} symbol={p.token} />
          {i.reference ? <span class="muted"> · {i.reference}</span> : null}
        </li>
      ))}
    </ol>
  );
}

type Message = { error: boolean; text: string };

/** Approve or reject a payout awaiting approval, asked first in the confirm dialog (its recipients listed); render `dialog`. */
export function usePayoutDecision(wallet: string, explorer: string, onDecided: (m: Message) => void) {
  const { decide, dialog } = useDecision(
    'Payout',
    (id, kind) => {
      const path = { wallet, payout: String(id) };
      return kind === 'approve'
        ? api.POST('/api/wallet/{wallet}/payout/{payout}/approve', { params: { path } })
        : api.POST('/api/wallet/{wallet}/payout/{payout}/reject', { params: { path } });
    },
    onDecided,
  );
  const ask = (p: Payout, kind: Decision) =>
    decide(
      p.id,
      kind,
      kind === 'approve' ? `Approve ${payoutSummary(p)}` : `Reject payout of ${payoutSummary(p)}`,
      <>
        <Recipients p={p} explorer={explorer} />
        <p>
          {kind === 'approve'
            ? 'Each recipient is sent their amount at once; a sent transfer cannot be called back.'
            : 'Nothing is sent to any recipient, and the total is free again.'}
        </p>
      </>,
    );
  return { decide: ask, dialog };
}

/** `Approve` and `Reject` of a payout awaiting approval. */
export function DecisionButtons({ p, decide }: { p: Payout; decide: (p: Payout, kind: Decision) => Promise<void> }) {
  return (
    <span class="actions">
      <button type="button" onClick={() => void decide(p, 'approve')} aria-label={`Approve payout ${p.id}`}>
        Approve
      </button>
      <button type="button" onClick={() => void decide(p, 'reject')} aria-label={`Reject payout ${p.id}`}>
        Reject
      </button>
    </span>
  );
}

function Items({ p, explorer }: { p: Payout; explorer: string }) {
  return (
    <Listing label="Payout items" rows={p.items} error={null} empty="No items.">
      <table>
        <thead>
          <tr>
            <th scope="col">Recipient</th>
            <th scope="col">Amount</th>
            <th scope="col">Status</th>
            <th scope="col">Hash</th>
            <th scope="col">Reference</th>
          </tr>
        </thead>
        <tbody>
          {p.items.map((i) => (
            <tr key={i.id} data-item={i.id}>
              <td data-label="Recipient">
                <WholeAddress address={i.address} explorer={explorer} />
              </td>
              <td class="num" data-label="Amount">
                <Amount value={i.amount} symbol={p.token} />
              </td>
              <td data-label="Status">
                <StatusBadge status={i.status} />
                {i.failure_reason && <span class="muted"> {(i.error ?? i.failure_reason).replace(/_/g, ' ')}</span>}
              </td>
              <td data-label="Hash">{i.tx_hash ? <Hash hash={i.tx_hash} explorer={explorer} /> : <span class="muted">not sent</span>}</td>
              <td data-label="Reference">{i.reference ?? <span class="muted">none</span>}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </Listing>
  );
}

export function PayoutOf({ wallet, payout }: { wallet: string; payout: string }) {
  const { data, error, reload } = useApi(
    async () => {
      const [w, p] = await Promise.all([
        api.GET('/api/wallet/{wallet}', { params: { path: { wallet } } }),
        api.GET('/api/wallet/{wallet}/payout/{payout}', { params: { path: { wallet, payout } } }),
      ]);
      return {
        explorer: ok(w, 'The wallet could not be read.').data.network.block_explorer ?? '',
        p: ok(p, 'The payout could not be read.').data,
      };
    },
    [wallet, payout],
    { refreshOn: ['transaction.'], wallet },
  );
  const [message, setMessage] = useState<Message | null>(null);
  const { decide, dialog } = usePayoutDecision(wallet, data?.explorer ?? '', (m) => {
    setMessage(m);
    reload();
  });
  const status = data?.p.status;
  useEffect(() => {
    if (status !== 'processing') return;
    const timer = setTimeout(reload, FOLLOW_MS);
    return () => clearTimeout(timer);
  }, [data]);
  if (error) return <Problem text={error} />;
  if (!data) return <Loading what="the payout" />;
  const { p, explorer } = data;
  return (
    <section aria-labelledby="payout-title" class="card">
      <p>
        <a href={`#/wallet/${wallet}`}>← Wallet</a>
      </p>
      <h1 id="payout-title">Payout {p.id}</h1>
      <p>
        <StatusBadge status={p.status} /> {payoutSummary(p)} · created <Time utc={p.created_at} />
        {p.completed_at && (
          <>
            {' '}
            · done <Time utc={p.completed_at} />
          </>
        )}
      </p>
      <Notice message={message} />
      {p.status === 'awaiting_approval' && <DecisionButtons p={p} decide={decide} />}
      <h2>Items</h2>
      <Items p={p} explorer={explorer} />
      {dialog}
    </section>
  );
}
