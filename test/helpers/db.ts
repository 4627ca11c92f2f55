/**
 * A fresh database per test file: a temporary SQLite folder, or, when DATABASE_URL is set,
 * a new PostgreSQL database created on that server (dropped at the end).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import pg from 'pg';

export interface TestDatabase {
  dataDir: string;
  databaseUrl: string | null;
  drop(): Promise<void>;
}

export const onPostgres = Boolean(process.env.DATABASE_URL);
export const driverName = onPostgres ? 'postgres' : 'sqlite';

/**
 * `base`: the PostgreSQL server to make the database on (default DATABASE_URL), or null for
 * SQLite. Also used by the benchmarks.
 */
export async function createTestDatabase(base: string | null = process.env.DATABASE_URL ?? null, prefix = 'wt'): Promise<TestDatabase> {
  const dataDir = mkdtempSync(join(tmpdir(), `wallet-${prefix}-`));
  if (!base) {
    return { dataDir, databaseUrl: null, drop: async () => rmSync(dataDir, { recursive: true, force: true }) };
  }
  const name = `${prefix}_${randomBytes(6).toString('hex')}`;
  const admin = new pg.Client({ connectionString: base });
  await admin.connect();
  try {
    await admin.query(`CREATE DATABASE ${name}`);
  } finally {
    await admin.end();
  }
  const url = new URL(base);
  url.pathname = `/${name}`;
  return {
    dataDir,
    databaseUrl: url.toString(),
    drop: async () => {
      const c = new pg.Client({ connectionString: base });
      await c.connect();
      try {
        await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      } finally {
        await c.end();
      }
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}
