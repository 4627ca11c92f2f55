/** Migrations, in code (no file-system scanning), run at start and by `cli migrate`. */
import { Migrator, type Migration, type MigrationResultSet } from 'kysely';
import type { Store } from './index.js';
import * as m001 from './migrations/001_initial.js';
import * as m002 from './migrations/002_transactions.js';

export async function migrateToLatest(store: Store): Promise<MigrationResultSet> {
  const d = store.dialect;
  const migrations: Record<string, Migration> = {
    '001_initial': { up: (db) => m001.up(db, d) },
    '002_transactions': { up: (db) => m002.up(db, d) },
  };
  const migrator = new Migrator({
    db: store.db,
    provider: { getMigrations: async () => migrations },
    migrationTableName: 'kysely_migration',
    migrationLockTableName: 'kysely_migration_lock',
  });
  const result = await migrator.migrateToLatest();
  if (result.error) {
    const failed = result.results?.find((r) => r.status === 'Error')?.migrationName ?? 'unknown';
    throw new Error(`Migration ${failed} failed`, { cause: result.error });
  }
  return result;
}
