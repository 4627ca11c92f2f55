/**
 * SQLite: `transactions.item_json`, each row's list item as JSON, kept by triggers that
 * src/modules/transactions/transactions.item-json.repository.ts makes and renews at start
 * (`syncStoredItemJson`, which also writes it for the rows already there). A long page of the
 * transaction list reads it instead of formatting every row on the service's event loop.
 * PostgreSQL formats the item in the query, in its own process, and has no such column.
 *
 * Additive: a nullable column; a previous version ignores it, and its writes still fire the
 * triggers.
 */
import type { Kysely } from 'kysely';
import type { SqlDialect } from '../dialect.js';

export async function up(db: Kysely<any>, d: SqlDialect): Promise<void> {
  if (d.driver !== 'sqlite') return;
  await db.schema.alterTable('transactions').addColumn('item_json', 'text').execute();
}
