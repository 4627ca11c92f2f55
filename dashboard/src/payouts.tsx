/**
 * A wallet's payouts: each opens its own page (payout.tsx) with every item; one awaiting approval
 * lists its recipients here, and `Approve` and `Reject` ask in the confirm dialog first. `New
 * payout` sends one token to several recipients (an address and an amount each). The answer to an
 * action (or its error, in words, next to the field it is about) is shown, and the list is read
 * again.
 */
import { useEffect, useRef, useState } from 'preact/hooks';
import { api, failure } from './api.js';
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
    { refreshOn: ['transaction.'], wallet },
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
      <NewPayout wallet={wallet} onCreated={reload} />
      {dialog}
    </section>
  );
}

interface Row {
  address: string;
  amount: string;
  reference: string;
}
const EMPTY_ROW: Row = { address: '', amount: '', reference: '' };

/** The API's errors by field, in a merchant's words: `items.1.amount` is "The amount …" next to recipient 2's amount. */
function fieldErrors(error: unknown): Record<string, string> {
  const data = (error as { data?: Record<string, string[]> | null } | undefined)?.data;
  const out: Record<string, string> = {};
  if (!data || typeof data !== 'object') return out;
  for (const [field, messages] of Object.entries(data))
    out[field] = messages
      .map((m) => m.replace(/^The items\.\d+\.(\w+) field/, 'The $1').replace(/^The items field/, 'The recipients'))
      .join(' ');
  return out;
}

/** One recipient's fields; the API's error for each shown under it. */
function RecipientFields({
  n,
  row,
  errors,
  onChange,
  onRemove,
}: {
  n: number;
  row: Row;
  errors: Record<string, string>;
  onChange: (r: Row) => void;
  onRemove: (() => void) | null;
}) {
  const field = (key: keyof Row, label: string, extra: Record<string, unknown>) => {
    const id = `payout-${n}-${key}`;
    const error = errors[`items.${n}.${key}`];
    return (
      <div class="field">
        <label for={id}>{label}</label>
        <input
          id={id}
          {...extra}
          autocomplete="off"
          value={row[key]}
          aria-invalid={error ? 'true' : undefined}
          aria-describedby={error ? `${id}-error` : undefined}
          onInput={(e) => onChange({ ...row, [key]: (e.target as HTMLInputElement).value })}
        />
        {error && (
          <p id={`${id}-error`} class="error">
            {error}
          </p>
        )}
      </div>
    );
  };
  return (
    <fieldset class="recipient" data-recipient-row={n + 1}>
      <legend>Recipient {n + 1}</legend>
      {field('address', `Address of recipient ${n + 1}`, { class: 'mono', required: true, spellcheck: false })}
      {field('amount', `Amount for recipient ${n + 1}`, { inputMode: 'decimal', required: true })}
      {field('reference', `Reference for recipient ${n + 1} (optional)`, { maxLength: 255 })}
      {onRemove && (
        <button type="button" class="link" onClick={onRemove}>
          Remove recipient {n + 1}
        </button>
      )}
    </fieldset>
  );
}

/** `New payout`: a token and its recipients; the created payout is sent, or awaits approval over the policy's threshold. */
function NewPayout({ wallet, onCreated }: { wallet: string; onCreated: () => void }) {
  const [token, setToken] = useState('ETH');
  const [rows, setRows] = useState<Row[]>([{ ...EMPTY_ROW }, { ...EMPTY_ROW }]);
  const [errors, setErrors] = useState<Record<string, string>>({});
  const [problem, setProblem] = useState<string | null>(null);
  const [done, setDone] = useState<string | null>(null);
  const form = useRef<HTMLFormElement>(null);
  useEffect(() => {
    // The first field in error (else the form's own alert) into view, with focus.
    const first = form.current?.querySelector<HTMLElement>('[aria-invalid="true"], [role="alert"]');
    first?.scrollIntoView({ block: 'center' });
    if (first?.tagName === 'INPUT') first.focus();
  }, [errors, problem]);
  const create = async (e: Event) => {
    e.preventDefault();
    const items = rows.map((r) => ({
      address: r.address.trim(),
      amount: r.amount.trim(),
      ...(r.reference.trim() ? { reference: r.reference.trim() } : {}),
    }));
    const r = await api
      .POST('/api/wallet/{wallet}/payout/create', { params: { path: { wallet } }, body: { token: token.trim(), items } })
      .catch(() => ({ data: undefined, error: undefined }));
    setDone(null);
    if (!r.data) {
      const byField = fieldErrors(r.error);
      setErrors(byField);
      const fieldless = Object.keys(byField)
        .filter((k) => k !== 'token' && !/^items\.\d+\./.test(k))
        .map((k) => byField[k]);
      setProblem(
        fieldless.length > 0
          ? fieldless.join(' ')
          : Object.keys(byField).length > 0
            ? null
            : failure(r.error, 'The payout could not be created.'),
      );
      return;
    }
    const p = r.data.data;
    setErrors({});
    setProblem(null);
    setRows([{ ...EMPTY_ROW }, { ...EMPTY_ROW }]);
    setDone(`Payout ${p.id} created: ${payoutSummary(p)}, ${p.status === 'awaiting_approval' ? 'awaiting approval' : 'being sent'}.`);
    onCreated();
  };
  return (
    <details class="new-payout">
      <summary>New payout</summary>
      <form ref={form} class="inline-form" onSubmit={(e) => void create(e)} aria-label="New payout">
        <label for="payout-token">Token</label>
        <input
          id="payout-token"
          required
          maxLength={64}
          value={token}
          aria-invalid={errors.token ? 'true' : undefined}
          aria-describedby={errors.token ? 'payout-token-error' : undefined}
          onInput={(e) => setToken((e.target as HTMLInputElement).value)}
        />
        {errors.token && (
          <p id="payout-token-error" class="error">
            {errors.token}
          </p>
        )}
        {rows.map((row, n) => (
          <RecipientFields
            key={n}
            n={n}
            row={row}
            errors={errors}
            onChange={(changed) => setRows(rows.map((x, i) => (i === n ? changed : x)))}
            onRemove={rows.length > 1 ? () => setRows(rows.filter((_, i) => i !== n)) : null}
          />
        ))}
        <button type="button" class="link" onClick={() => setRows([...rows, { ...EMPTY_ROW }])}>
          Add a recipient
        </button>
        {problem && (
          <p class="error" role="alert">
            {problem}
          </p>
        )}
        <button type="submit" class="primary">
          Create payout
        </button>
        <Notice message={done} />
      </form>
    </details>
  );
}
