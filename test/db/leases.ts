/** The `leases` table as the pipelined-transaction tests use it: rows written and read back by name. */
import { sql } from 'kysely';
import type { Store } from '../../src/db/index.js';
import { driverName } from '../helpers/db.js';

type Db = Store['db'];

export const leaseNames = async (db: Db) => (await db.selectFrom('leases').select('name').orderBy('name').execute()).map((r) => r.name);

export const insertLease = (db: Db, name: string, holder = 'test') =>
  db.insertInto('leases').values({ name, holder, expires_at: 1 }).execute();

export const holderOf = async (db: Db, name: string) =>
  (await db.selectFrom('leases').select('holder').where('name', '=', name).executeTakeFirst())?.holder;

/** PostgreSQL: connections of this database left inside a transaction (SQLite: 0, one connection). */
export async function openTransactions(db: Db): Promise<number> {
  if (driverName !== 'postgres') return 0;
  const open = await sql<{ n: number }>`
    select count(*)::int as n from pg_stat_activity where datname = current_database() and state like 'idle in transaction%'`.execute(db);
  return open.rows[0]!.n;
}
