/**
 * The one way a view reads the API: `useApi(load, deps, { refreshOn })` runs `load` when the view
 * mounts and when `deps` change (the last answer dropped: the view shows its Loading state
 * again), and again after `reload()` or an event the view follows (the last answer kept on
 * screen until the new one comes, as after an action). A failed call is thrown by `ok` as an
 * `ApiError` with the envelope's message in words; anything else that fails (the service cannot
 * be reached) is shown as one sentence. A read refused for too many requests is read again by
 * itself once the service's Retry-After has passed.
 *
 * Live views: one poller follows GET /api/events (one small read every POLL_MS while a view
 * follows events and the tab is shown) and reads again each view whose `refreshOn` matches a
 * new event's name (and its wallet, when given), once per poll however many events matched.
 */
import { useEffect, useState } from 'preact/hooks';
import { api, failure, retryAfterS, session } from './api.js';

const UNREACHABLE = 'The service could not be reached.';

/** An answer of the API that was not a success: its message in words, as a view shows it. */
export class ApiError extends Error {
  /** Refused for too many requests: the seconds after which to read again. */
  constructor(
    message: string,
    readonly retryAfterS: number | null = null,
  ) {
    super(message);
  }
}

/** The answer's `data`, or an `ApiError` with the envelope's message (`fallback` when it has none). */
export function ok<T>(r: { data?: T; error?: unknown; response?: Response }, fallback: string): T {
  if (r.data === undefined) throw new ApiError(failure(r.error, fallback), r.response ? retryAfterS(r.response) : null);
  return r.data;
}

/**
 * What a view follows: event names starting with one of `refreshOn` ('' is every event), of
 * `wallet` when given; and, while `again(answer)` holds, the answer itself (read again every
 * POLL_MS: something that changes without an event, such as a webhook delivery being sent).
 */
export interface Follow<T> {
  refreshOn?: string[];
  wallet?: string | number;
  again?: (answer: T) => boolean;
}

export interface Loaded<T> {
  /** The last answer; `null` until the first one (and again after `deps` change). */
  data: T | null;
  /** What went wrong, in words; cleared by the next answer that succeeds. */
  error: string | null;
  /** A read is under way (the first one, a reload, or one after `deps` changed). */
  loading: boolean;
  /** Read again, keeping what is shown until the answer. */
  reload: () => void;
}

/** Reads `load` when `deps` change, after `reload()` and on the events it follows; an answer to an older read is dropped. */
export function useApi<T>(load: () => Promise<T>, deps: unknown[], follow: Follow<T> = {}): Loaded<T> {
  const [data, setData] = useState<T | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [loading, setLoading] = useState(true);
  const [version, setVersion] = useState(0);
  const reload = () => setVersion((v) => v + 1);
  useEffect(() => {
    setData(null);
    setError(null);
  }, deps);
  useEffect(() => {
    let current = true;
    let retry: ReturnType<typeof setTimeout> | undefined;
    setLoading(true);
    void load()
      .then((value) => {
        if (!current) return;
        setData(value);
        setError(null);
        if (follow.again?.(value)) retry = setTimeout(reload, POLL_MS);
      })
      .catch((e: unknown) => {
        if (!current) return;
        setError(e instanceof ApiError ? e.message : UNREACHABLE);
        if (e instanceof ApiError && e.retryAfterS !== null) retry = setTimeout(reload, e.retryAfterS * 1000);
      })
      .finally(() => {
        if (current) setLoading(false);
      });
    return () => {
      current = false;
      clearTimeout(retry);
    };
  }, [...deps, version]);
  const on = follow.refreshOn ?? [];
  const wallet = follow.wallet === undefined ? null : Number(follow.wallet);
  useEffect(() => (on.length === 0 ? undefined : followEvents({ prefixes: on, wallet, fire: reload })), [on.join(' '), wallet]);
  return { data, error, loading, reload };
}

/** The rows a listing reads at once. */
export const PAGE = 20;

/** How often the poller asks for new events. */
export const POLL_MS = 2000;
/** The events read in one poll; a full page is followed by the next at once. */
const POLL_LIMIT = 100;

interface Listener {
  prefixes: string[];
  wallet: number | null;
  fire: () => void;
}

type EventRow = { event: string; wallet_id: number };

const listeners = new Set<Listener>();
/** The last event seen, for the token it was read with (another sign-in starts afresh). */
let cursor: { token: string; after: number } | null = null;
let timer: ReturnType<typeof setTimeout> | undefined;
/** A poll is under way (a second one never starts beside it). */
let polling = false;

/** Follows events while at least one listener does; returns the unfollow. */
function followEvents(l: Listener): () => void {
  listeners.add(l);
  if (listeners.size === 1 && !polling) schedule(0);
  return () => {
    listeners.delete(l);
    if (listeners.size === 0) clearTimeout(timer);
  };
}

function schedule(ms: number): void {
  clearTimeout(timer);
  timer = setTimeout(() => void poll(), ms);
}

document.addEventListener('visibilitychange', () => {
  if (!document.hidden && listeners.size > 0 && !polling) schedule(0);
});

/** One poll: where to start from (the newest event) the first time, else what came after it. */
async function poll(): Promise<void> {
  const token = session.token();
  if (listeners.size === 0 || token === null || document.hidden) return;
  polling = true;
  let next = POLL_MS;
  try {
    if (cursor?.token !== token) {
      const r = await api.GET('/api/events', { params: { query: { order: 'desc', limit: 1 } } });
      if (r.data) cursor = { token, after: Number(r.response.headers.get('x-next-cursor') ?? 0) };
      else next = Math.max(next, (retryAfterS(r.response) ?? 0) * 1000);
    } else {
      const r = await api.GET('/api/events', { params: { query: { after: cursor.after, limit: POLL_LIMIT } } });
      if (r.data) {
        cursor = { token, after: Number(r.response.headers.get('x-next-cursor') ?? cursor.after) };
        notify(r.data.data);
        if (r.data.data.length === POLL_LIMIT) next = 0;
      } else next = Math.max(next, (retryAfterS(r.response) ?? 0) * 1000);
    }
  } catch {
    // The service could not be reached: the next poll tries again.
  } finally {
    polling = false;
  }
  if (listeners.size > 0) schedule(next);
}

/** Reads again, once each, every view that follows one of `events`. */
function notify(events: EventRow[]): void {
  const due = new Set<Listener>();
  for (const e of events)
    for (const l of listeners)
      if ((l.wallet === null || l.wallet === e.wallet_id) && l.prefixes.some((p) => e.event.startsWith(p))) due.add(l);
  for (const l of due) l.fire();
}
