/**
 * Queries built and compiled by Kysely once, then run with new parameters.
 *
 * Building a query with Kysely's builder and compiling it to SQL costs more CPU than SQLite
 * takes to run a small indexed query: on the balance route the builder and compiler were a large
 * share of the busy time (BENCHMARKS.md, "GET balance"). For the queries every request
 * runs (the bearer token, the wallet guard, the balance read), the builder runs once per
 * dialect with placeholder values; the compiled SQL is kept and each call substitutes its own
 * values for the placeholders. The query is still written with the typed builder, so its
 * columns and result type are checked as any other.
 *
 * Only `where`-style values may be parameters: a placeholder that the compiler did not turn into
 * a bound parameter (inlined, or dropped) is refused when the query is first compiled.
 *
 * `executeArrays` returns each row as the array of its column values in select order. On SQLite
 * that is better-sqlite3's raw mode, which skips building an object per row (for a 1,000-row
 * page of 22 columns, building the objects took over half the statement's time; BENCHMARKS.md,
 * "Transaction list"): its SQL carries `ARRAY_ROWS_MARK`, a comment the statement cache
 * (src/db/index.ts) recognises, so it is a statement of its own and the object-row statement of
 * the same query is never switched. It still runs through Kysely, holding its connection as any
 * query (inside a transaction it sees the transaction's rows). On PostgreSQL the driver gives
 * objects, and their values are taken in order.
 */
import type { CompiledQuery, Kysely, QueryResult } from 'kysely';
import { dialectOf, type DriverName } from './dialect.js';
import { preferNamed } from './named-statements.js';
import { ReadCache, tableVersionsOf } from './read-cache.js';
import type { AnyKysely, Database } from './types.js';

interface Compiles<R> {
  compile(): CompiledQuery<R>;
}

/** Where each compiled parameter comes from: an argument's index, or a constant of the query. */
type Slot = { arg: number } | { value: unknown };
/** The same for `prepareRow`: a field of the row, or a constant of the query. */
type RowSlot = { key: string } | { value: unknown };

interface Template<R> {
  compiled: CompiledQuery<R>;
  /** The same query for `executeArrays` (SQLite: marked for raw mode; PostgreSQL: the same). */
  arrays: CompiledQuery<unknown>;
  slots: Slot[];
}

const MARK = '\u0000prepared-parameter:';

/** Leading comment of a query whose SQLite statement returns rows as arrays (better-sqlite3 `raw`). */
export const ARRAY_ROWS_MARK = '/* array rows */ ';

export interface Prepared<A extends readonly unknown[], R> {
  execute(db: AnyKysely, ...args: A): Promise<R[]>;
  executeTakeFirst(db: AnyKysely, ...args: A): Promise<R | undefined>;
  /** The rows as arrays of their column values, in the order the query selects them. */
  executeArrays(db: AnyKysely, ...args: A): Promise<unknown[][]>;
}

/** Every table a query cached on PostgreSQL reads (each must announce its writes: migration 009). */
export const cachedTables = new Set<string>();

export interface PrepareOptions {
  /**
   * Keep the rows by argument list, on SQLite, until one of `tables` (every table the query
   * reads) is written (src/db/read-cache.ts). Rows returned from the cache are frozen.
   */
  cache?: {
    tables: readonly (keyof Database)[];
    max?: number;
    /**
     * false: SQLite only. On PostgreSQL other processes learn of a write by NOTIFY, a moment
     * after its commit; a query whose answer must change everywhere at once (the bearer token:
     * a logout) is not cached there.
     */
    onPostgres?: boolean;
  };
}

/**
 * `build(db, ...placeholders)` writes the query with the builder; `placeholders[i]` stands for
 * the i-th argument of every later call (typed as the argument, a marker string at runtime).
 */
export function prepare<A extends readonly unknown[], R>(
  build: (db: Kysely<Database>, ...placeholders: A) => Compiles<R>,
  options: PrepareOptions = {},
): Prepared<A, R> {
  // One placeholder per declared parameter after `db` (so no default or rest parameters).
  const arity = build.length - 1;
  const templates = new Map<DriverName, Template<R>>();

  function template(db: AnyKysely): Template<R> {
    const driver = dialectOf(db).driver;
    let t = templates.get(driver);
    if (!t) {
      t = compileTemplate(db, arity, build);
      templates.set(driver, t);
      if (driver === 'postgres') preferNamed(t.compiled.sql);
    }
    return t;
  }

  const cacheOptions = options.cache;
  if (cacheOptions?.onPostgres !== false) for (const t of cacheOptions?.tables ?? []) cachedTables.add(t);
  // One cache per database handle: a process may hold several stores (tests, the CLI).
  const caches = new WeakMap<AnyKysely, ReadCache<R>>();
  function cacheOf(db: AnyKysely): ReadCache<R> {
    let c = caches.get(db);
    if (!c) {
      c = new ReadCache<R>(cacheOptions!.tables, cacheOptions!.max ?? 10_000);
      caches.set(db, c);
    }
    return c;
  }

  async function run(db: AnyKysely, args: A): Promise<R[]> {
    const { compiled, slots } = template(db);
    const parameters = slots.map((s) => ('arg' in s ? args[s.arg] : s.value));
    const result: QueryResult<R> = await db.executeQuery<R>({ ...compiled, parameters });
    return result.rows;
  }

  async function execute(db: AnyKysely, ...args: A): Promise<R[]> {
    const versions = cacheOptions ? tableVersionsOf(db) : undefined;
    if (!versions || (cacheOptions!.onPostgres === false && dialectOf(db).driver === 'postgres')) return run(db, args);
    return (await cacheOf(db).read(versions, args.join('\u0000'), () => run(db, args))) as R[];
  }

  async function executeArrays(db: AnyKysely, ...args: A): Promise<unknown[][]> {
    const { arrays, slots } = template(db);
    const parameters = slots.map((s) => ('arg' in s ? args[s.arg] : s.value));
    const { rows } = await db.executeQuery<unknown>({ ...arrays, parameters });
    // SQLite's marked statement already gives arrays; PostgreSQL's rows are objects in column order.
    return rows.length > 0 && Array.isArray(rows[0]) ? (rows as unknown[][]) : rows.map((r) => Object.values(r as object) as unknown[]);
  }

  return {
    execute,
    executeTakeFirst: async (db, ...args) => (await execute(db, ...args))[0],
    executeArrays,
  };
}

