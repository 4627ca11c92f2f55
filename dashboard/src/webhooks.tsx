/**
 * A wallet's webhooks: `New webhook` (a URL, a type and its events), each with `Edit` (URL,
 * events, enabled), `Send test` and its latest deliveries (their HTTP attempts read when asked
 * for; `Retry` on those not delivered); the list is read again after each action.
 */
import { useState } from 'preact/hooks';
import { api, failure } from './api.js';
import { ok, useApi } from './data.js';
import { Field, Opener, problems, useOpen, Submit, useForm, valueOf, type Form } from './forms.js';
import { Empty, Loading, Notice, Problem, StatusBadge, Time } from './ui.js';
import { EVENTS_BY_TYPE, WEBHOOK_TYPES, type WebhookType } from '../../src/modules/events/events.catalogue.js';

type Hook = Awaited<ReturnType<typeof listHooks>>[number]['hook'];

async function listHooks(wallet: string) {
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
}

/** "1 attempt", "3 attempts". */
export const attemptsText = (n: number) => `${n} ${n === 1 ? 'attempt' : 'attempts'}`;

/** A wallet's webhooks, each with its latest deliveries, `Edit`, `Send test` and `Retry`. */
export function Webhooks({ wallet }: { wallet: string }) {
  const {
    data: listed,
    error,
    reload,
  } = useApi(
    () => listHooks(wallet),
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
      <NewWebhook wallet={wallet} onCreated={reload} />
      <Notice message={message} />
      {error ? (
        <Problem text={error} />
      ) : !listed ? (
        <Loading what="webhooks" />
      ) : listed.length === 0 ? (
        <Empty text="No webhooks yet." />
      ) : (
        listed.map(({ hook, deliveries }) => (
          <div key={hook.id} class="hook" data-webhook={hook.id}>
            <HookHead wallet={wallet} hook={hook} act={act} onSaved={reload} />
            {deliveries.length === 0 ? (
              <Empty text="No deliveries yet." />
            ) : (
              <ul class="plain">
                {deliveries.map((d) => (
                  <Delivery key={d.id} wallet={wallet} webhook={String(hook.id)} d={d} act={act} />
                ))}
              </ul>
            )}
          </div>
        ))
      )}
    </section>
  );
}

type Act = (label: string, call: () => Promise<{ data?: unknown; error?: unknown }>) => Promise<void>;

function HookHead({ wallet, hook, act, onSaved }: { wallet: string; hook: Hook; act: Act; onSaved: () => void }) {
  const [editing, setEditing] = useState(false);
  const webhook = String(hook.id);
  return (
    <>
      <p>
        <StatusBadge status={hook.status} /> <span class="mono">{hook.url}</span> · {hook.type}: {hook.events.join(', ')}
        {hook.disabled_reason
          ? ` · turned off: ${hook.disabled_reason === 'gone' ? 'the receiver answered 410 Gone' : 'every delivery failed'}`
          : ''}
        <button type="button" aria-expanded={editing} aria-label={`Edit webhook ${hook.id}`} onClick={() => setEditing(!editing)}>
          Edit
        </button>
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
      {editing && (
        <EditWebhook
          wallet={wallet}
          hook={hook}
          onSaved={() => {
            setEditing(false);
            onSaved();
          }}
        />
      )}
    </>
  );
}

function Delivery({
  wallet,
  webhook,
  d,
  act,
}: {
  wallet: string;
  webhook: string;
  d: {
    id: number;
    status: string;
    event: string;
    attempts: number;
    response_status: number | null;
    last_error: string | null;
    created_at: string;
  };
  act: Act;
}) {
  return (
    <li data-delivery={d.id}>
      <StatusBadge status={d.status} /> {d.event} · <span data-attempt-count>{attemptsText(d.attempts)}</span>
      {d.response_status !== null ? ` · HTTP ${d.response_status}` : ''}
      {d.last_error ? ` · ${d.last_error}` : ''} · <Time utc={d.created_at} />
      <Attempts wallet={wallet} webhook={webhook} delivery={d.id} />
      {d.status !== 'delivered' && (
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
      )}
    </li>
  );
}

const LABELS = { url: 'URL', type: 'Type', events: 'Events', status: 'Enabled' };

/** The events a webhook of `type` may subscribe to: `*` (all of them, those added later too) or some. */
function EventsField({
  form,
  type,
  events,
  onChange,
}: {
  form: Form;
  type: WebhookType;
  events: string[];
  onChange: (events: string[]) => void;
}) {
  const all = events.includes('*');
  const toggle = (name: string, on: boolean) =>
    onChange(on ? [...events.filter((e) => e !== '*'), name] : events.filter((e) => e !== name));
  const { id, ...control } = form.control('events');
  return (
    <fieldset
      {...control}
      id={id}
      tabIndex={-1}
      onChange={() => form.changed('events')}
      aria-describedby={form.errors.events ? `${id}-error` : undefined}
    >
      <legend>{LABELS.events}</legend>
      <label class="check">
        <input type="checkbox" checked={all} onChange={(e) => onChange(e.currentTarget.checked ? ['*'] : [])} /> All {type} events
      </label>
      {EVENTS_BY_TYPE[type].map((name) => (
        <label key={name} class="check">
          <input
            type="checkbox"
            checked={all || events.includes(name)}
            disabled={all}
            onChange={(e) => toggle(name, e.currentTarget.checked)}
          />{' '}
          {name}
        </label>
      ))}
      {form.errors.events && (
        <p class="field-error" id={`${id}-error`}>
          {form.errors.events}
        </p>
      )}
    </fieldset>
  );
}

