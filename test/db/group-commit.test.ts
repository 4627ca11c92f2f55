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
const insert = (trx: Kysely<Schema>, name: string) => trx.insertInto('items').values({ name } as never).execute();

/** Opens the database; the group bounds are lifted unless given (their timing is tested apart). */
async function open(limits: GroupLimits = { maxMs: 60_000, maxMembers: 10_000 }): Promise<void> {
  dir = mkdtempSync(join(tmpdir(), 'group-commit-'));
  const file = join(dir, 'db.sqlite');
  const handle = new SQLite(file);
  handle.pragma('journal_mode = WAL');
  handle.pragma('synchronous = FULL');
  handle.pragma('foreign_keys = ON');
  const dialect = new GroupCommitSqliteDialect({ database: handle, limits });
  db = new Kysely<Schema>({ dialect });
  await sql`create table items (id integer primary key, name text not null)`.execute(db);
  await sql`create table parents (id integer primary key)`.execute(db);
  await sql`create table children (id integer primary key, parent_id integer not null references parents (id) deferrable initially deferred)`.execute(db);
  await sql`create table doomed (id integer primary key)`.execute(db);
  await sql`create trigger doomed_insert before insert on doomed begin select raise(rollback, 'trigger rolled back the transaction'); end`.execute(db);
  driver = dialect.driver!;
  other = new SQLite(file, { readonly: true });
}

beforeEach(() => open());

async function close(): Promise<void> {
  other.close();
  await db.destroy();
  rmSync(dir, { recursive: true, force: true });
}

async function reopen(limits: GroupLimits): Promise<void> {
  await close();
  await open(limits);
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
  names.forEach((name, i) => expect(`${name.slice(0, 20)}: ${results[i]!.status}`).toBe(`${name.slice(0, 20)}: ${committed.includes(name) ? 'fulfilled' : 'rejected'}`));
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
      db.transaction().execute((trx) => trx.insertInto('children').values({ parent_id: 999 } as never).execute()),
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
    expect(results[0]!.status).toBe('rejected');
    expect(String((results[0] as PromiseRejectedResult).reason)).toMatch(/nothing of this commit group was saved/);
    expect(String((results[1] as PromiseRejectedResult).reason)).toMatch(/trigger rolled back the transaction/);
    // The third ran after the rollback, in a group of its own.
    expect(results[2]!.status).toBe('fulfilled');
    expect(committedNames()).toEqual(['after-doomed']);
  });

  it('fails the whole group when a query outside any transaction fills the disk (SQLite rolls back), and the next group starts clean', async () => {
    const big = await nearlyFullDisk();
    const results = await Promise.allSettled([
      db.transaction().execute((trx) => insert(trx, 'before')),
      db.insertInto('items').values({ name: big } as never).execute(),
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
    await Promise.all([db.transaction().execute((trx) => insert(trx, 'later-1')), db.transaction().execute((trx) => insert(trx, 'later-2'))]);
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
    for (const r of results.slice(0, 2)) expect(String((r as PromiseRejectedResult).reason)).toMatch(/nothing of this commit group was saved/);
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
