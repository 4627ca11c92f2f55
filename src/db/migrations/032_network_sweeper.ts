/**
 * The sweeper of a network (docs/charges.md, "Keyless deposit addresses"): `networks.sweeper`,
 * the address of the Sweeper contract the service uses on that network, or NULL while none is
 * deployed (`network:deploy-sweeper`; the local devnet gets one at start).
 *
 * Additive (docs/operating.md, "Upgrades"): a previous version neither reads nor writes the column;
 * one that updates a network leaves its sweeper as it was.
 */
import type { Kysely } from 'kysely';
import type { SqlDialect } from '../dialect.js';

export async function up(db: Kysely<any>, _d: SqlDialect): Promise<void> {
  await db.schema.alterTable('networks').addColumn('sweeper', 'text').execute();
}
