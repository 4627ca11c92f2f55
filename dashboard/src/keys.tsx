/**
 * The account's API keys: `Create key` shows the new key once, `Revoke` ends one; the list is read
 * again after each.
 */
import { useState } from 'preact/hooks';
import { api, failure } from './api.js';
import { ok, useApi } from './data.js';
import { Empty, Loading, Notice, Problem } from './ui.js';

const SCOPES = ['read', 'charges:write', 'transactions:write', 'wallets:write', 'webhooks:write'] as const;

export function Keys() {
  const { data: keys, error, reload } = useApi(async () => ok(await api.GET('/api/auth/key'), 'The keys could not be listed.').data, []);
  const [name, setName] = useState('');
  const [scopes, setScopes] = useState<string[]>(['read']);
  const [created, setCreated] = useState<string | null>(null);
  const [message, setMessage] = useState<string | null>(null);
  const create = async (e: Event) => {
    e.preventDefault();
    const r = await api.POST('/api/auth/key/create', { body: { name, scopes: scopes as (typeof SCOPES)[number][] } });
    if (!r.data) return setMessage(failure(r.error, 'The key could not be created.'));
    setCreated(r.data.data.key);
    setMessage(null);
    setName('');
    reload();
  };
  const revoke = async (id: number) => {
    const r = await api.POST('/api/auth/key/{key}/revoke', { params: { path: { key: String(id) } } });
    setMessage(r.data ? `Key ${id} revoked.` : failure(r.error, 'The key could not be revoked.'));
    reload();
  };
  return (
    <div class="stack">
      <section aria-labelledby="keys-title">
        <h1 id="keys-title">API keys</h1>
        <Notice message={message} />
        {created && (
          <div class="shown-once" role="status">
            <p>The new key, shown this once: copy it now.</p>
            <p class="mono address" data-created-key>
              {created}
            </p>
          </div>
        )}
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
                <strong>{k.name}</strong> <span class="mono">{k.prefix}…</span> · {k.scopes.join(', ')} ·{' '}
                {k.revoked_at ? 'revoked' : 'active'}
                {!k.revoked_at && (
                  <button type="button" onClick={() => void revoke(k.id)} aria-label={`Revoke ${k.name}`}>
                    Revoke
                  </button>
                )}
              </li>
            ))}
          </ul>
        )}
      </section>
      <form class="inline-form card" onSubmit={(e) => void create(e)} aria-label="Create an API key">
        <label for="key-name">Key name</label>
        <input id="key-name" required maxLength={255} value={name} onInput={(e) => setName((e.target as HTMLInputElement).value)} />
        <fieldset>
          <legend>Scopes</legend>
          {SCOPES.map((s) => (
            <label key={s} class="check">
              <input
                type="checkbox"
                checked={scopes.includes(s)}
                onChange={(e) => setScopes((e.target as HTMLInputElement).checked ? [...scopes, s] : scopes.filter((x) => x !== s))}
              />{' '}
              {s}
            </label>
          ))}
        </fieldset>
        <button type="submit" class="primary">
          Create key
        </button>
      </form>
    </div>
  );
}
