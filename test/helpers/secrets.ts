/** Everything the database holds, as text: the raw SQLite files, or every PostgreSQL row. */
import { existsSync, readFileSync } from 'node:fs';
import { sql } from 'kysely';
import { sqlitePath } from '../../src/db/index.js';
import type { TestApp } from './app.js';

export async function databaseText(t: TestApp): Promise<string> {
  if (t.store.driver === 'sqlite') {
    const file = sqlitePath(t.config);
    return [file, `${file}-wal`]
      .filter((f) => existsSync(f))
      .map((f) => readFileSync(f).toString('latin1'))
      .join('\n');
  }
  const tables = await sql<{ tablename: string }>`select tablename from pg_tables where schemaname = 'public'`.execute(t.store.db);
  const parts: string[] = [];
  for (const { tablename } of tables.rows) {
    const rows = await sql<{ j: string }>`select row_to_json(x)::text as j from ${sql.table(tablename)} x`.execute(t.store.db);
    parts.push(...rows.rows.map((r) => r.j));
  }
  return parts.join('\n');
}
