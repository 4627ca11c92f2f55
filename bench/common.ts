/** Pieces every benchmark shares: flag parsing, percentiles, a fresh database. */
export { createTestDatabase as freshDatabase, type TestDatabase } from '../test/helpers/db.js';

export const DEFAULT_PG_URL = 'postgres://postgres@127.0.0.1:5432/test';

export function positiveInt(name: string, raw: string): number {
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 1) throw new Error(`--${name} must be a positive integer, got "${raw}"`);
  return n;
}

export function nonNegativeInt(name: string, raw: string): number {
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 0) throw new Error(`--${name} must be an integer >= 0, got "${raw}"`);
  return n;
}

export type Driver = 'sqlite' | 'postgres';

/** `--db sqlite,postgres` → the list, checked. */
export function parseDatabases(raw: string): Driver[] {
  const list = raw.split(',').map((d) => d.trim());
  for (const d of list) if (d !== 'sqlite' && d !== 'postgres') throw new Error(`--db: unknown database "${d}" (sqlite, postgres)`);
  return list as Driver[];
}

/** The PostgreSQL server a benchmark makes its databases on. */
export function postgresBase(): string {
  return process.env.DATABASE_URL ?? DEFAULT_PG_URL;
}

/** Nearest-rank percentile of an ascending list. */
export function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!;
}