const noEvents = (events: string[]) => problems({ events: events.length === 0 ? 'Choose at least one event.' : null });

/** `New webhook`: its URL, type and events (all of the type by default). */
function NewWebhook({ wallet, onCreated }: { wallet: string; onCreated: () => void }) {
  const [url, setUrl] = useState('');
  const [type, setType] = useState<WebhookType>('charge');
  const [events, setEvents] = useState<string[]>(['*']);
  const [message, setMessage] = useState<string | null>(null);
  const form = useForm('new-webhook', LABELS);
  const [open, show, hide] = useOpen(form);
  const create = async (e: Event) => {
    e.preventDefault();
    const created = await form.submit(
      () => api.POST('/api/wallet/{wallet}/webhook/create', { params: { path: { wallet } }, body: { url: url.trim(), type, events } }),
      () => ({ ...problems({ url: url.trim() === '' ? 'URL is required.' : null }), ...noEvents(events) }),
    );
    if (!created) return;
    setMessage(`Webhook ${created.data.id} created.`);
    hide();
    setUrl('');
    onCreated();
  };
  if (!open)
    return (
      <Opener text="New webhook" onOpen={show}>
        <Notice message={message} />
      </Opener>
    );
  return (
    <form class="inline-form" ref={form.ref} onSubmit={(e) => void create(e)} aria-labelledby="new-webhook-title" noValidate>
      <h3 id="new-webhook-title">New webhook</h3>
      <Field form={form} name="url" hint="http(s) address of your server that receives the events.">
        {(p) => (
          <input {...p} type="url" class="mono" autocomplete="off" spellcheck={false} value={url} onInput={(e) => setUrl(valueOf(e))} />
        )}
      </Field>
      <Field form={form} name="type">
        {(p) => (
          <select
            {...p}
            value={type}
            onChange={(e) => {
              setType(valueOf(e) as WebhookType);
              setEvents(['*']);
            }}
          >
            {WEBHOOK_TYPES.map((t) => (
              <option key={t}>{t}</option>
            ))}
          </select>
        )}
      </Field>
      <EventsField form={form} type={type} events={events} onChange={setEvents} />
      <Submit form={form} text="Create webhook" busyText="Creating the webhook…" />
    </form>
  );
}

/** `Edit`: the URL, the events and whether it is enabled (an enabled webhook that the service turned off starts again). */
function EditWebhook({ wallet, hook, onSaved }: { wallet: string; hook: Hook; onSaved: () => void }) {
  const [url, setUrl] = useState(hook.url);
  const [events, setEvents] = useState<string[]>(hook.events);
  const [enabled, setEnabled] = useState(hook.status === 'active');
  const form = useForm(`edit-webhook-${hook.id}`, LABELS);
  const type = (WEBHOOK_TYPES as readonly string[]).includes(hook.type) ? (hook.type as WebhookType) : null;
  const save = async (e: Event) => {
    e.preventDefault();
    const saved = await form.submit(
      () =>
        api.POST('/api/wallet/{wallet}/webhook/{webhook}/update', {
          params: { path: { wallet, webhook: String(hook.id) } },
          body: { url: url.trim(), events, status: enabled ? 'active' : 'inactive' },
        }),
      () => ({ ...problems({ url: url.trim() === '' ? 'URL is required.' : null }), ...noEvents(events) }),
    );
    if (saved) onSaved();
  };
  return (
    <form class="inline-form" ref={form.ref} onSubmit={(e) => void save(e)} aria-label={`Edit webhook ${hook.id}`} noValidate>
      <Field form={form} name="url">
        {(p) => (
          <input {...p} type="url" class="mono" autocomplete="off" spellcheck={false} value={url} onInput={(e) => setUrl(valueOf(e))} />
        )}
      </Field>
      {type && <EventsField form={form} type={type} events={events} onChange={setEvents} />}
      <label class="check" for={`edit-webhook-${hook.id}-status`}>
        <input
          id={`edit-webhook-${hook.id}-status`}
          type="checkbox"
          checked={enabled}
          onChange={(e) => setEnabled(e.currentTarget.checked)}
        />{' '}
        Enabled
      </label>
      <Submit form={form} text="Save webhook" busyText="Saving…" />
    </form>
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
