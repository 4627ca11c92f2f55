/**
 * Network presets (`network:add --preset`): `networks.preset`, the key of the preset a network was
 * registered from (src/modules/networks/presets.ts), or NULL. It is what `token/add` by symbol
 * looks the token up in, so it works when the preset's chain id was overridden.
 *
 * Additive (docs/operating.md, "Upgrades"): a previous version neither reads nor writes the column;
 * one that updates a network leaves its preset as it was.
 */
import type { Kysely } from 'kysely';
import type { SqlDialect } from '../dialect.js';

export async function up(db: Kysely<any>, _d: SqlDialect): Promise<void> {
  await db.schema.alterTable('networks').addColumn('preset', 'text').execute();
}
