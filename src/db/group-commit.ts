/**
 * Group commit for SQLite: transactions that queue for the single connection share one COMMIT.
 *
 * With `synchronous = FULL` every COMMIT waits for an fsync of the WAL, and better-sqlite3 waits
 * on the event loop's thread: on transfer creation, where each create, each block the watcher
 * records and each event the outbox dispatches commits, those waits were the largest share of the
 * process's busy time (BENCHMARKS.md, "Transfer create, one hot wallet"). PostgreSQL has the same problem and
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
 * - With a WAL sync (`syncWal`, wal-sync.ts; the service's store, with `synchronous = NORMAL`),
 *   the COMMIT only writes the WAL, and the wait for the disk leaves the event loop's thread: the
 *   connection goes to the next holder at once, and the group's transactions are answered when a
 *   sync of the WAL begun after their COMMIT has finished (one sync at a time; the groups
 *   committed while one runs share the next). A query outside any transaction that may have seen
 *   a commit not yet synced answers after that sync, and a write outside any transaction (its own
 *   commit) waits for the next. A failed sync fails the transactions it was to make durable, and
 *   the driver then refuses all work (after a failed fsync the kernel may have dropped the pages
 *   it could not write: what is on disk is unknown until SQLite reopens the file): restart it.
 *
 * The guarantees of a transaction are unchanged: it is atomic (its savepoint), isolated (one
 * holder at a time, as before), and durable when its `execute()` resolves. What changes is only
 * that a transaction may wait for the ones queued behind it, at most MAX_GROUP_MS, and for the
 * sync of the WAL.
 */
import {
  CompiledQuery,
  SelectQueryNode,
  SqliteDialect,
  type DatabaseConnection,
  type Driver,
  type QueryResult,
  type SqliteDialectConfig,
} from 'kysely';
import type SQLite from 'better-sqlite3';
import type { WalSync } from './wal-sync.js';

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
  return runStatement(sqlite.prepare(query.sql), query);
}

function runStatement<R>(stmt: SQLite.Statement, query: CompiledQuery): QueryResult<R> {
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
    this.joined ??= this.driver.pendingGroup;
    try {
      const stmt = this.sqlite.prepare(query.sql);
      const result = runStatement<R>(stmt, query);
      // A write outside any transaction, with no group open, committed on its own (`readonly`,
      // not `reader`: an INSERT … RETURNING is a reader that writes).
      if (!stmt.readonly && !this.sqlite.inTransaction) this.joined = this.driver.committedAlone() ?? this.joined;
      return Promise.resolve(result);
    } catch (err) {
      this.driver.checkAfterError(this);
      throw err;
    }
  }

  async *streamQuery<R>(query: CompiledQuery): AsyncIterableIterator<QueryResult<R>> {
    if (!SelectQueryNode.is(query.query)) throw new Error('SQLite streams only SELECT queries');
    if (this.lost) throw this.lost;
    this.joined ??= this.driver.pendingGroup;
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
  /** Makes the WAL durable off the event loop's thread; null: each COMMIT syncs (`synchronous = FULL`). */
  readonly #syncWal: WalSync | null;
  /** Groups committed and waiting for a sync to begin. */
  #unsynced: Group[] = [];
  /** The newest group committed and not yet durable (a query outside any transaction may have seen it). */
  #newestUnsynced: Group | null = null;
  /** The sync running, if any. */
  #syncing: Promise<void> | null = null;
  /** Set by a failed sync: the driver refuses all work from then on. */
  #broken: Error | null = null;
  /** Commits made, the transactions they carried, WAL syncs run (tests and benchmarks read them). */
  readonly stats = { commits: 0, transactions: 0, syncs: 0 };

  constructor(
    sqlite: SQLite.Database,
    private readonly limits: GroupLimits = {},
    syncWal: WalSync | null = null,
  ) {
    this.#sqlite = sqlite;
    this.#syncWal = syncWal;
  }

  /** The group whose durability a statement run now outside any transaction must wait for. */
  get pendingGroup(): Group | null {
    return this.#group ?? this.#newestUnsynced;
  }

  async init(): Promise<void> {}

  async acquireConnection(): Promise<DatabaseConnection> {
    if (this.#broken) throw this.#broken;
    if (this.#held) await new Promise<void>((resolve) => this.#queue.push(resolve));
    this.#held = true;
    return new GroupConnection(this.#sqlite, this);
  }

  /**
   * A statement outside any transaction, with no group open, wrote and committed on its own:
   * the group standing for that commit (durable at the next sync), or null without a WAL sync
   * (`synchronous = FULL` synced it).
   */
  committedAlone(): Group | null {
    if (this.#syncWal === null) return null;
    const g = new Group();
    g.members = 1;
    this.#committed(g);
    return g;
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
      const full =
        g.members >= (this.limits.maxMembers ?? MAX_GROUP_MEMBERS) ||
        performance.now() - g.startedAt >= (this.limits.maxMs ?? MAX_GROUP_MS);
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
    while (this.#syncing) await this.#syncing;
    await this.#syncWal?.close();
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
    this.#committed(g);
  }

  /** A group's COMMIT is done: durable now (FULL), or once the next sync of the WAL has run. */
  #committed(g: Group): void {
    this.stats.commits += 1;
    this.stats.transactions += g.members;
    if (this.#syncWal === null) {
      g.resolve();
      return;
    }
    if (this.#broken) {
      g.reject(this.#broken);
      return;
    }
    this.#unsynced.push(g);
    this.#newestUnsynced = g;
    this.#startSync();
  }

  /** Syncs the WAL for the groups committed so far, unless a sync runs (its end starts the next). */
  #startSync(): void {
    if (this.#syncing !== null || this.#unsynced.length === 0) return;
    const groups = this.#unsynced;
    this.#unsynced = [];
    this.stats.syncs += 1;
    this.#syncing = this.#syncWal!()
      .then(
        () => {
          for (const g of groups) g.resolve();
          if (this.#newestUnsynced === groups.at(-1)) this.#newestUnsynced = null;
        },
        (err: unknown) => this.#syncFailed(groups, err),
      )
      .finally(() => {
        this.#syncing = null;
        this.#startSync();
      });
  }

  /** The disk refused: nothing waiting is known to be durable, and the driver stops. */
  #syncFailed(groups: Group[], err: unknown): void {
    this.#broken ??= new Error(
      `the database's write-ahead log could not be synced to disk (${String((err as Error)?.message ?? err)}); restart the service`,
    );
    for (const g of [...groups, ...this.#unsynced]) g.reject(this.#broken);
    this.#unsynced = [];
    this.#newestUnsynced = null;
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
  readonly #syncWal: WalSync | null;
  #driver: GroupCommitSqliteDriver | null = null;

  /** `syncWal`: the WAL's sync, with the handle in `synchronous = NORMAL` (above); without it, FULL. */
  constructor(config: SqliteDialectConfig & { database: SQLite.Database; limits?: GroupLimits; syncWal?: WalSync }) {
    super(config);
    this.#sqlite = config.database;
    this.#limits = config.limits ?? {};
    this.#syncWal = config.syncWal ?? null;
  }

  override createDriver(): Driver {
    this.#driver = new GroupCommitSqliteDriver(this.#sqlite, this.#limits, this.#syncWal);
    return this.#driver;
  }

  /** The driver made for the Kysely instance (its commit counts). */
  get driver(): GroupCommitSqliteDriver | null {
    return this.#driver;
  }
}
