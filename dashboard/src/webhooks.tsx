/**
 * A wallet's webhooks, each with its latest deliveries (`Retry`, their HTTP `Attempts` read when
 * asked for) and `Send test`; the list is read again after each action.
 */
import { useState } from 'preact/hooks';
import { api, failure } from './api.js';
import { ok, useApi } from './data.js';
import { Empty, Loading, Notice, Problem, StatusBadge, Time } from './ui.js';

/** A wallet's webhooks, each with its latest deliveries (`Retry`) and `Send test`. */
export function Webhooks({ wallet }: { wallet: string }) {
  const {
    data: listed,
    error,
    reload,
  } = useApi(
    async () => {
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
    },
    [wallet],
    // A delivery still being sent changes without an event: read again until it is settled.
    { refreshOn: [''], wallet, again: (hooks) => hooks.some((h) => h.deliveries.some((d) => d.status === 'pending')) },
  );
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
      ) : !listed ? (
        <Loading what="webhooks" />
      ) : listed.length === 0 ? (
        <Empty text="No webhooks yet." />
      ) : (
        listed.map(({ hook, deliveries }) => {
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