function compileTemplate<A extends readonly unknown[], R>(
  db: AnyKysely,
  arity: number,
  build: (db: Kysely<Database>, ...placeholders: A) => Compiles<R>,
): Template<R> {
  const marks = Array.from({ length: arity }, (_, i) => `${MARK}${i}`);
  const compiled = build(db as Kysely<Database>, ...(marks as unknown as A)).compile();
  const used = new Set<number>();
  const slots: Slot[] = compiled.parameters.map((p) => {
    if (typeof p === 'string' && p.startsWith(MARK)) {
      const arg = Number(p.slice(MARK.length));
      used.add(arg);
      return { arg };
    }
    return { value: p };
  });
  if (used.size !== arity)
    throw new Error(`prepared query: ${arity - used.size} placeholder(s) not bound as parameters in: ${compiled.sql}`);
  if (compiled.sql.includes(MARK)) throw new Error(`prepared query: a placeholder was inlined into the SQL: ${compiled.sql}`);
  const arrays = dialectOf(db).driver === 'sqlite' ? { ...compiled, sql: ARRAY_ROWS_MARK + compiled.sql } : compiled;
  return { compiled, arrays, slots };
}

export interface PreparedRow<T, R> {
  execute(db: AnyKysely, row: T): Promise<R[]>;
  executeTakeFirst(db: AnyKysely, row: T): Promise<R | undefined>;
}

/**
 * `prepare` for a query written from one row object (an insert's values, an update's set):
 * compiled once per dialect and set of the row's keys (a key whose value is undefined is left
 * out, as Kysely leaves it out), then run with the row's values in their places. Every value
 * must be a plain one (string, number, bigint, null, bytes): the build function makes any SQL
 * expression itself, from the row's fields.
 */
export function prepareRow<T extends object, R>(build: (db: Kysely<Database>, row: T) => Compiles<R>): PreparedRow<T, R> {
  const templates = new Map<string, { compiled: CompiledQuery<R>; slots: RowSlot[] }>();

  function template(db: AnyKysely, row: T) {
    const keys = Object.keys(row).filter((k) => (row as Record<string, unknown>)[k] !== undefined);
    const driver = dialectOf(db).driver;
    const id = `${driver}\u0000${keys.join(',')}`;
    let t = templates.get(id);
    if (!t) {
      const marks = Object.fromEntries(keys.map((k) => [k, `${MARK}${k}`])) as T;
      const compiled = build(db as Kysely<Database>, marks).compile();
      const used = new Set<string>();
      const slots: RowSlot[] = compiled.parameters.map((p) => {
        if (typeof p === 'string' && p.startsWith(MARK)) {
          const key = p.slice(MARK.length);
          used.add(key);
          return { key };
        }
        return { value: p };
      });
      if (compiled.sql.includes(MARK)) throw new Error(`prepared row query: a field was inlined into the SQL: ${compiled.sql}`);
      const unused = keys.filter((k) => !used.has(k));
      if (unused.length > 0)
        throw new Error(`prepared row query: field(s) ${unused.join(', ')} not bound as parameters in: ${compiled.sql}`);
      t = { compiled, slots };
      templates.set(id, t);
      if (driver === 'postgres') preferNamed(compiled.sql);
    }
    return t;
  }

  async function execute(db: AnyKysely, row: T): Promise<R[]> {
    const values = row as Record<string, unknown>;
    for (const k in values) {
      const v = values[k];
      if (v !== null && typeof v === 'object' && !(v instanceof Uint8Array))
        throw new Error(`prepared row query: field ${k} is not a plain value`);
    }
    const { compiled, slots } = template(db, row);
    const parameters = slots.map((s) => ('key' in s ? values[s.key] : s.value));
    const result: QueryResult<R> = await db.executeQuery<R>({ ...compiled, parameters });
    return result.rows;
  }

  return { execute, executeTakeFirst: async (db, row) => (await execute(db, row))[0] };
}
