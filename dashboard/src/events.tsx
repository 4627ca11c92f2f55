/** The events feed: the account's newest 50 events, newest first, each with its data. */
import { api, type Data } from './api.js';
import { ok, useApi } from './data.js';
import { Empty, Loading, Problem, Time } from './ui.js';

type EventRow = Data<'/api/events'>[number];

export function Events() {
  const { data: rows, error } = useApi(async () => {
    // Oldest first from a cursor: read to the end, show the newest 50.
    let after = 0;
    const all: EventRow[] = [];
    for (let i = 0; i < 20; i++) {
      const r = await api.GET('/api/events', { params: { query: { after, limit: 1000 } } });
      const page = ok(r, 'The events could not be read.').data;
      all.push(...page);
      if (page.length < 1000) break;
      after = Number(r.response.headers.get('x-next-cursor') ?? after);
    }
    return all.slice(-50).reverse();
  }, []);
  return (
    <section aria-labelledby="events-title" class="card">
      <h1 id="events-title">Events</h1>
      {error ? (
        <Problem text={error} />
      ) : !rows ? (
        <Loading what="events" />
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
