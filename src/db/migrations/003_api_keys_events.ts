/**
 * API keys, and the indexes of the events API and of retention.
 *
 * - `api_keys`: long-lived credentials for servers. Only the SHA-256 of a key is stored
 *   (`key_hash`, unique: the lookup of every request); `prefix` (the first 12 characters,
 *   `wps_` + 8) identifies a key in lists without revealing it; `scopes` is a JSON array.
 * - `events (user_id, id)` serves `GET /api/events` (one user's events after a cursor, oldest
 *   first) and `events (user_id, type, id)` the same with a `type` or `event` filter (an event
 *   name implies its type), so a page costs `limit` index entries whatever the table holds.
 * - `events (created_at)` and `webhook_deliveries (created_at)` let housekeeping find what is
 *   past `EVENT_RETENTION_DAYS` in bounded batches without scanning the tables;
 *   `webhook_deliveries (event_id)` answers "has this event a delivery left?" (and serves the
 *   foreign key's cascade) without a scan: the unique (webhook_id, event_id) cannot.
 */
import type { Kysely } from 'kysely';
import type { SqlDialect } from '../dialect.js';

export async function up(db: Kysely<any>, d: SqlDialect): Promise<void> {
  const ts = d.bigintType;
  await db.schema
    .createTable('api_keys')
    .addColumn('id', d.idType, (c) => c.primaryKey())
    .addColumn('user_id', ts, (c) => c.notNull().references('users.id').onDelete('cascade'))
    .addColumn('name', 'varchar(255)', (c) => c.notNull())
    .addColumn('prefix', 'varchar(16)', (c) => c.notNull())
    .addColumn('key_hash', 'varchar(64)', (c) => c.notNull().unique())
    .addColumn('scopes', 'varchar(255)', (c) => c.notNull())
    .addColumn('expires_at', ts)
    .addColumn('last_used_at', ts)
    .addColumn('revoked_at', ts)
    .addColumn('created_at', ts, (c) => c.notNull())
    .execute();
  await db.schema.createIndex('api_keys_user_idx').on('api_keys').columns(['user_id', 'id']).execute();

  await db.schema.createIndex('events_user_idx').on('events').columns(['user_id', 'id']).execute();
  await db.schema.createIndex('events_user_type_idx').on('events').columns(['user_id', 'type', 'id']).execute();
  await db.schema.createIndex('events_created_idx').on('events').column('created_at').execute();
  await db.schema.createIndex('webhook_deliveries_created_idx').on('webhook_deliveries').column('created_at').execute();
  await db.schema.createIndex('webhook_deliveries_event_idx').on('webhook_deliveries').column('event_id').execute();
}
