/** The events feed: the account's newest 50 events, newest first, each with its data; new ones appear as they happen. */
import { api } from './api.js';
import { ok, useApi } from './data.js';
import { Empty, Loading, Problem, Time } from './ui.js';

/** Every event name starts with one of these: the feed follows them all. */
const EVERY_EVENT = [''];

export function Events() {
  const { data: rows, error } = useApi(
    async () => ok(await api.GET('/api/events', { params: { query: { order: 'desc', limit: 50 } } }), 'The events could not be read.').data,
    [],
    { refreshOn: EVERY_EVENT },
  );
  return (
    <section aria-labelledby="events-title" class="card">
      <h1 id="events-title">Events</h1>
      {error && <Problem text={error} />}
      {!rows ? (
        error ? null : (
          <Loading what="events" />
        )
      ) : rows.length === 0 ? (
        <Empty text="No events yet." />
      ) : (
        <ul class="plain">
          {rows.map((e) => (
            <li key={e.id} data-event={e.id}>
              <strong>{e.event}</strong> · wallet {e.wallet_id} · <Time utc={e.created_at} />
              <pre class="mono data" tabIndex={0} aria-label={`Data of event ${e.id}`}>
                {JSON.stringify(e.data, null, 1)}
              </pre>
            </li>
          ))}
        </ul>
      )}
    </section>
  );
}
