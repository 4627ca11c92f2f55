/**
 * Transactions whose statements travel together: PostgreSQL's pipeline mode.
 *
 * Why: every statement of a transaction written as `await a; await b` is a round trip to the
 * server, and on a busy machine a round trip is not the server's work but two wake-ups (the
 * backend's, then this process's, each waiting for a core it shares): on a hot wallet's create
 * `writev` was a large share of the service's busy time, and the wallet's lock was held across
 * several of them (BENCHMARKS.md). Statements that do not need each other's answers can be sent
 * in one write and answered in one: the server runs them one after the other, in the order sent,
 * inside the transaction, each seeing what the ones before it did. A statement queued behind a
 * `FOR UPDATE` runs once the lock is granted, without a round trip to this process.
 *
 * `pipelinedTransaction(db, body)`: on PostgreSQL `body` gets a transaction on one pooled
 * connection (node-postgres's pipeline mode, `pipeline: true` in src/db/index.ts) where
 * statements issued together (`Promise.all`, or issued before the one before them is awaited)
 * go to the server together; `begin` is sent with the first of them. Statements still run in the
 * order issued and a failed one aborts the transaction: every later one fails with it, and the
 * transaction is rolled back and the first error thrown, as with Kysely's own transactions.
 *
 * `end(last)`, at most once, as the body's last step: `last` issues its statements at its call
 * (no `await` before them) and `commit` is queued right behind them, one round trip less. If one
 * of them fails the server has aborted the transaction and the queued `commit` only ends it; the
 * error is thrown. If `last` issued nothing at its call (it awaited first, or threw), nothing is
 * committed with it: its result is awaited and the commit follows on its own, as if `end` had
 * not been used. A statement issued after the commit was queued is refused (it would run outside
 * the transaction): `last` must not await between its statements.
 *
 * On SQLite (better-sqlite3 answers synchronously, there is no round trip to save) it is an
 * ordinary transaction, and `end(last)` is `last(trx)`.
 */
import { Transaction, sql, type DatabaseConnection, type Dialect, type Driver } from 'kysely';
import type pg from 'pg';
import type { Db } from './dialect.js';
import { wrapClientQuery } from './pool-query.js';
import type { Database } from './types.js';

/** Issues the last statements of a pipelined transaction with its commit (see above). */
export type EndWith = <X>(last: (trx: Db) => Promise<X>) => Promise<X>;

/** The PostgreSQL dialect of each database handle whose pool runs in pipeline mode. */
const pipelining = new WeakMap<Db, Dialect>();

/** Marks `db` (a PostgreSQL handle whose pool's clients have `pipeline: true`) for pipelined transactions. */
export function enablePipelining(db: Db, dialect: Dialect): void {
  pipelining.set(db, dialect);
}

/**
 * Every pool connection's statements issued in one turn of the event loop leave in one write:
 * the socket is corked at the first and uncorked at the end of the turn (node-postgres corks
 * each statement's messages itself, not a batch of statements). Statements sent together wake
 * the server's backend once, not once each.
 */
export function coalesceWrites(pool: pg.Pool): void {
  wrapClientQuery(pool, (query, client) => {
    const stream = (client as unknown as { connection: { stream: { cork(): void; uncork(): void } } }).connection.stream;
    let corked = false;
    const uncork = () => {
      corked = false;
      stream.uncork();
    };
    return (...args: unknown[]) => {
      if (!corked) {
        corked = true;
        stream.cork();
        process.nextTick(uncork);
      }
      return query(...args);
    };
  });
}

const refuse = (): Promise<never> => Promise.reject(new Error('a pipelined transaction cannot open another transaction or connection'));
/** The bound transaction's driver: it only runs statements on its one connection. */
const BOUND_DRIVER: Driver = {
  init: () => Promise.resolve(),
  acquireConnection: refuse,
  beginTransaction: refuse,
  commitTransaction: refuse,
  rollbackTransaction: refuse,
  releaseConnection: () => Promise.resolve(),
  destroy: () => Promise.resolve(),
};

export async function pipelinedTransaction<T>(db: Db, body: (trx: Db, end: EndWith) => Promise<T>): Promise<T> {
  const dialect = pipelining.get(db);
  if (dialect === undefined) return db.transaction().execute((trx) => body(trx, (last) => last(trx)));
  return db.getExecutor().provideConnection((connection) => onConnection(db, dialect, connection, body));
}

async function onConnection<T>(
  db: Db,
  dialect: Dialect,
  connection: DatabaseConnection,
  body: (trx: Db, end: EndWith) => Promise<T>,
): Promise<T> {
  let issued = 0;
  let ended = false;
  // Every statement straight to the connection, without Kysely's one-at-a-time hand-over: the
  // client sends each as it is issued (pipeline mode), in the order issued.
  const executor = db.getExecutor().withConnectionProvider({
    provideConnection: (consume) => {
      if (ended) return Promise.reject(new Error('statement issued after its pipelined transaction was committed'));
      issued += 1;
      return consume(connection);
    },
  });
  const trx = new Transaction<Database>({ config: { dialect }, dialect, driver: BOUND_DRIVER, executor }) as unknown as Db;
  const begun = sql`begin`.execute(trx);
  // Its failure is every later statement's failure too; it is awaited before any commit.
  begun.catch(() => undefined);
  const end: EndWith = async (last) => {
    if (ended) throw new Error('end() called twice in one pipelined transaction');
    const before = issued;
    const result = last(trx);
    if (issued === before) return result;
    const committed = sql`commit`.execute(trx);
    ended = true;
    const [x] = await Promise.all([result, committed, begun]);
    return x;
  };
  try {
    const result = await body(trx, end);
    await begun;
    if (!ended) {
      const committed = sql`commit`.execute(trx);
      ended = true;
      await committed;
    }
    return result;
  } catch (err) {
    if (!ended) {
      ended = true;
      await connection.executeQuery(sql`rollback`.compile(trx)).catch(() => undefined);
    }
    throw err;
  }
}
