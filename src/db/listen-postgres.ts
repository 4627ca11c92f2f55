/**
 * LISTEN on a PostgreSQL connection of its own: the read cache's invalidations
 * (read-cache-postgres.ts) and the outbox's wake-ups. The connection is made again RECONNECT_MS
 * after it drops.
 *
 * A connection can also die without a word: a NAT gateway or load balancer that forgets an idle
 * connection (AWS's NAT gateway after 350 s) drops its packets without a reset, and a client
 * that only ever reads on it never learns. Its notifications stop, and the read cache, which
 * serves only while its LISTEN is up, would then serve rows other processes have changed for as
 * long as the process runs. So the connection is asked `SELECT 1` every HEARTBEAT_MS (which
 * also keeps it from looking idle to such a gateway), and an answer that has not come
 * HEARTBEAT_TIMEOUT_MS after the question counts as a drop: `down()` at once, the socket
 * destroyed, a new connection. A change missed while silent is then at most that old when the
 * cache stops serving (`up()` after the new LISTEN drops everything cached before).
 */
import pg from 'pg';

export const HEARTBEAT_MS = 2000;
export const HEARTBEAT_TIMEOUT_MS = 3000;
export const RECONNECT_MS = 1000;

export interface ListenHandlers {
  notify(payload: string): void;
  onError(err: unknown): void;
  /** The LISTEN is in place (after each (re)connection). */
  up?(): void;
  /** The connection is lost; notifications until the next `up` are missed. */
  down?(): void;
}

/** The timings above (tests shorten them). */
export interface ListenTimings {
  heartbeatMs?: number;
  timeoutMs?: number;
  reconnectMs?: number;
}

/** Listens on `channel` until the returned function is called (which resolves once the connection is closed). */
export function listenPostgres(url: string, channel: string, h: ListenHandlers, t: ListenTimings = {}): () => Promise<void> {
  const heartbeatMs = t.heartbeatMs ?? HEARTBEAT_MS;
  const timeoutMs = t.timeoutMs ?? HEARTBEAT_TIMEOUT_MS;
  let client: pg.Client | null = null;
  let closed = false;
  let retry: NodeJS.Timeout | null = null;
  let beat: (() => void) | null = null;
  const gone = new WeakSet<pg.Client>();
  // Once a client: its 'error', its 'end', a failed heartbeat and a failed connect may all report it.
  const lost = (c: pg.Client, err: unknown) => {
    if (gone.has(c)) return;
    gone.add(c);
    if (client === c) {
      client = null;
      beat?.();
      beat = null;
    }
    h.down?.();
    h.onError(err);
    drop(c);
    if (!closed) retry = setTimeout(() => void connect(), t.reconnectMs ?? RECONNECT_MS);
  };
  const connect = async () => {
    if (closed) return;
    const c = listenClient(url, channel, h);
    c.on('error', (err) => lost(c, err));
    c.on('end', () => {
      if (!closed) lost(c, new Error('LISTEN connection ended'));
    });
    try {
      await c.connect();
      await c.query(`LISTEN ${channel}`);
      if (gone.has(c)) return; // lost while connecting: already dropped, a reconnection planned
      if (closed) {
        gone.add(c);
        await c.end();
        return;
      }
      client = c;
      beat = heartbeat(c, heartbeatMs, timeoutMs, (err) => lost(c, err));
      h.up?.();
    } catch (err) {
      lost(c, err);
    }
  };
  void connect();
  return async () => {
    closed = true;
    beat?.();
    beat = null;
    h.down?.();
    if (retry) clearTimeout(retry);
    const c = client;
    client = null;
    if (c) {
      gone.add(c);
      await c.end().catch(() => undefined);
    }
  };
}

/** A client for `channel`, named after it: pg_stat_activity tells the listeners apart (their `query` is the last heartbeat). */
function listenClient(url: string, channel: string, h: ListenHandlers): pg.Client {
  const c = new pg.Client({ connectionString: url, application_name: `wallet-service-listen:${channel}` });
  c.on('notification', (n) => h.notify(n.payload ?? ''));
  return c;
}

/** Asks `SELECT 1` every `everyMs`; `onSilent` when an answer is `timeoutMs` late or the query fails. Returns the stop. */
function heartbeat(c: pg.Client, everyMs: number, timeoutMs: number, onSilent: (err: unknown) => void): () => void {
  let deadline: NodeJS.Timeout | null = null;
  const interval = setInterval(() => {
    if (deadline !== null) return; // the last question is still within its time
    deadline = setTimeout(() => onSilent(new Error(`LISTEN connection silent: no answer in ${timeoutMs} ms`)), timeoutMs);
    c.query('SELECT 1').then(
      () => {
        if (deadline !== null) clearTimeout(deadline);
        deadline = null;
      },
      (err: unknown) => onSilent(err),
    );
  }, everyMs);
  interval.unref();
  return () => {
    clearInterval(interval);
    if (deadline !== null) clearTimeout(deadline);
    deadline = null;
  };
}

/** Ends the client and destroys its socket: on a silent connection `end()` alone waits for an answer that never comes. */
function drop(c: pg.Client): void {
  c.end().catch(() => undefined);
  (c as unknown as { connection?: { stream?: { destroy?(): void } } }).connection?.stream?.destroy?.();
}
