/**
 * The pool's per-connection `query` wrappers (named statements, the read cache's commit stamps,
 * coalesced writes) are installed here, one way: each new connection's `query` is replaced by
 * `wrap(query)`, where `query` is the connection's own as it was (wrappers installed later
 * wrap the earlier ones).
 */
import type pg from 'pg';

export type Query = (...args: unknown[]) => unknown;

export function wrapClientQuery(pool: pg.Pool, wrap: (query: Query, client: pg.PoolClient) => Query): void {
  pool.on('connect', (client) => {
    const query = client.query.bind(client) as Query;
    (client as unknown as { query: Query }).query = wrap(query, client);
  });
}
