/**
 * A wallet's charges: the listing with `New charge` (an amount of a token, or a price in a
 * currency; an expiry), and a charge's own view with its checkout link, expiry, payments and
 * refunds (`Refund`: an amount, to an address or as a claim link for the payer; the charge is
 * read again).
 */
import { useState } from 'preact/hooks';
import { api } from './api.js';
import { ok, PAGE, useApi } from './data.js';
import { amount as short, percent } from './format.js';
import { addressProblem, amountProblem, Field, Opener, problems, useOpen, Submit, useForm, valueOf } from './forms.js';
import { Amount, Empty, Hash, Listing, Loading, Notice, Problem, StatusBadge, Time } from './ui.js';
import { ExportCsv } from './export.js';
import { useConfirm, type Question } from './confirm.js';

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
      <NewCharge wallet={wallet} />
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
    // A payment short of the price writes no event: a pending price charge is read again for its share paid.
    { refreshOn: ['charge.', 'transaction.'], wallet, again: (c) => c.price !== null && c.status === 'pending' },
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
        <Checkout url={c.hosted_url} expiresAt={c.expires_at} status={c.status} price={c.price} />
      </section>
      {c.price && <Quotes price={c.price} quotes={c.quotes} paidFraction={c.paid_fraction} />}
      <section aria-labelledby="payments-title">
        <h2 id="payments-title">Payments</h2>
        {c.payments.length === 0 ? (
          <Empty text="No payment yet." />
        ) : (
          <ul class="plain">
            {c.payments.map((p, i) => (
              <li key={p.tx_hash ?? `found-${i}`} data-payment={p.tx_hash ?? ''}>
                <Amount value={p.amount} symbol={p.token} />{' '}
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

const SOURCES = { manual: 'set by hand', chainlink: 'Chainlink feed', pegged: 'pegged' } as const;

type Quote = { token: string; amount: string; rate: string; rate_source: keyof typeof SOURCES; rate_at: string };

/** A price charge's quotes, locked at creation: per token what pays the price, at which rate from where; and the share paid so far. */
function Quotes({ price, quotes, paidFraction }: { price: { amount: string; currency: string }; quotes: Quote[]; paidFraction: string }) {
  return (
    <section aria-labelledby="quotes-title">
      <h2 id="quotes-title">Quotes</h2>
      <p data-paid-fraction={paidFraction}>
        <strong>{percent(paidFraction)}% paid</strong> of {price.amount} {price.currency}: each payment counts at its token's quote.
      </p>
      <ul class="plain">
        {quotes.map((q) => (
          <li key={q.token} data-quote={q.token}>
            <Amount value={q.amount} symbol={q.token} /> due · 1 {q.token} = {short(q.rate)} {price.currency} ·{' '}
            <span title={`Rate from ${q.rate_at} UTC`}>{SOURCES[q.rate_source]}</span>, <Time utc={q.rate_at} />
          </li>
        ))}
      </ul>
    </section>
  );
}

function RefundForm({ wallet, charge, token, onDone }: { wallet: string; charge: string; token: string; onDone: () => void }) {
  const [amount, setAmount] = useState('');
  const [address, setAddress] = useState('');
  const [message, setMessage] = useState<string | null>(null);
  const confirm = useConfirm();
  const form = useForm(
    'refund',
    {
      amount: `Refund amount (${token}, empty: all that is left)`,
      address: 'Refund address (empty: a claim link for the payer)',
    },
    {},
    {
      'Refund exceeds the amount received': ['amount', 'The refund amount is more than the charge received, less its earlier refunds.'],
      'Nothing to refund': ['amount', 'Nothing is left to refund: the charge received nothing, or all of it was refunded.'],
    },
  );
  const submit = async (e: Event) => {
    e.preventDefault();
    setMessage(null);
    const body = { ...(amount.trim() ? { amount: amount.trim() } : {}), ...(address.trim() ? { address: address.trim() } : {}) };
    const check = () =>
      problems({
        amount: amount.trim() ? amountProblem(amount, 'The refund amount') : null,
        address: address.trim() ? addressProblem(address, 'The refund address') : null,
      });
    // Asked only of a refund the form would send: a wrong field is shown at once, with no dialog.
    if (Object.keys(check()).length === 0 && !(await confirm.ask(refundQuestion(body, token)))) return;
    const r = await form.submit(
      () => api.POST('/api/wallet/{wallet}/charge/{charge}/refund', { params: { path: { wallet, charge } }, body }),
      check,
    );
    if (!r) return;
    const refund = r.data;
    setMessage(
      refund.claim_url
        ? `Refund of ${short(refund.amount)} ${token} created: send the payer ${refund.claim_url}`
        : `Refund of ${short(refund.amount)} ${token} sent (${refund.status}).`,
    );
    setAmount('');
    setAddress('');
    onDone();
  };
  return (
    <form class="inline-form" ref={form.ref} onSubmit={(e) => void submit(e)} aria-label="Refund this charge" noValidate>
      <Field form={form} name="amount">
        {(p) => <input {...p} inputMode="decimal" autocomplete="off" value={amount} onInput={(e) => setAmount(valueOf(e))} />}
      </Field>
      <Field form={form} name="address">
        {(p) => <input {...p} class="mono" autocomplete="off" spellcheck={false} value={address} onInput={(e) => setAddress(valueOf(e))} />}
      </Field>
      <Submit form={form} text="Refund" busyText="Refunding…" />
      <Notice message={message} />
      {confirm.dialog}
    </form>
  );
}

/** The refund's confirmation: the verb, the amount and where it goes, and that a sent refund stays sent. */
function refundQuestion(body: { amount?: string; address?: string }, token: string): Question {
  const what = body.amount ? `${body.amount} ${token}` : `all that is left (${token})`;
  return {
    title: 'Refund this charge?',
    action: body.address ? `Refund ${what} to ${body.address.slice(0, 10)}…${body.address.slice(-8)}` : `Refund ${what} as a claim link`,
    details: body.address
      ? `Sent on the chain to ${body.address}: a refund sent cannot be called back.`
      : 'The payer gets a link to claim it to an address of their choice.',
    danger: true,
  };
}

/** The charge's checkout page for the payer (a link, and `Copy link`) and when the charge expires. */
function Checkout({
  url,
  expiresAt,
  status,
  price,
}: {
  url: string;
  expiresAt: string;
  status: string;
  price: { amount: string; currency: string } | null;
}) {
  const [copied, setCopied] = useState<string | null>(null);
  const copy = async () => {
    const done = await navigator.clipboard?.writeText(url).then(
      () => true,
      () => false,
    );
    setCopied(done ? 'Link copied.' : 'Select the link and copy it.');
  };
  return (
    <dl class="balances checkout" aria-label="Checkout">
      {price && (
        <div>
          <dt>Price</dt>
          <dd>
            {price.amount} {price.currency}
          </dd>
        </div>
      )}
      <div>
        <dt>Checkout link</dt>
        <dd>
          <a href={url} target="_blank" rel="noopener noreferrer" class="mono" data-checkout>
            {url}
          </a>{' '}
          <button type="button" class="copy" onClick={() => void copy()}>
            Copy link
          </button>
          {copied && (
            <span class="notice" role="status">
              {' '}
              {copied}
            </span>
          )}
        </dd>
      </div>
      <div>
        <dt>{status === 'pending' ? 'Expires' : 'Expiry'}</dt>
        <dd data-expires={expiresAt}>
          <Time utc={expiresAt} />
          {status === 'pending' ? ` (${timeLeft(expiresAt)})` : null}
        </dd>
      </div>
    </dl>
  );
}

/** "in 14 minutes", "in 3 hours", "now": from the viewer's clock, as the page is drawn. */
function timeLeft(utc: string): string {
  const minutes = Math.round((Date.parse(`${utc.replace(' ', 'T')}Z`) - Date.now()) / 60_000);
  if (!(minutes > 0)) return 'now';
  if (minutes < 120) return `in ${minutes} ${minutes === 1 ? 'minute' : 'minutes'}`;
  return `in ${Math.round(minutes / 60)} hours`;
}

const EXPIRIES: [number, string][] = [
  [300, '5 minutes'],
  [900, '15 minutes'],
  [3600, '1 hour'],
  [21600, '6 hours'],
  [86400, '24 hours'],
];
const CURRENCIES = ['USD', 'EUR', 'GBP'];

/** `New charge`: an amount of one of the wallet's tokens, or a price in a currency (any quoted token pays it); its page opens. */
function NewCharge({ wallet }: { wallet: string }) {
  const [v, setV] = useState({ kind: 'amount', amount: '', token: '', price: '', currency: 'USD', expires: '900' });
  const set = (k: keyof typeof v) => (e: Event) => setV({ ...v, [k]: (e.currentTarget as HTMLInputElement).value });
  const form = useForm(
    'new-charge',
    { amount: 'Amount', token: 'Token', price: 'Price', currency: 'Currency', expires: 'Expires after' },
    { 'price.amount': 'price', 'price.currency': 'currency', tokens: 'price' },
  );
  const [open, show] = useOpen(form);
  const { data: tokens } = useApi(
    async () =>
      open ? ok(await api.GET('/api/wallet/{wallet}/tokens', { params: { path: { wallet } } }), 'The tokens could not be read.').data : [],
    [wallet, open],
  );
  const active = (tokens ?? []).filter((t) => t.is_active);
  const token = v.token || active[0]?.symbol || '';
  const create = async (e: Event) => {
    e.preventDefault();
    const priced = v.kind === 'price';
    const terms = priced ? { price: { amount: v.price.trim(), currency: v.currency } } : { amount: v.amount.trim(), token };
    const created = await form.submit(
      () =>
        api.POST('/api/wallet/{wallet}/charge/create', { params: { path: { wallet } }, body: { ...terms, expires: Number(v.expires) } }),
      () =>
        problems(
          priced
            ? { price: amountProblem(v.price, 'Price') }
            : { amount: amountProblem(v.amount, 'Amount'), token: token ? null : 'Add a token first.' },
        ),
    );
    if (created) window.location.hash = `#/wallet/${wallet}/charge/${created.data.id}`;
  };
  if (!open) return <Opener text="New charge" onOpen={show} />;
  return (
    <form class="inline-form" ref={form.ref} onSubmit={(e) => void create(e)} aria-labelledby="new-charge-title" noValidate>
      <h3 id="new-charge-title">New charge</h3>
      <fieldset>
        <legend>The payer pays</legend>
        {(
          [
            ['amount', 'An amount of a token'],
            ['price', 'A price in a currency'],
          ] as const
        ).map(([kind, text]) => (
          <label key={kind} class="check">
            <input type="radio" name="kind" value={kind} checked={v.kind === kind} onChange={set('kind')} /> {text}
          </label>
        ))}
      </fieldset>
      {v.kind === 'amount' ? (
        <>
          <Field form={form} name="amount">
            {(p) => <input {...p} inputMode="decimal" autocomplete="off" value={v.amount} onInput={set('amount')} />}
          </Field>
          <Field form={form} name="token">
            {(p) => (
              <select {...p} value={token} onChange={set('token')}>
                {active.map((t) => (
                  <option key={t.symbol} value={t.symbol}>
                    {t.symbol}
                  </option>
                ))}
              </select>
            )}
          </Field>
        </>
      ) : (
        <>
          <Field form={form} name="price" hint="At most 2 decimal places; the payer may pay in any token of the wallet that has a rate.">
            {(p) => <input {...p} inputMode="decimal" autocomplete="off" value={v.price} onInput={set('price')} />}
          </Field>
          <Field form={form} name="currency">
            {(p) => (
              <select {...p} value={v.currency} onChange={set('currency')}>
                {CURRENCIES.map((c) => (
                  <option key={c}>{c}</option>
                ))}
              </select>
            )}
          </Field>
        </>
      )}
      <Field form={form} name="expires">
        {(p) => (
          <select {...p} value={v.expires} onChange={set('expires')}>
            {EXPIRIES.map(([s, text]) => (
              <option key={s} value={String(s)}>
                {text}
              </option>
            ))}
          </select>
        )}
      </Field>
      <Submit form={form} text="Create charge" busyText="Creating the charge…" />
    </form>
  );
}
