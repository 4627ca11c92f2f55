/**
 * The read cache's view of writes on PostgreSQL (src/db/read-cache.ts).
 *
 * - This process's writes: every pool client's queries pass through `trackPoolWrites`, which
 *   collects the tables a transaction writes and stamps them once its COMMIT or ROLLBACK has
 *   been answered (an autocommitted statement: once it has been answered). A read that started
 *   before that moment is never kept, so no row from before the commit outlives it.
 * - Other processes' writes: migration 009's triggers NOTIFY `wallet_cache` with the table's
 *   name at commit; `cacheChanges` stamps that table on receipt. While the LISTEN connection is
 *   down nothing is served from the cache (notifications may be missed); when it is back,
 *   everything cached before is dropped.
 */
import type pg from 'pg';
import type { ExternalChanges, TableVersions } from './read-cache.js';
import { wrapClientQuery } from './pool-query.js';

const BEGIN = /^\s*(begin|start\s+transaction)\b/i;
const END = /^\s*(commit|end|rollback)\s*(;|$|\s+(work|transaction|and)\b)/i;

/** Wraps each new pool client's `query` so that the tables its writes touch are stamped at commit. */
export function trackPoolWrites(pool: pg.Pool, versions: TableVersions): void {
  wrapClientQuery(pool, (query) => {
    let inTransaction = false;
    let pending = new Set<string>();
    let all = false;
    return (...args: unknown[]) => {
      const first = args[0] as string | { text?: unknown } | undefined;
      const text = typeof first === 'string' ? first : typeof first?.text === 'string' ? first.text : null;
      if (text === null) return query(...args);
      if (BEGIN.test(text)) inTransaction = true;
      const effect = versions.effectOf(text);
      if (effect === 'all') all = true;
      else for (const t of effect) pending.add(t);
      const ends = END.test(text);
      if ((inTransaction && !ends) || (!all && pending.size === 0)) {
        if (ends) inTransaction = false;
        return query(...args);
      }
      const tables = all ? 'all' : pending;
      inTransaction = false;
      pending = new Set();
      all = false;
      const result = query(...args);
      // Stamped when the statement (the COMMIT) is answered, before the caller's continuation.
      if (result && typeof (result as Promise<unknown>).then === 'function') {
        (result as Promise<unknown>).then(
          () => versions.stamp(tables),
          () => versions.stamp(tables),
        );
      } else {
        versions.stamp(tables);
      }
      return result;
    };
  });
}

/** The cache's external check on PostgreSQL: served only while the LISTEN connection is up. */
export function listenerGate(): { gate: ExternalChanges; up(this: void, versions: TableVersions): void; down(this: void): void } {
  let listening = false;
  return {
    gate: () => listening,
    up: (versions) => {
      versions.stampAll();
      listening = true;
    },
    down: () => {
      listening = false;
    },
  };
}
