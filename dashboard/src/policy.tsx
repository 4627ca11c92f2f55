/**
 * A wallet's spending policy: its limits per token (`Save policy`) and its allowlist (`Add to
 * allowlist`, `Remove`); read again after each change.
 */
import { useState } from 'preact/hooks';
import { api, failure } from './api.js';
import { ok, useApi } from './data.js';
import { amount as short } from './format.js';
import { Empty, Loading, Notice, Problem } from './ui.js';

type Limits = Record<string, string>;

/** The wallet's spending policy (read) and its allowlist (`Add to allowlist`, `Remove`); changed with the login token only. */
export function Policy({ wallet }: { wallet: string }) {
  const {
    data: value,
    error,
    reload,
  } = useApi(async () => {
    const [policy, allowlist] = await Promise.all([
      api.GET('/api/wallet/{wallet}/policy', { params: { path: { wallet } } }),
      api.GET('/api/wallet/{wallet}/allowlist', { params: { path: { wallet } } }),
    ]);
    return { policy: ok(policy, 'The policy could not be read.').data, allowlist: ok(allowlist, 'The allowlist could not be read.').data };
  }, [wallet]);
  const [address, setAddress] = useState('');
  const [label, setLabel] = useState('');
  const [message, setMessage] = useState<{ error: boolean; text: string } | null>(null);
  const add = async (e: Event) => {
    e.preventDefault();
    const r = await api.POST('/api/wallet/{wallet}/allowlist/add', {
      params: { path: { wallet } },
      body: { address: address.trim(), label: label.trim() },
    });
    setMessage(
      r.data
        ? { error: false, text: `${r.data.data.address} added to the allowlist.` }
        : { error: true, text: failure(r.error, 'The address could not be added.') },
    );
    if (r.data) {
      setAddress('');
      setLabel('');
    }
    reload();
  };
  const remove = async (id: number) => {
    const r = await api.POST('/api/wallet/{wallet}/allowlist/{entry}/remove', { params: { path: { wallet, entry: String(id) } } });
    setMessage(
      r.data
        ? { error: false, text: 'Removed from the allowlist.' }
        : { error: true, text: failure(r.error, 'The address could not be removed.') },
    );
    reload();
  };
  const limits = (name: string, l: Limits) => {
    const entries = Object.entries(l);
    return (
      <div>
        <dt>{name}</dt>
        <dd>{entries.length === 0 ? 'none' : entries.map(([token, v]) => `${short(v)} ${token}`).join(', ')}</dd>
      </div>
    );
  };
  return (
    <section aria-labelledby="policy-title">
      <h2 id="policy-title">Spending policy</h2>
      <Notice message={message} />
      {error ? (
        <Problem text={error} />
      ) : !value ? (
        <Loading what="the policy" />
      ) : (
        <>
          <dl class="balances" aria-label="Limits">
            {limits('Per transaction', value.policy.per_transaction)}
            {limits('Daily', value.policy.daily)}
            {limits('Approval above', value.policy.approval_above)}
            <div>
              <dt>Allowlist only</dt>
              <dd>{value.policy.allowlist_only ? 'yes' : 'no'}</dd>
            </div>
          </dl>
          <LimitsForm
            wallet={wallet}
            allowlistOnly={Boolean(value.policy.allowlist_only)}
            onSaved={(text, failed) => {
              setMessage({ error: failed, text });
              if (!failed) reload();
            }}
          />
          <h3>Allowlist</h3>
          {value.allowlist.length === 0 ? (
            <Empty text="No addresses on the allowlist." />
          ) : (
            <ul class="plain">
              {value.allowlist.map((a) => (
                <li key={a.id} data-allowlist={a.id}>
                  <strong>{a.label}</strong> <span class="mono">{a.address}</span>
                  <button type="button" onClick={() => void remove(a.id)} aria-label={`Remove ${a.label} from the allowlist`}>
                    Remove
                  </button>
                </li>
              ))}
            </ul>
          )}
          <form class="inline-form" onSubmit={(e) => void add(e)} aria-label="Add to the allowlist">
            <label for="allow-address">Address to allow</label>
            <input
              id="allow-address"
              class="mono"
              required
              autocomplete="off"
              spellcheck={false}
              value={address}
              onInput={(e) => setAddress((e.target as HTMLInputElement).value)}
            />
            <label for="allow-label">Label</label>
            <input
              id="allow-label"
              required
              maxLength={255}
              value={label}
              onInput={(e) => setLabel((e.target as HTMLInputElement).value)}
            />
            <button type="submit" class="primary">
              Add to allowlist
            </button>
          </form>
        </>
      )}
    </section>
  );
}

const LIMIT_KINDS = [
  ['per_transaction', 'Per-transaction limit'],
  ['daily', 'Daily limit'],
  ['approval_above', 'Approval above'],
] as const;

/** One token's three limits (an empty field leaves a limit as it is; `none` removes it) and allowlist_only. */
function LimitsForm({
  wallet,
  allowlistOnly,
  onSaved,
}: {
  wallet: string;
  allowlistOnly: boolean;
  onSaved: (text: string, failed: boolean) => void;
}) {
  const [token, setToken] = useState('ETH');
  const [values, setValues] = useState<Record<string, string>>({});
  const [only, setOnly] = useState(allowlistOnly);
  const save = async (e: Event) => {
    e.preventDefault();
    const body: Record<string, unknown> = { allowlist_only: only };
    for (const [kind] of LIMIT_KINDS) {
      const v = (values[kind] ?? '').trim();
      if (v !== '') body[kind] = { [token.trim()]: v.toLowerCase() === 'none' ? null : v };
    }
    const r = await api
      .POST('/api/wallet/{wallet}/policy', { params: { path: { wallet } }, body })
      .catch(() => ({ data: undefined, error: undefined }));
    if (r.data) setValues({});
    onSaved(r.data ? 'The policy was saved.' : failure(r.error, 'The policy could not be saved.'), !r.data);
  };
  return (
    <form class="inline-form" onSubmit={(e) => void save(e)} aria-label="Change the limits">
      <label for="limit-token">Token</label>
      <input id="limit-token" required maxLength={64} value={token} onInput={(e) => setToken((e.target as HTMLInputElement).value)} />
      {LIMIT_KINDS.map(([kind, label]) => (
        <div key={kind} class="field">
          <label for={`limit-${kind}`}>{label} (empty: unchanged, none: removed)</label>
          <input
            id={`limit-${kind}`}
            inputMode="decimal"
            autocomplete="off"
            value={values[kind] ?? ''}
            onInput={(e) => setValues({ ...values, [kind]: (e.target as HTMLInputElement).value })}
          />
        </div>
      ))}
      <label class="check">
        <input type="checkbox" checked={only} onChange={(e) => setOnly((e.target as HTMLInputElement).checked)} /> Only send to addresses on
        the allowlist
      </label>
      <button type="submit" class="primary">
        Save policy
      </button>
    </form>
  );
}
