/**
 * Keyless deposit addresses (docs/charges.md, "Keyless deposit addresses"): a `sub_wallets` row
 * is either a key derived from the wallet's mnemonic (`kind` `keyed`, as every row before) or an
 * address of the network's Sweeper (`keyless`): `salt` (32 bytes, hex) and the `sweeper` it was
 * derived from, which it keeps for good (a new Sweeper never takes over an address). A keyless
 * row has no key: its `private_key_enc` holds the empty string, encrypted and bound to its place
 * like every value of the column, so key rotation treats it as any other.
 *
 * Additive (docs/operating.md, "Upgrades"): a previous version never reads the new columns, and
 * the default makes its inserts keyed.
 */
import type { Kysely } from 'kysely';
import type { SqlDialect } from '../dialect.js';

export async function up(db: Kysely<any>, _d: SqlDialect): Promise<void> {
  await db.schema
    .alterTable('sub_wallets')
    .addColumn('kind', 'varchar(10)', (c) => c.notNull().defaultTo('keyed'))
    .execute();
  await db.schema.alterTable('sub_wallets').addColumn('salt', 'varchar(66)').execute();
  await db.schema.alterTable('sub_wallets').addColumn('sweeper', 'varchar(42)').execute();
}
