/**
 * A transaction in two steps, a read and a write, for a short transaction that runs while this
 * process is busy (the delivery worker's fan-out).
 *
 * Why: between two statements of a transaction written as `await a; await b`, the connection
 * waits for this process's event loop to come back to the code that sends `b`; under load (HTTP
 * requests queued beside it) that wait was ~5-6 ms a statement on PostgreSQL, and the fan-out's
 * statements put ~30 ms between an event and its webhook (BENCHMARKS.md, issue 23). Statements
 * issued together on one connection run one after the other in the order issued, each sent as
 * soon as the one before it answers (kysely's single-connection provider hands the connection
 * on in microtasks, in the same turn of the event loop as the answer): they cost their round
 * trips to the server only.
 *
 * So on PostgreSQL `begin` is queued together with the read step's statements, and the write
 * step runs once `begin` is known to have succeeded (it answered before the reads): no write
 * can run outside the transaction. `commit` follows the write step, or is queued right behind
 * it when the caller declares the step one statement issued at its call (`oneStatementWrite`;
 * not otherwise: a step that awaits between its statements would see its later ones run after
 * the commit). Any error rolls back and is thrown. A write step of several statements should
 * queue them together (`Promise.all`) to save their waits too.
 *
 * On SQLite (better-sqlite3 answers synchronously, there is no wait to save) it is an ordinary
 * transaction of the two steps.
 */
import { sql } from 'kysely';
import { dialectOf, type Db } from './dialect.js';

export interface PipelineOptions {
  /**
   * The write step issues at most one statement, at its call (no `await` before it): the commit
   * is then queued right behind it, one round trip less. If the statement fails the server
   * aborts the transaction, so the queued commit only ends it, and the error is thrown. (A write
   * step that throws before issuing its statement lets the commit keep what the read step
   * wrote: use it where that is a state of its own, as the fan-out's marks of events no webhook
   * wants are.)
   */
  oneStatementWrite?: boolean;
}

export async function pipelinedTransaction<R, W>(
  db: Db,
  read: (trx: Db) => Promise<R>,
  write: (trx: Db, read: R) => Promise<W>,
  opts: PipelineOptions = {},
): Promise<W> {
  if (dialectOf(db).driver !== 'postgres') {
    return db.transaction().execute(async (trx) => write(trx, await read(trx)));
  }
  return db.connection().execute(async (conn) => {
    const begun = sql`begin`.execute(conn);
    try {
      const [, r] = await Promise.all([begun, read(conn)]);
      if (opts.oneStatementWrite) {
        // The connection runs statements in the order they were issued (kysely's single
        // connection provider): the write's, then the commit.
        const [w] = await Promise.all([write(conn, r), sql`commit`.execute(conn)]);
        return w;
      }
      const w = await write(conn, r);
      await sql`commit`.execute(conn);
      return w;
    } catch (err) {
      await sql`rollback`.execute(conn).catch(() => undefined);
      throw err;
    }
  });
}
