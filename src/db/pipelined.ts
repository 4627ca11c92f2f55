/**
 * A transaction in two steps, a read and a write, for a short transaction that runs while this
 * process is busy (the delivery worker's fan-out).
 *
 * Why: between two statements of a transaction written as `await a; await b`, the connection
 * waits for this process's event loop to come back to the code that sends `b`; under load (HTTP
 * requests queued beside it) that wait was ~5-6 ms a statement on PostgreSQL, and the fan-out's
 * statements put ~30 ms between an event and its webhook (BENCHMARKS.md, issue 23).
 * node-postgres sends a queued statement as soon as the one before it answers, inside the same
 * socket callback: statements queued together cost their round trips to the server only.
 *
 * So on PostgreSQL `begin` is queued together with the read step's statements, and the write
 * step runs once `begin` is known to have succeeded (it answered before the reads): no write
 * can run outside the transaction. `commit` follows the write step (not queued with it: a write
 * step that awaits between its statements would otherwise see its later ones run after the
 * commit). Any error rolls back and is thrown. A write step should queue its statements
 * together (`Promise.all`) to save their waits too.
 *
 * On SQLite (better-sqlite3 answers synchronously, there is no wait to save) it is an ordinary
 * transaction of the two steps.
 */
import { sql } from 'kysely';
import { dialectOf, type Db } from './dialect.js';

export async function pipelinedTransaction<R, W>(db: Db, read: (trx: Db) => Promise<R>, write: (trx: Db, read: R) => Promise<W>): Promise<W> {
  if (dialectOf(db).driver !== 'postgres') {
    return db.transaction().execute(async (trx) => write(trx, await read(trx)));
  }
  return db.connection().execute(async (conn) => {
    const begun = sql`begin`.execute(conn);
    try {
      const [, r] = await Promise.all([begun, read(conn)]);
      const w = await write(conn, r);
      await sql`commit`.execute(conn);
      return w;
    } catch (err) {
      await sql`rollback`.execute(conn).catch(() => undefined);
      throw err;
    }
  });
}
