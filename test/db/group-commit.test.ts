/**
 * SQLite group commit (src/db/group-commit.ts), on a real database file with a second connection
 * reading what is durable:
 * - transactions ready together share one COMMIT, and each is committed when its execute() resolves;
 * - one transaction's failure rolls back only its own work;
 * - a failed COMMIT, or SQLite rolling the whole transaction back, fails every transaction of the
 *   group (none reported as done) and the next transaction works; also when the statement that
 *   made SQLite roll back (a full disk: a tiny max_page_count) was a query outside any
 *   transaction, or one whose transaction caught the error and went on;
 * - a query outside any transaction that ran inside an open group answers only after its COMMIT.
 * (This is the SQLite driver, tested the same in both runs of the suite.)
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import SQLite from 'better-sqlite3';
import { Kysely, sql } from 'kysely';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { GroupCommitSqliteDialect, MAX_GROUP_MEMBERS, type GroupCommitSqliteDriver, type GroupLimits } from '../../src/db/group-commit.js';
import { walSyncer, type WalSync } from '../../src/db/wal-sync.js';

interface Schema {
  items: { id: number; name: string };
  parents: { id: number };
  children: { id: number; parent_id: number };
  doomed: { id: number };
}

let dir: string;
let db: Kysely<Schema>;
let driver: GroupCommitSqliteDriver;
/** Another connection on the same file: sees only what has been committed. */
let other: SQLite.Database;

const committedNames = () => (other.prepare('select name from items order by id').all() as Array<{ name: string }>).map((r) => r.name);
const insert = (trx: Kysely<Schema>, name: string) =>
  trx
    .insertInto('items')
    .values({ name } as never)
    .execute();

/**
 * Opens the database; the group bounds are lifted unless given (their timing is tested apart).
 * With `syncWal` (given the WAL's path), as the service opens it: `synchronous = NORMAL` and the
 * WAL synced by the driver; without, `synchronous = FULL`.
 */
async function open(limits: GroupLimits = { maxMs: 60_000, maxMembers: 10_000 }, syncWal?: (walPath: string) => WalSync): Promise<void> {
  dir = mkdtempSync(join(tmpdir(), 'group-commit-'));
  const file = join(dir, 'db.sqlite');
  const handle = new SQLite(file);
  handle.pragma('journal_mode = WAL');
  handle.pragma(syncWal ? 'synchronous = NORMAL' : 'synchronous = FULL');
  handle.pragma('foreign_keys = ON');
  const dialect = new GroupCommitSqliteDialect({ database: handle, limits, ...(syncWal ? { syncWal: syncWal(`${file}-wal`) } : {}) });
  db = new Kysely<Schema>({ dialect });
  await sql`create table items (id integer primary key, name text not null)`.execute(db);
  await sql`create table parents (id integer primary key)`.execute(db);
  await sql`create table children (id integer primary key, parent_id integer not null references parents (id) deferrable initially deferred)`.execute(
    db,
  );
  await sql`create table doomed (id integer primary key)`.execute(db);
  await sql`create trigger doomed_insert before insert on doomed begin select raise(rollback, 'trigger rolled back the transaction'); end`.execute(
    db,
  );
  driver = dialect.driver!;
  other = new SQLite(file, { readonly: true });
}

beforeEach(() => open());

async function close(): Promise<void> {
  other.close();
  await db.destroy();
  rmSync(dir, { recursive: true, force: true });
}

async function reopen(limits: GroupLimits, syncWal?: (walPath: string) => WalSync): Promise<void> {
  await close();
  await open(limits, syncWal);
}

afterEach(close);

/** Lets the file grow by a few pages only: a large row then fails with SQLITE_FULL, which rolls SQLite's transaction back. */
async function nearlyFullDisk(): Promise<string> {
  const pages = (other.prepare('pragma page_count').get() as { page_count: number }).page_count;
  await sql.raw(`pragma max_page_count = ${pages + 10}`).execute(db);
  return 'x'.repeat(200_000);
}

/** Every transaction that reported success is durable, and none that failed is. */
function expectAnswersMatchDisk(names: string[], results: PromiseSettledResult<unknown>[]): void {
  const committed = committedNames();
  names.forEach((name, i) =>
    expect(`${name.slice(0, 20)}: ${results[i]!.status}`).toBe(
      `${name.slice(0, 20)}: ${committed.includes(name) ? 'fulfilled' : 'rejected'}`,
    ),
  );
}

