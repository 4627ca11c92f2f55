/**
 * Spending policies (docs/money-out.md, "The policy").
 *
 * - `spending_policies`: one row per wallet that has ever had its policy set: `allowlist_only`
 *   (0/1) and `updated_at`. No row: no limits, allowlist not required.
 * - `spending_limits`: per wallet, token and kind (`per_transaction`, `daily`, `approval_above`)
 *   an amount in the token's base units. No row: no such limit.
 * - `allowlist_entries`: the addresses (checksummed; `address_key` lowercased, unique per wallet)
 *   the wallet may send to when `allowlist_only` is set.
 * - `transactions_wallet_token_created_idx`: the daily sum reads the wallet's rows of one token
 *   created in the last 24 hours.
 *
 * Additive: new tables and an index only; a previous version ignores them (and enforces nothing).
 */
import type { Kysely } from 'kysely';
import type { SqlDialect } from '../dialect.js';

export async function up(db: Kysely<any>, d: SqlDialect): Promise<void> {
  const ts = d.bigintType;
  await db.schema
    .createTable('spending_policies')
    .addColumn('wallet_id', ts, (c) => c.primaryKey().references('wallets.id').onDelete('cascade'))
    .addColumn('allowlist_only', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('updated_at', ts, (c) => c.notNull())
    .execute();

  await db.schema
    .createTable('spending_limits')
    .addColumn('id', d.idType, (c) => c.primaryKey())
    .addColumn('wallet_id', ts, (c) => c.notNull().references('wallets.id').onDelete('cascade'))
    .addColumn('token_id', ts, (c) => c.notNull())
    .addColumn('kind', 'varchar(20)', (c) => c.notNull())
    .addColumn('amount', d.amountType, (c) => c.notNull())
    .execute();
  await db.schema
    .createIndex('spending_limits_key_idx')
    .unique()
    .on('spending_limits')
    .columns(['wallet_id', 'token_id', 'kind'])
    .execute();

  await db.schema
    .createTable('allowlist_entries')
    .addColumn('id', d.idType, (c) => c.primaryKey())
    .addColumn('wallet_id', ts, (c) => c.notNull().references('wallets.id').onDelete('cascade'))
    .addColumn('address', 'varchar(42)', (c) => c.notNull())
    .addColumn('address_key', 'varchar(42)', (c) => c.notNull())
    .addColumn('label', 'varchar(255)', (c) => c.notNull())
    .addColumn('created_at', ts, (c) => c.notNull())
    .execute();
  await db.schema.createIndex('allowlist_entries_key_idx').unique().on('allowlist_entries').columns(['wallet_id', 'address_key']).execute();

  await db.schema
    .createIndex('transactions_wallet_token_created_idx')
    .on('transactions')
    .columns(['wallet_id', 'token_id', 'created_at'])
    .execute();
}
