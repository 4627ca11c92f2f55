/**
 * Webhooks that can be operated (docs/webhooks.md, "Operating a webhook").
 *
 * - `previous_signature_enc` / `previous_signature_until`: the secret an update replaced,
 *   encrypted like `signature_enc`, and until when (ms) deliveries are still signed with it too
 *   (`WEBHOOK_SECRET_OVERLAP_S`), so receivers can switch secrets without losing a delivery.
 * - `disabled_reason` (`gone` after a 410, `failing` after `WEBHOOK_DISABLE_AFTER_S` of nothing
 *   but failures, null otherwise) and `disabled_at`: why and when the webhook became inactive.
 * - `failing_since`: the first failed attempt since the last delivered one (null while the
 *   receiver answers), what the automatic deactivation measures.
 * - `webhook_deliveries (webhook_id, status, created_at)` serves `recover`: one webhook's
 *   failed deliveries created since a time, without reading its other rows.
 */
import type { Kysely } from 'kysely';
import type { SqlDialect } from '../dialect.js';

export async function up(db: Kysely<any>, d: SqlDialect): Promise<void> {
  const ts = d.bigintType;
  await db.schema.alterTable('webhooks').addColumn('previous_signature_enc', 'text').execute();
  await db.schema.alterTable('webhooks').addColumn('previous_signature_until', ts).execute();
  await db.schema.alterTable('webhooks').addColumn('disabled_reason', 'varchar(16)').execute();
  await db.schema.alterTable('webhooks').addColumn('disabled_at', ts).execute();
  await db.schema.alterTable('webhooks').addColumn('failing_since', ts).execute();
  await db.schema
    .createIndex('webhook_deliveries_webhook_status_idx')
    .on('webhook_deliveries')
    .columns(['webhook_id', 'status', 'created_at'])
    .execute();
}