describe('SQLite group commit', () => {
  it('commits transactions that are ready together once, each durable when its execute() resolves', async () => {
    const before = { ...driver.stats };
    const seenAtResolve: boolean[] = [];
    await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        db
          .transaction()
          .execute((trx) => insert(trx, `t${i}`))
          .then(() => seenAtResolve.push(committedNames().includes(`t${i}`))),
      ),
    );
    expect(seenAtResolve).toHaveLength(20);
    expect(seenAtResolve.every(Boolean)).toBe(true);
    expect(committedNames()).toHaveLength(20);
    expect(driver.stats.transactions - before.transactions).toBe(20);
    // Twenty transactions started in one turn of the event loop share one COMMIT.
    expect(driver.stats.commits - before.commits).toBe(1);
  });

  it('commits a group when it is too old or too long, at the next release', async () => {
    const ready = () => Promise.all(Array.from({ length: 10 }, (_, i) => db.transaction().execute((trx) => insert(trx, `t${i}`))));
    await reopen({ maxMs: 0 });
    let before = driver.stats.commits;
    await ready();
    expect(driver.stats.commits - before).toBe(10);
    await reopen({ maxMs: 60_000, maxMembers: 3 });
    before = driver.stats.commits;
    await ready();
    // Groups of 3, 3, 3, then the last one alone at the end of the turn.
    expect(driver.stats.commits - before).toBe(4);
    expect(committedNames()).toHaveLength(10);
    expect(MAX_GROUP_MEMBERS).toBe(64);
  });

  it('commits a lone transaction at once (the end of the same turn)', async () => {
    const before = driver.stats.commits;
    await db.transaction().execute((trx) => insert(trx, 'alone'));
    expect(committedNames()).toEqual(['alone']);
    expect(driver.stats.commits - before).toBe(1);
  });

  it('rolls back only the transaction that failed', async () => {
    const results = await Promise.allSettled([
      db.transaction().execute((trx) => insert(trx, 'a')),
      db.transaction().execute(async (trx) => {
        await insert(trx, 'b');
        throw new Error('b fails');
      }),
      db.transaction().execute((trx) => insert(trx, 'c')),
    ]);
    expect(results.map((r) => r.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
    expect((results[1] as PromiseRejectedResult).reason.message).toBe('b fails');
    expect(committedNames()).toEqual(['a', 'c']);
  });

  it('fails every transaction of a group whose COMMIT fails, and recovers', async () => {
    // A deferred foreign key is checked at COMMIT: the second transaction makes the commit fail.
    const results = await Promise.allSettled([
      db.transaction().execute((trx) => insert(trx, 'first')),
      db.transaction().execute((trx) =>
        trx
          .insertInto('children')
          .values({ parent_id: 999 } as never)
          .execute(),
      ),
      db.transaction().execute((trx) => insert(trx, 'third')),
    ]);
    expect(results.map((r) => r.status)).toEqual(['rejected', 'rejected', 'rejected']);
    for (const r of results) expect(String((r as PromiseRejectedResult).reason)).toMatch(/FOREIGN KEY constraint failed/);
    expect(committedNames()).toEqual([]);
    expect(other.prepare('select count(*) as n from children').get()).toEqual({ n: 0 });
    await db.transaction().execute((trx) => insert(trx, 'after'));
    expect(committedNames()).toEqual(['after']);
  });

  it('fails the whole group when SQLite rolls the transaction back itself, and recovers', async () => {
    const results = await Promise.allSettled([
      db.transaction().execute((trx) => insert(trx, 'before')),
      db.transaction().execute((trx) => trx.insertInto('doomed').defaultValues().execute()),
      db.transaction().execute((trx) => insert(trx, 'after-doomed')),
    ]);
    expect(results[0].status).toBe('rejected');
    expect(String((results[0] as PromiseRejectedResult).reason)).toMatch(/nothing of this commit group was saved/);
    expect(String((results[1] as PromiseRejectedResult).reason)).toMatch(/trigger rolled back the transaction/);
    // The third ran after the rollback, in a group of its own.
    expect(results[2].status).toBe('fulfilled');
    expect(committedNames()).toEqual(['after-doomed']);
  });

  it('fails the whole group when a query outside any transaction fills the disk (SQLite rolls back), and the next group starts clean', async () => {
    const big = await nearlyFullDisk();
    const results = await Promise.allSettled([
      db.transaction().execute((trx) => insert(trx, 'before')),
      db
        .insertInto('items')
        .values({ name: big } as never)
        .execute(),
      db.transaction().execute((trx) => insert(trx, 'after-full')),
      db.transaction().execute((trx) => insert(trx, 'after-full-2')),
    ]);
    expectAnswersMatchDisk(['before', big, 'after-full', 'after-full-2'], results);
    expect(results.map((r) => r.status)).toEqual(['rejected', 'rejected', 'fulfilled', 'fulfilled']);
    expect(String((results[0] as PromiseRejectedResult).reason)).toMatch(/nothing of this commit group was saved/);
    expect(String((results[1] as PromiseRejectedResult).reason)).toMatch(/database or disk is full/);
    expect(committedNames()).toEqual(['after-full', 'after-full-2']);
    // The next two ready together share one new group (one COMMIT), as before the failure.
    const before = driver.stats.commits;
    await Promise.all([
      db.transaction().execute((trx) => insert(trx, 'later-1')),
      db.transaction().execute((trx) => insert(trx, 'later-2')),
    ]);
    expect(driver.stats.commits - before).toBe(1);
    expect(committedNames()).toEqual(['after-full', 'after-full-2', 'later-1', 'later-2']);
  });

  it('a transaction that catches the full-disk error and goes on writes nothing, and its group fails', async () => {
    const big = await nearlyFullDisk();
    const results = await Promise.allSettled([
      db.transaction().execute((trx) => insert(trx, 'before')),
      db.transaction().execute(async (trx) => {
        await insert(trx, big).catch(() => undefined); // swallowed: SQLite has rolled the group back meanwhile
        await insert(trx, 'went-on');
      }),
      db.transaction().execute((trx) => insert(trx, 'next')),
    ]);
    expectAnswersMatchDisk(['before', 'went-on', 'next'], results);
    expect(results.map((r) => r.status)).toEqual(['rejected', 'rejected', 'fulfilled']);
    expect(committedNames()).toEqual(['next']);
    for (const r of results.slice(0, 2))
      expect(String((r as PromiseRejectedResult).reason)).toMatch(/nothing of this commit group was saved/);
  });

  it('answers a query outside any transaction that ran in an open group only after its COMMIT', async () => {
    const write = db.transaction().execute((trx) => insert(trx, 'w'));
    let committedWhenAnswered: string[] | null = null;
    const read = db
      .selectFrom('items')
      .select('name')
      .execute()
      .then((rows) => {
        committedWhenAnswered = committedNames();
        return rows.map((r) => r.name);
      });
    expect(await read).toEqual(['w']);
    expect(committedWhenAnswered).toEqual(['w']);
    await write;
  });
});

