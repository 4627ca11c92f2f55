/**
 * A wallet's charges: the listing, and a charge's own view with its payments and refunds
 * (`Refund`: an amount, to an address or as a claim link for the payer; the charge is read again).
 */
import { useState } from 'preact/hooks';
import { api, failure } from './api.js';
import { ok, PAGE, useApi } from './data.js';
import { amount as short } from './format.js';
import { Amount, Empty, Hash, Listing, Loading, Notice, Problem, StatusBadge, Time } from './ui.js';
import { ExportCsv } from './export.js';

export function Charges({ wallet }: { wallet: string }) {
  const { data: rows, error } = useApi(
    async () =>
      ok(
        await api.GET('/api/wallet/{wallet}/charge', { params: { path: { wallet }, query: { limit: PAGE } } }),
        'The charges could not be listed.',
      ).data,
    [wallet],
    { refreshOn: ['charge.'], wallet },
  );
  return (
    <section aria-labelledby="charges-title">
      <h2 id="charges-title">Charges</h2>
      <ExportCsv wallet={wallet} kind="charges" />
      <Listing label="Charges" rows={rows} error={error} empty="No charges yet.">
        <table>
          <thead>
            <tr>
              <th scope="col">Status</th>
              <th scope="col">Amount</th>
              <th scope="col">Paid</th>
              <th scope="col">Payments</th>
              <th scope="col">Refunds</th>
              <th scope="col">Created</th>
            </tr>
          </thead>
          <tbody>
            {rows?.map((c) => (
              <tr key={c.id} data-charge={c.id}>
                <td data-label="Status">
                  <a href={`#/wallet/${wallet}/charge/${c.id}`} aria-label={`Charge ${c.id}: ${c.status}`}>
                    <StatusBadge status={c.status} />
                  </a>
                </td>
                <td class="num" data-label="Amount">
                  <Amount value={c.amount} symbol={c.token} />
                </td>
                <td class="num" data-label="Paid">
                  <Amount value={c.paid_amount} symbol={c.token} />
                </td>
                <td data-label="Payments">{c.payments.length}</td>
                <td data-label="Refunds">{c.refunds.length}</td>
                <td data-label="Created">
                  <Time utc={c.created_at} />
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </Listing>
    </section>
  );
}

/** A charge's view needs its wallet's explorer for the payment links. */
export function ChargeOf({ wallet, charge }: { wallet: string; charge: string }) {
  // Without it (the wallet unread, the service unreachable) the hashes are shown unlinked.
  const { data: explorer, error } = useApi(
    async () => (await api.GET('/api/wallet/{wallet}', { params: { path: { wallet } } })).data?.data.network.block_explorer ?? '',
    [wallet],
  );
  return explorer === null && error === null ? (
    <Loading what="the charge" />
  ) : (
    <ChargeDetail wallet={wallet} charge={charge} explorer={explorer ?? ''} />
  );
}

function ChargeDetail({ wallet, charge, explorer }: { wallet: string; charge: string; explorer: string }) {
  const {
    data: c,
    error,
    reload,
  } = useApi(
    async () =>
      ok(
        await api.GET('/api/wallet/{wallet}/charge/show/{charge}', { params: { path: { wallet, charge } } }),
        'The charge could not be read.',
      ).data,
    [wallet, charge],
    { refreshOn: ['charge.', 'transaction.'], wallet },
  );
  if (error) return <Problem text={error} />;
  if (!c) return <Loading what="the charge" />;
  return (
    <div class="stack">
      <section class="card" aria-labelledby="charge-title">
        <p>
          <a href={`#/wallet/${wallet}`}>← Wallet</a>
        </p>
        <h1 id="charge-title">Charge {c.id}</h1>
        <p>
          <StatusBadge status={c.status} /> <Amount value={c.paid_amount} symbol={c.token} /> paid of{' '}
          <Amount value={c.amount} symbol={c.token} />
        </p>
        <p>
          <span class="mono address">{c.address}</span>{' '}
          <span
            class="badge"
            data-deposit-kind={c.deposit_kind}
            title={
              c.deposit_kind === 'keyless'
                ? 'No key exists for this address: its funds can only go to the main address, swept in batches'
                : 'An address with its own key: swept by its own transactions'
            }
          >
            {c.deposit_kind === 'keyless' ? 'keyless address' : 'keyed address'}
          </span>
        </p>
      </section>
      <section aria-labelledby="payments-title">
        <h2 id="payments-title">Payments</h2>
        {c.payments.length === 0 ? (
          <Empty text="No payment yet." />
        ) : (
          <ul class="plain">
            {c.payments.map((p, i) => (
              <li key={p.tx_hash ?? `found-${i}`} data-payment={p.tx_hash ?? ''}>
                <Amount value={p.amount} symbol={c.token} />{' '}
                {p.tx_hash === null ? (
                  'found on the address after its watch'
                ) : (
                  <>
                    from <span class="mono">{p.from}</span> · <Hash hash={p.tx_hash} explorer={explorer} />
                  </>
                )}{' '}
                · <Time utc={p.block_timestamp} />
                {p.late ? ' · late' : ''}
                {p.screened ? (
                  <>
                    {' · '}
                    <span class="badge badge-screened" title="The sender is on the screening list: not counted toward the charge">
                      screened: not counted
                    </span>
                  </>
                ) : null}
              </li>
            ))}
          </ul>
        )}
      </section>
      <section aria-labelledby="sweeps-title">
        <h2 id="sweeps-title">Sweeps to the main address</h2>
        {c.sweeps.length === 0 ? (
          <Empty text="Nothing swept yet." />
        ) : (
          <ul class="plain">
            {c.sweeps.map((s, i) => (
              <li key={`${s.tx_hash ?? 'unsent'}-${s.token}-${i}`} data-sweep={s.tx_hash ?? ''}>
                <StatusBadge status={s.status} /> <Amount value={s.amount} symbol={s.token} />{' '}
                {s.tx_hash ? <Hash hash={s.tx_hash} explorer={explorer} /> : null}
                {s.reason ? <span class="muted"> · {s.reason}</span> : null}
              </li>
            ))}
          </ul>
        )}
      </section>
      <section aria-labelledby="refunds-title">
        <h2 id="refunds-title">Refunds</h2>
        {c.refunds.length === 0 ? (
          <Empty text="No refund yet." />
        ) : (
          <ul class="plain">
            {c.refunds.map((r) => (
              <li key={r.id} data-refund={r.id}>
                <StatusBadge status={r.status} /> <Amount value={r.amount} symbol={c.token} />{' '}
                {r.address ? <span class="mono">to {r.address}</span> : r.claim_url ? <a href={r.claim_url}>claim link</a> : null}
              </li>
            ))}
          </ul>
        )}
        <RefundForm wallet={wallet} charge={charge} token={c.token} onDone={reload} />
      </section>
    </div>
  );
}

function RefundForm({ wallet, charge, token, onDone }: { wallet: string; charge: string; token: string; onDone: () => void }) {
  const [amount, setAmount] = useState('');
  const [address, setAddress] = useState('');
  const [message, setMessage] = useState<{ error: boolean; text: string } | null>(null);
  const submit = async (e: Event) => {
    e.preventDefault();
    const body = { ...(amount.trim() ? { amount: amount.trim() } : {}), ...(address.trim() ? { address: address.trim() } : {}) };
    const r = await api
      .POST('/api/wallet/{wallet}/charge/{charge}/refund', { params: { path: { wallet, charge } }, body })
      .catch(() => ({ data: undefined, error: undefined }));
    if (!r.data) return setMessage({ error: true, text: failure(r.error, 'The refund could not be made.') });
    const refund = r.data.data;
    setMessage({
      error: false,
      text: refund.claim_url
        ? `Refund of ${short(refund.amount)} ${token} created: send the payer ${refund.claim_url}`
        : `Refund of ${short(refund.amount)} ${token} sent (${refund.status}).`,
    });
    setAmount('');
    setAddress('');
    onDone();
  };
  return (
    <form class="inline-form" onSubmit={(e) => void submit(e)} aria-label="Refund this charge">
      <label for="refund-amount">Refund amount ({token}, empty: all that is left)</label>
      <input
        id="refund-amount"
        inputMode="decimal"
        autocomplete="off"
        value={amount}
        onInput={(e) => setAmount((e.target as HTMLInputElement).value)}
      />
      <label for="refund-address">Refund address (empty: a claim link for the payer)</label>
      <input
        id="refund-address"
        class="mono"
        autocomplete="off"
        spellcheck={false}
        value={address}
        onInput={(e) => setAddress((e.target as HTMLInputElement).value)}
      />
      <button type="submit" class="primary">
        Refund
      </button>
      <Notice message={message} />
    </form>
  );
}
