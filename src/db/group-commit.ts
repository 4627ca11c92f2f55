/**
 * Group commit for SQLite: transactions that queue for the single connection share one COMMIT.
 *
 * With `synchronous = FULL` every COMMIT waits for an fsync of the WAL, and better-sqlite3 waits
 * on the event loop's thread: on transfer creation, where each create, each block the watcher
 * records and each event the outbox dispatches commits, those waits were the largest share of the
 * process's busy time (BENCHMARKS.md, "Transfer creation"). PostgreSQL has the same problem and
 * the same answer (`commit_delay`): when several transactions are ready together, one flush makes
 * them all durable.
 *
 * How it works (one process, one connection, used by one holder at a time):
 *
 * - The first transaction opens a group: `BEGIN IMMEDIATE`. Every transaction is a savepoint in
 *   the open group (`SAVEPOINT member` … `RELEASE member`; a failure rolls back to the savepoint
 *   only, so one transaction's error never touches another's work).
 * - The group commits at the end of the event loop's turn in which it opened (`setImmediate`):
 *   the transactions that become ready in the same turn (several creates whose node answers
 *   arrived together, the watcher's block, the outbox dispatcher) join it. If the connection is
 *   held then, the next release with nobody queued commits; a group MAX_GROUP_MS old or with
 *   MAX_GROUP_MEMBERS transactions commits at the next release whatever is queued.
 * - Nothing is reported before it is durable: a transaction's `execute()` resolves only after the
 *   COMMIT that includes it, and a query run outside any transaction while a group is open (it
 *   sees the group's writes) answers only after that COMMIT too. If the COMMIT fails, or SQLite
 *   rolls the whole transaction back after an error (disk full, I/O error), every transaction and
 *   query of the group fails with that error: none of them was durable, and none was reported.
 *
 * The guarantees of a transaction are unchanged: it is atomic (its savepoint), isolated (one
 * holder at a time, as before), and durable when its `execute()` resolves. What changes is only
 * that a transaction may wait for the ones queued behind it, at most MAX_GROUP_MS.
 */
import { CompiledQuery, SelectQueryNode, SqliteDialect, type DatabaseConnection, type Driver, type QueryResult, type SqliteDialectConfig } from 'kysely';
import type SQLite from 'better-sqlite3';

/** A group older than this commits when its holder gives the connection back, queue or not. */
export const MAX_GROUP_MS = 10;
/** A group of this many transactions commits when its holder gives the connection back. */
export const MAX_GROUP_MEMBERS = 64;

const BEGIN = CompiledQuery.raw('begin immediate');
const COMMIT = CompiledQuery.raw('commit');
const ROLLBACK = CompiledQuery.raw('rollback');
const SAVEPOINT = CompiledQuery.raw('savepoint group_member');
const RELEASE = CompiledQuery.raw('release group_member');
const ROLLBACK_TO = CompiledQuery.raw('rollback to group_member');

/** What every transaction of a group answers when SQLite rolled the group's transaction back itself. */
const GROUP_LOST = 'SQLite rolled back the transaction after an error; nothing of this commit group was saved';

/** Bounds of a group (tests set them; the service uses the defaults above). */
export interface GroupLimits {
  maxMs?: number;
  maxMembers?: number;
}

/** Transactions (and queries) waiting for one COMMIT. */
class Group {
  readonly startedAt = performance.now();
  members = 0;
  readonly durable: Promise<void>;
  resolve!: () => void;
  reject!: (err: unknown) => void;

  constructor() {
    this.durable = new Promise<void>((resolve, reject) => {
      this.resolve = resolve;
      this.reject = reject;
    });
    // Observed by each holder that joined; never an unhandled rejection.
    this.durable.catch(() => undefined);
  }
}

/** Runs a statement on the handle (as Kysely's own SQLite connection does). */
function run<R>(sqlite: SQLite.Database, query: CompiledQuery): QueryResult<R> {
  const stmt = sqlite.prepare(query.sql);
  if (stmt.reader) return { rows: stmt.all(query.parameters) as R[] };
  const { changes, lastInsertRowid } = stmt.run(query.parameters);
  return { numAffectedRows: BigInt(changes), insertId: BigInt(lastInsertRowid), rows: [] };
}

/** The single connection as one holder sees it: remembers the group its work joined. */
class GroupConnection implements DatabaseConnection {
  /** The group whose COMMIT this holder's answer waits for. */
  joined: Group | null = null;
  /**
   * Set when SQLite rolled back the group this holder's work was in: nothing more runs on this
   * holder's turn (outside a transaction, a statement would be committed on its own at once).
   */
  lost: Error | null = null;

  constructor(
    private readonly sqlite: SQLite.Database,
    private readonly driver: GroupCommitSqliteDriver,
  ) {}

  /** Transaction control, outside the group bookkeeping. */
  control(query: CompiledQuery): void {
    run(this.sqlite, query);
  }

  executeQuery<R>(query: CompiledQuery): Promise<QueryResult<R>> {
    if (this.lost) throw this.lost;
    this.joined ??= this.driver.openGroup;
    try {
      return Promise.resolve(run<R>(this.sqlite, query));
    } catch (err) {
      this.driver.checkAfterError(this);
      throw err;
    }
  }

  async *streamQuery<R>(query: CompiledQuery): AsyncIterableIterator<QueryResult<R>> {
    if (!SelectQueryNode.is(query.query)) throw new Error('SQLite streams only SELECT queries');
    if (this.lost) throw this.lost;
    this.joined ??= this.driver.openGroup;
    try {
      for (const row of this.sqlite.prepare(query.sql).iterate(query.parameters)) yield { rows: [row as R] };
    } catch (err) {
      this.driver.checkAfterError(this);
      throw err;
    }
  }
}

