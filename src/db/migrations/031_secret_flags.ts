/**
 * `app_flags`: one row per fact the service learned about its own data, by name, with when it
 * was learned. The first: `secrets_unbound_refused`, that no encrypted value of the earlier,
 * unbound format (`v1`, bound to the key only) is left, so one met from then on is refused: it
 * was copied or restored there (src/modules/secrets/secrets.service.ts, docs/operating.md "Key
 * rotation"). `keys:rotate` sets it once it leaves no `v1` value; this migration sets it at once
 * where there is none to rotate (a database made or rotated since values are bound to their
 * place), and leaves it to `keys:rotate` where there are.
 *
 * Additive (docs/operating.md, "Upgrades"): a new table, which a previous version never reads.
 */
import type { Kysely } from 'kysely';
import type { SqlDialect } from '../dialect.js';

/** The encrypted columns as of this migration (a column added later is bound from its start). */
const ENCRYPTED: ReadonlyArray<readonly [string, string]> = [
  ['wallets', 'private_key_enc'],
  ['wallets', 'mnemonic_enc'],
  ['sub_wallets', 'private_key_enc'],
  ['webhooks', 'signature_enc'],
  ['webhooks', 'headers_enc'],
  ['webhooks', 'previous_signature_enc'],
];

export async function up(db: Kysely<any>, d: SqlDialect): Promise<void> {
  await db.schema
    .createTable('app_flags')
    .addColumn('name', 'varchar(64)', (c) => c.primaryKey())
    .addColumn('set_at', d.bigintType, (c) => c.notNull())
    .execute();
  for (const [table, column] of ENCRYPTED) {
    const unbound = await db.selectFrom(table).select(column).where(column, 'like', 'v1.%').limit(1).executeTakeFirst();
    if (unbound !== undefined) return;
  }
  await db.insertInto('app_flags').values({ name: 'secrets_unbound_refused', set_at: Date.now() }).execute();
}
