/** Pieces every benchmark shares: flag parsing, percentiles, a fresh database, reports (the service itself: bench/process.ts). */
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { createTestDatabase as freshDatabase } from '../test/helpers/db.js';

export { freshDatabase };
export type { TestDatabase } from '../test/helpers/db.js';

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

/** Writes a bench's markdown report to its results file and prints it. */
export function writeReport(file: string, report: string, startedMs: number): void {
  mkdirSync(dirname(file), { recursive: true });
  writeFileSync(file, report);
  process.stdout.write(`${report}\n(written to ${file}; ${Math.round((Date.now() - startedMs) / 1000)} s)\n`);
}

/** Runs a bench's main and exits: 0 when done, 1 with the error printed. */
export function runBench(main: () => Promise<void>): void {
  main().then(
    () => process.exit(0),
    (err: unknown) => {
      process.stderr.write(`bench failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
      process.exit(1);
    },
  );
}

/** One JSON-RPC call to the benches' anvil (anvil_setBalance and the like). */
export async function rpc(url: string, method: string, params: unknown[]): Promise<unknown> {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
  });
  const json = (await res.json()) as { result?: unknown; error?: { message: string } };
  if (json.error) throw new Error(`${method}: ${json.error.message}`);
  return json.result;
}