export class GroupCommitSqliteDriver implements Driver {
  readonly #sqlite: SQLite.Database;
  /** The holder's turn: a FIFO of the holders queued for the connection. */
  #held = false;
  readonly #queue: Array<() => void> = [];
  #group: Group | null = null;
  /** The end-of-turn flush found the connection held: the next release with nobody queued commits. */
  #flushDue = false;
  #timer: NodeJS.Immediate | null = null;
  /** Commits made, and the transactions they carried (tests and benchmarks read them). */
  readonly stats = { commits: 0, transactions: 0 };

  constructor(
    sqlite: SQLite.Database,
    private readonly limits: GroupLimits = {},
  ) {
    this.#sqlite = sqlite;
  }

  get openGroup(): Group | null {
    return this.#group;
  }

  async init(): Promise<void> {}

  async acquireConnection(): Promise<DatabaseConnection> {
    if (this.#held) await new Promise<void>((resolve) => this.#queue.push(resolve));
    this.#held = true;
    return new GroupConnection(this.#sqlite, this);
  }

  async beginTransaction(connection: DatabaseConnection): Promise<void> {
    const c = connection as GroupConnection;
    // A group whose transaction is gone (SQLite rolled it back) is failed, never joined: a
    // SAVEPOINT outside a transaction would silently open a new one, and its RELEASE commit it.
    if (this.#group !== null && !this.#sqlite.inTransaction) this.#fail(new Error(GROUP_LOST));
    if (this.#group === null) {
      c.control(BEGIN);
      this.#group = new Group();
    }
    c.joined = this.#group;
    c.control(SAVEPOINT);
  }

  async commitTransaction(connection: DatabaseConnection): Promise<void> {
    const c = connection as GroupConnection;
    // The member went on after SQLite rolled its group back (it caught the statement's error).
    if (c.lost) throw c.lost;
    c.control(RELEASE);
    this.#group!.members += 1;
  }

  async rollbackTransaction(connection: DatabaseConnection): Promise<void> {
    const c = connection as GroupConnection;
    if (this.#sqlite.inTransaction) {
      c.control(ROLLBACK_TO);
      c.control(RELEASE);
      return;
    }
    // SQLite rolled the whole transaction back itself (disk full, I/O error, RAISE(ROLLBACK)):
    // the group is gone (already failed if the failed statement was seen, checkAfterError).
    // This transaction answers with its own error; the others with this one.
    c.joined = null;
    if (!c.lost) this.#fail(new Error(GROUP_LOST));
  }

  /**
   * After a statement failed: if SQLite rolled the open group's transaction back (SQLITE_FULL,
   * an I/O error, RAISE(ROLLBACK): `inTransaction` is false), the group is failed now, whoever
   * ran the statement (a transaction, or a query outside any). Every transaction of the group
   * answers that nothing was saved; this holder answers with its statement's own error and may
   * run nothing more; the next transaction opens a new group.
   */
  checkAfterError(c: GroupConnection): void {
    if (this.#group === null || this.#sqlite.inTransaction) return;
    c.lost = new Error(GROUP_LOST);
    c.joined = null;
    this.#fail(c.lost);
  }

  async releaseConnection(connection: DatabaseConnection): Promise<void> {
    const c = connection as GroupConnection;
    const g = this.#group;
    if (g !== null) {
      const full = g.members >= (this.limits.maxMembers ?? MAX_GROUP_MEMBERS) || performance.now() - g.startedAt >= (this.limits.maxMs ?? MAX_GROUP_MS);
      if (full || (this.#flushDue && this.#queue.length === 0)) this.#commit();
      else this.#scheduleFlush();
    }
    const next = this.#queue.shift();
    if (next) next();
    else this.#held = false;
    // Answer only once durable (or with the reason it is not).
    if (c.joined !== null) await c.joined.durable;
  }

  async destroy(): Promise<void> {
    if (this.#group !== null && this.#sqlite.open) this.#commit();
    if (this.#timer) clearImmediate(this.#timer);
    this.#sqlite.close();
  }

  /** The open group commits at the end of this turn of the event loop (or at the next release after). */
  #scheduleFlush(): void {
    if (this.#timer !== null) return;
    this.#timer = setImmediate(() => {
      this.#timer = null;
      if (this.#group === null) return;
      if (this.#held) this.#flushDue = true;
      else this.#commit();
    });
  }

  #commit(): void {
    const g = this.#group!;
    try {
      run(this.#sqlite, COMMIT);
    } catch (err) {
      this.#fail(err);
      return;
    }
    this.#group = null;
    this.#flushDue = false;
    this.stats.commits += 1;
    this.stats.transactions += g.members;
    g.resolve();
  }

  #fail(err: unknown): void {
    const g = this.#group;
    this.#group = null;
    this.#flushDue = false;
    if (this.#sqlite.inTransaction) run(this.#sqlite, ROLLBACK);
    g?.reject(err);
  }
}

/** SQLite with group commit (above). */
export class GroupCommitSqliteDialect extends SqliteDialect {
  readonly #sqlite: SQLite.Database;
  readonly #limits: GroupLimits;
  #driver: GroupCommitSqliteDriver | null = null;

  constructor(config: SqliteDialectConfig & { database: SQLite.Database; limits?: GroupLimits }) {
    super(config);
    this.#sqlite = config.database;
    this.#limits = config.limits ?? {};
  }

  override createDriver(): Driver {
    this.#driver = new GroupCommitSqliteDriver(this.#sqlite, this.#limits);
    return this.#driver;
  }

  /** The driver made for the Kysely instance (its commit counts). */
  get driver(): GroupCommitSqliteDriver | null {
    return this.#driver;
  }
}
