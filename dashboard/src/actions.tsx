/**
 * The views where a person acts: a charge with its payments and refunds (`Refund`), the
 * wallet's payouts (`Approve`, `Reject` for one awaiting approval), and API keys (`Create key`
 * shows the key once, `Revoke`). Every action is a call of the public API; its answer (or its
 * error, in words) is shown, and the list is read again.
 */
import { useEffect, useState } from 'preact/hooks';
import { api, failure } from './api.js';
import { Amount, Empty, Hash, Loading, Problem, StatusBadge, Time, Notice } from './ui.js';
import { amount as short } from './format.js';

/** Reads `load` when `deps` change and again after `reload()`. */
function useLoad<T>(load: () => Promise<T>, deps: unknown[]): { value: T | null; error: string | null; reload: () => void } {
  const [value, setValue] = useState<T | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [n, setN] = useState(0);
  useEffect(() => {
    load()
      .then((v) => {
        setValue(v);
        setError(null);
      })
      .catch((e: unknown) => setError(e instanceof Error ? e.message : 'The service could not be reached.'));
  }, [...deps, n]);
  return { value, error, reload: () => setN(n + 1) };
}

function ok<T>(r: { data?: T; error?: unknown }, fallback: string): T {
  if (r.data === undefined) throw new Error(failure(r.error, fallback));
  return r.data;
}

export function ChargeDetail({ wallet, charge, explorer }: { wallet: string; charge: string; explorer: string }) {
  const {
    value: c,
    error,
    reload,
  } = useLoad(
    async () =>
      ok(
        await api.GET('/api/wallet/{wallet}/charge/show/{charge}', { params: { path: { wallet, charge } } }),
        'The charge could not be read.',
      ).data,
    [wallet, charge],
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
        <p class="mono address">{c.address}</p>
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

export function Payouts({ wallet }: { wallet: string }) {
  const { value, error, reload } = useLoad(
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
      <Notice message={message} />
      {error ? (
        <Problem text={error} />
      ) : !value ? (
        <Loading what="payouts" />
      ) : value.length === 0 ? (
        <Empty text="No payouts yet." />
      ) : (
        <ul class="plain">
          {value.map((p) => (
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

const SCOPES = ['read', 'charges:write', 'transactions:write', 'wallets:write', 'webhooks:write'] as const;

export function Keys() {
  const { value, error, reload } = useLoad(async () => ok(await api.GET('/api/auth/key'), 'The keys could not be listed.').data, []);
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
        ) : !value ? (
          <Loading what="keys" />
        ) : value.length === 0 ? (
          <Empty text="No API keys yet." />
        ) : (
          <ul class="plain">
            {value.map((k) => (
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

/** A wallet's webhooks, each with its latest deliveries (`Retry`) and `Send test`. */
export function Webhooks({ wallet }: { wallet: string }) {
  const { value, error, reload } = useLoad(async () => {
    const hooks = ok(
      await api.GET('/api/wallet/{wallet}/webhook', { params: { path: { wallet } } }),
      'The webhooks could not be listed.',
    ).data;
    return Promise.all(
      hooks.map(async (h) => {
        const d = await api.GET('/api/wallet/{wallet}/webhook/{webhook}/deliveries', {
          params: { path: { wallet, webhook: String(h.id) }, query: { limit: 10 } },
        });
        return { hook: h, deliveries: d.data?.data ?? [] };
      }),
    );
  }, [wallet]);
  const [message, setMessage] = useState<string | null>(null);
  const act = async (label: string, call: () => Promise<{ data?: unknown; error?: unknown }>) => {
    const r = await call().catch(() => ({ data: undefined, error: undefined }));
    setMessage(r.data ? `${label}: done.` : failure(r.error, `${label}: it could not be done.`));
    reload();
  };
  return (
    <section aria-labelledby="webhooks-title">
      <h2 id="webhooks-title">Webhooks</h2>
      <Notice message={message} />
      {error ? (
        <Problem text={error} />
      ) : !value ? (
        <Loading what="webhooks" />
      ) : value.length === 0 ? (
        <Empty text="No webhooks yet." />
      ) : (
        value.map(({ hook, deliveries }) => {
          const webhook = String(hook.id);
          return (
            <div key={hook.id} class="hook" data-webhook={hook.id}>
              <p>
                <StatusBadge status={hook.status} /> <span class="mono">{hook.url}</span> · {hook.type}
                <button
                  type="button"
                  aria-label={`Send test to webhook ${hook.id}`}
                  onClick={() =>
                    void act(`Test sent to webhook ${hook.id}`, () =>
                      api.POST('/api/wallet/{wallet}/webhook/{webhook}/test', { params: { path: { wallet, webhook } } }),
                    )
                  }
                >
                  Send test
                </button>
              </p>
              {deliveries.length === 0 ? (
                <Empty text="No deliveries yet." />
              ) : (
                <ul class="plain">
                  {deliveries.map((d) => (
                    <li key={d.id} data-delivery={d.id}>
                      <StatusBadge status={d.status} /> {d.event} · {d.attempts} attempts
                      {d.response_status !== null ? ` · HTTP ${d.response_status}` : ''}
                      {d.last_error ? ` · ${d.last_error}` : ''} · <Time utc={d.created_at} />
                      <Attempts wallet={wallet} webhook={webhook} delivery={d.id} />
                      <button
                        type="button"
                        aria-label={`Retry delivery ${d.id}`}
                        onClick={() =>
                          void act(`Delivery ${d.id} retried`, () =>
                            api.POST('/api/wallet/{wallet}/webhook/{webhook}/deliveries/{delivery}/retry', {
                              params: { path: { wallet, webhook, delivery: String(d.id) } },
                            }),
                          )
                        }
                      >
                        Retry
                      </button>
                    </li>
                  ))}
                </ul>
              )}
            </div>
          );
        })
      )}
    </section>
  );
}

type Limits = Record<string, string>;

/** The wallet's spending policy (read) and its allowlist (`Add to allowlist`, `Remove`); changed with the login token only. */
export function Policy({ wallet }: { wallet: string }) {
  const { value, error, reload } = useLoad(async () => {
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

/** A delivery's HTTP attempts, read when asked for: when, the status answered, how long, the error. */
function Attempts({ wallet, webhook, delivery }: { wallet: string; webhook: string; delivery: number }) {
  const [rows, setRows] = useState<
    { attempt: number; at: string; response_status: number | null; duration_ms: number; error: string | null }[] | null
  >(null);
  const [error, setError] = useState<string | null>(null);
  const show = async () => {
    if (rows) return setRows(null);
    const r = await api
      .GET('/api/wallet/{wallet}/webhook/{webhook}/deliveries/{delivery}', {
        params: { path: { wallet, webhook, delivery: String(delivery) } },
      })
      .catch(() => ({ data: undefined, error: undefined }));
    if (!r.data) return setError(failure(r.error, 'The attempts could not be read.'));
    setRows(r.data.data.attempts);
  };
  return (
    <>
      <button type="button" aria-expanded={rows !== null} aria-label={`Attempts of delivery ${delivery}`} onClick={() => void show()}>
        Attempts
      </button>
      {error && <Problem text={error} />}
      {rows && (
        <ol class="attempts" data-attempts={delivery}>
          {rows.map((a) => (
            <li key={a.attempt}>
              <Time utc={a.at} /> · {a.response_status === null ? 'no answer' : `HTTP ${a.response_status}`} · {a.duration_ms} ms
              {a.error ? ` · ${a.error}` : ''}
            </li>
          ))}
        </ol>
      )}
    </>
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