/**
 * The WAL's sync as the test steers it: the real one (the WAL is really synced), then, once
 * `hold` is set, each call also waits for `release()`; once `fail` is set, each call fails as a
 * disk refusing the sync would.
 */
function steeredSync() {
  const waiting: Array<() => void> = [];
  const steer = {
    hold: false,
    fail: false,
    waiting,
    release: () => waiting.shift()!(),
    factory: (walPath: string) => walPath as unknown as WalSync,
  };
  steer.factory = (walPath: string): WalSync => {
    const real = walSyncer(walPath);
    const sync = async () => {
      if (steer.fail) throw Object.assign(new Error('EIO: i/o error, fsync'), { code: 'EIO' });
      await real();
      if (steer.hold) await new Promise<void>((resolve) => waiting.push(resolve));
    };
    return Object.assign(sync, { close: () => real.close() });
  };
  releaseHeld = () => {
    steer.hold = false;
    while (waiting.length > 0) steer.release();
  };
  return steer;
}

/** Lets every held sync go (after each test, before the database closes: closing waits for them). */
let releaseHeld = () => {};
afterEach(() => releaseHeld());

/** Lets the event loop turn a few times (the driver's end-of-turn commit, a sync's answer). */
const turns = async (n = 5) => {
  for (let i = 0; i < n; i++) await new Promise((resolve) => setImmediate(resolve));
};

/** Polls until `check()` holds (a sync runs on libuv's thread pool). */
async function until(check: () => boolean): Promise<void> {
  const deadline = Date.now() + 5_000;
  while (!check()) {
    if (Date.now() > deadline) throw new Error('condition not met in 5 s');
    await new Promise((resolve) => setTimeout(resolve, 1));
  }
}

