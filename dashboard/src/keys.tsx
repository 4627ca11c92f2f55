/**
 * The account's API keys: `Create key` with its scopes (each explained: what a key with it may
 * do) and when it expires; the new key is shown once with `Copy`. `Revoke` asks in the confirm
 * dialog first. The list is read again after each change.
 */
import { useState } from 'preact/hooks';
import { api, failure } from './api.js';
import { ok, useApi } from './data.js';
import { useConfirm } from './confirm.js';
import { Empty, Loading, Notice, Problem, Time } from './ui.js';

/** Each scope and what it lets a key do (docs/integrating.md, "Create an API key"). */
const SCOPES = [
  ['read', 'See wallets, balances, transactions, charges, payouts and webhooks; change nothing.'],
  ['charges:write', 'Create charges, and refund them as claim links the payer opens.'],
  ['transactions:write', 'Send money: transfers and payouts, within the spending policy.'],
  ['wallets:write', 'Create and rename wallets; add and remove their tokens.'],
  ['webhooks:write', 'Create, change, delete and retry webhooks.'],
  ['*', 'All of the above. Never: keys, the spending policy or approvals (those need you signed in).'],
] as const;
type Scope = (typeof SCOPES)[number][0];

const DAY = 86_400;
/** The expiry choices, in seconds (`expires_in`); null: never. */
const EXPIRIES: [string, number | null][] = [
  ['Never', null],
  ['In 1 day', DAY],
  ['In 30 days', 30 * DAY],
  ['In 90 days', 90 * DAY],
  ['In 1 year', 365 * DAY],
];

type Message = { error: boolean; text: string };

/** Revoked, expired (its `expires_at`, UTC, has passed) or active. */
function keyState(k: { revoked_at: string | null; expires_at: string | null }): string {
  if (k.revoked_at) return 'revoked';
  return k.expires_at && Date.parse(`${k.expires_at.replace(' ', 'T')}Z`) <= Date.now() ? 'expired' : 'active';
}

/** The new key, this once, with `Copy` (the clipboard) and what happened. */
function CreatedKey({ name, value }: { name: string; value: string }) {
  const [copied, setCopied] = useState<Message | null>(null);
  const copy = () =>
    navigator.clipboard.writeText(value).then(
      () => setCopied({ error: false, text: 'Copied to the clipboard.' }),
      () => setCopied({ error: true, text: 'The browser did not allow copying: select the key and copy it.' }),
    );
  return (
    <div class="shown-once" role="region" aria-label={`New key ${name}`}>
      <p>The new key {name}, shown this once: copy it now and keep it in your server's secrets.</p>
      <p class="mono address" data-created-key>
        {value}
      </p>
      <button type="button" class="copy" onClick={() => void copy()}>
        Copy
      </button>
      <Notice message={copied} />
    </div>
  );
}

export function Keys() {
  const { data: keys, error, reload } = useApi(async () => ok(await api.GET('/api/auth/key'), 'The keys could not be listed.').data, []);
  const [created, setCreated] = useState<{ name: string; key: string } | null>(null);
  const [message, setMessage] = useState<Message | null>(null);
  const confirm = useConfirm();
  const revoke = async (k: { id: number; name: string }) => {
    const yes = await confirm.ask({
      title: `Revoke key ${k.name}?`,
      action: `Revoke key ${k.name}`,
      danger: true,
      details: <p>Every request made with it is refused from now on (401). This cannot be undone.</p>,
    });
    if (!yes) return;
    const r = await api.POST('/api/auth/key/{key}/revoke', { params: { path: { key: String(k.id) } } });
    setMessage(
      r.data ? { error: false, text: `Key ${k.id} revoked.` } : { error: true, text: failure(r.error, 'The key could not be revoked.') },
    );
    reload();
  };
  return (
    <div class="stack">
      <section aria-labelledby="keys-title">
        <h1 id="keys-title">API keys</h1>
        <Notice message={message} />
        {created && <CreatedKey name={created.name} value={created.key} />}
        {error ? (
          <Problem text={error} />
        ) : !keys ? (
          <Loading what="keys" />
        ) : keys.length === 0 ? (
          <Empty text="No API keys yet." />
        ) : (
          <ul class="plain">
            {keys.map((k) => (
              <li key={k.id} data-key={k.id}>
                <strong>{k.name}</strong> <span class="mono">{k.prefix}…</span> · {k.scopes.join(', ')} · {keyState(k)}
                {!k.revoked_at && (
                  <>
                    {' · '}
                    {k.expires_at ? (
                      <>
                        expires <Time utc={k.expires_at} />
                      </>
                    ) : (
                      'never expires'
                    )}
                    <button type="button" onClick={() => void revoke(k)} aria-label={`Revoke ${k.name}`}>
                      Revoke
                    </button>
                  </>
                )}
              </li>
            ))}
          </ul>
        )}
        {confirm.dialog}
      </section>
      <CreateKey
        onCreated={(name, key) => {
          setCreated({ name, key });
          setMessage(null);
          reload();
        }}
        onFailed={(text) => setMessage({ error: true, text })}
      />
    </div>
  );
}

function CreateKey({ onCreated, onFailed }: { onCreated: (name: string, key: string) => void; onFailed: (text: string) => void }) {
  const [name, setName] = useState('');
  const [scopes, setScopes] = useState<Scope[]>(['read']);
  const [expiry, setExpiry] = useState(0);
  const [problem, setProblem] = useState<string | null>(null);
  const create = async (e: Event) => {
    e.preventDefault();
    if (scopes.length === 0) return setProblem('Choose at least one scope: what the key may do.');
    setProblem(null);
    const expiresIn = EXPIRIES[expiry][1];
    const r = await api.POST('/api/auth/key/create', { body: { name, scopes, ...(expiresIn === null ? {} : { expires_in: expiresIn }) } });
    if (!r.data) return onFailed(failure(r.error, 'The key could not be created.'));
    onCreated(r.data.data.name, r.data.data.key);
    setName('');
  };
  return (
    <form class="inline-form card" onSubmit={(e) => void create(e)} aria-label="Create an API key">
      <label for="key-name">Key name</label>
      <input id="key-name" required maxLength={255} value={name} onInput={(e) => setName((e.target as HTMLInputElement).value)} />
      <fieldset class="scopes" aria-describedby={problem ? 'scopes-problem' : undefined}>
        <legend>Scopes: what the key may do</legend>
        {SCOPES.map(([s, what]) => (
          <label key={s} class="check scope">
            <input
              type="checkbox"
              checked={scopes.includes(s)}
              onChange={(e) => setScopes((e.target as HTMLInputElement).checked ? [...scopes, s] : scopes.filter((x) => x !== s))}
            />
            <span>
              <strong class="mono">{s}</strong> <span class="muted">{what}</span>
            </span>
          </label>
        ))}
        {problem && (
          <p id="scopes-problem" class="error" role="alert">
            {problem}
          </p>
        )}
      </fieldset>
      <label for="key-expiry">Expires</label>
      <select id="key-expiry" value={expiry} onChange={(e) => setExpiry(Number((e.target as HTMLSelectElement).value))}>
        {EXPIRIES.map(([label], i) => (
          <option key={label} value={i}>
            {label}
          </option>
        ))}
      </select>
      <button type="submit" class="primary">
        Create key
      </button>
    </form>
  );
}