describe('SQLite group commit with the WAL synced off the event loop (the service: synchronous = NORMAL)', () => {
  it('answers a transaction only after a sync begun after its COMMIT, while the connection serves the next', async () => {
    const held = steeredSync();
    await reopen({ maxMs: 60_000, maxMembers: 10_000 }, held.factory);
    held.hold = true;
    const syncsBefore = driver.stats.syncs;
    const answered: string[] = [];
    const first = db
      .transaction()
      .execute((trx) => insert(trx, 'first'))
      .then(() => answered.push('first'));
    await until(() => held.waiting.length === 1);
    // Committed (another connection sees it) and its sync under way, not yet answered.
    expect(committedNames()).toEqual(['first']);
    expect(held.waiting).toHaveLength(1);
    expect(answered).toEqual([]);
    // The connection is free meanwhile: a second transaction commits while the first sync runs,
    // and waits for a sync of its own (the one under way may have begun before its COMMIT).
    const second = db
      .transaction()
      .execute((trx) => insert(trx, 'second'))
      .then(() => answered.push('second'));
    await turns();
    expect(committedNames()).toEqual(['first', 'second']);
    expect(driver.stats.commits).toBeGreaterThanOrEqual(2);
    held.release();
    await first;
    await until(() => held.waiting.length === 1);
    expect(answered).toEqual(['first']);
    held.release();
    await second;
    expect(answered).toEqual(['first', 'second']);
    expect(driver.stats.syncs - syncsBefore).toBe(2);
  });

  it('answers a query outside any transaction that saw a commit not yet synced only after the sync', async () => {
    const held = steeredSync();
    await reopen({ maxMs: 60_000, maxMembers: 10_000 }, held.factory);
    held.hold = true;
    const write = db.transaction().execute((trx) => insert(trx, 'w'));
    await until(() => held.waiting.length === 1);
    let read: string[] | null = null;
    const reading = db
      .selectFrom('items')
      .select('name')
      .execute()
      .then((rows) => (read = rows.map((r) => r.name)));
    await turns();
    expect(read).toBeNull();
    held.release();
    await Promise.all([write, reading]);
    expect(read).toEqual(['w']);
  });

  it('makes a write outside any transaction (its own commit) wait for a sync, one with RETURNING too', async () => {
    const held = steeredSync();
    await reopen({ maxMs: 60_000, maxMembers: 10_000 }, held.factory);
    held.hold = true;
    const syncsBefore = driver.stats.syncs;
    let done = false;
    const write = db
      .insertInto('items')
      .values({ name: 'alone' } as never)
      .execute()
      .then(() => (done = true));
    await until(() => held.waiting.length === 1);
    expect(committedNames()).toEqual(['alone']);
    await turns();
    expect(done).toBe(false);
    held.release();
    await write;
    expect(done).toBe(true);
    expect(driver.stats.syncs - syncsBefore).toBe(1);
    // Also one that returns rows (better-sqlite3 calls it a reader; it writes all the same).
    let returned: number[] | null = null;
    const returning = db
      .insertInto('items')
      .values({ name: 'returning' } as never)
      .returning('id')
      .execute()
      .then((rows) => (returned = rows.map((r) => r.id)));
    await until(() => held.waiting.length === 1);
    expect(committedNames()).toEqual(['alone', 'returning']);
    await turns();
    expect(returned).toBeNull();
    held.release();
    await returning;
    expect(returned).toEqual([2]);
    expect(driver.stats.syncs - syncsBefore).toBe(2);
  });

  it('syncs the real WAL file: many transactions answered, each durable, fewer syncs than commits under load', async () => {
    await reopen({ maxMs: 60_000, maxMembers: 10_000 }, walSyncer);
    const before = { ...driver.stats };
    for (let round = 0; round < 20; round++) {
      await Promise.all(Array.from({ length: 5 }, (_, i) => db.transaction().execute((trx) => insert(trx, `r${round}-${i}`))));
    }
    expect(committedNames()).toHaveLength(100);
    expect(driver.stats.transactions - before.transactions).toBe(100);
    // Five transactions ready together share a commit; a commit made while a sync runs shares the next sync.
    expect(driver.stats.commits - before.commits).toBe(20);
    expect(driver.stats.syncs - before.syncs).toBeGreaterThan(0);
    expect(driver.stats.syncs - before.syncs).toBeLessThanOrEqual(20);
  });

  it('fails the transactions a failed sync was to make durable, and refuses all work after', async () => {
    const steer = steeredSync();
    await reopen({ maxMs: 60_000, maxMembers: 10_000 }, steer.factory);
    await db.transaction().execute((trx) => insert(trx, 'synced'));
    steer.fail = true;
    const results = await Promise.allSettled([
      db.transaction().execute((trx) => insert(trx, 'a')),
      db.transaction().execute((trx) => insert(trx, 'b')),
    ]);
    expect(results.map((r) => r.status)).toEqual(['rejected', 'rejected']);
    for (const r of results)
      expect(String((r as PromiseRejectedResult).reason)).toMatch(
        /write-ahead log could not be synced to disk \(EIO: i\/o error, fsync\); restart the service/,
      );
    await expect(db.transaction().execute((trx) => insert(trx, 'after'))).rejects.toThrow(/could not be synced to disk/);
    await expect(db.selectFrom('items').select('name').execute()).rejects.toThrow(/could not be synced to disk/);
    // What had been synced before is there; the failed ones were committed, but never reported done.
    expect(committedNames()).toEqual(['synced', 'a', 'b']);
  });
});
