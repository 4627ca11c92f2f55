/**
 * The whole schema every capability needs. Amount columns use dialect.amountType
 * (NUMERIC(78,0) on PostgreSQL, exact TEXT on SQLite); timestamps are integer milliseconds.
 */
import type { Kysely } from 'kysely';
import type { SqlDialect } from '../dialect.js';

export async function up(db: Kysely<any>, d: SqlDialect): Promise<void> {
  const id = (name = 'id') => [name, d.idType, (c: any) => c.primaryKey()] as const;
  const ts = d.bigintType;

  await db.schema
    .createTable('users')
    .addColumn(...id())
    .addColumn('name', 'varchar(255)', (c) => c.notNull())
    .addColumn('email', 'varchar(255)', (c) => c.notNull().unique())
    .addColumn('password_hash', 'varchar(255)', (c) => c.notNull())
    .addColumn('created_at', ts, (c) => c.notNull())
    .addColumn('updated_at', ts, (c) => c.notNull())
    .execute();

  await db.schema
    .createTable('access_tokens')
    .addColumn(...id())
    .addColumn('user_id', ts, (c) => c.notNull().references('users.id').onDelete('cascade'))
    .addColumn('token_hash', 'varchar(64)', (c) => c.notNull().unique())
    .addColumn('expires_at', ts, (c) => c.notNull())
    .addColumn('revoked_at', ts)
    .addColumn('created_at', ts, (c) => c.notNull())
    .execute();
  await db.schema.createIndex('access_tokens_user_idx').on('access_tokens').column('user_id').execute();

  await db.schema
    .createTable('networks')
    .addColumn(...id())
    .addColumn('name', 'varchar(100)', (c) => c.notNull().unique())
    .addColumn('rpc_url', 'varchar(2048)', (c) => c.notNull())
    .addColumn('chain_id', ts, (c) => c.notNull())
    .addColumn('currency_symbol', 'varchar(20)', (c) => c.notNull())
    .addColumn('block_explorer', 'varchar(2048)', (c) => c.notNull().defaultTo(''))
    .addColumn('is_mainnet', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('confirmations', 'integer', (c) => c.notNull().defaultTo(1))
    .addColumn('created_at', ts, (c) => c.notNull())
    .addColumn('updated_at', ts, (c) => c.notNull())
    .execute();

  await db.schema
    .createTable('wallets')
    .addColumn(...id())
    .addColumn('user_id', ts, (c) => c.notNull().references('users.id').onDelete('cascade'))
    .addColumn('network_id', ts, (c) => c.notNull().references('networks.id'))
    .addColumn('name', 'varchar(255)', (c) => c.notNull())
    .addColumn('description', 'varchar(1000)', (c) => c.notNull().defaultTo(''))
    .addColumn('address', 'varchar(42)', (c) => c.notNull())
    .addColumn('private_key_enc', 'text', (c) => c.notNull())
    .addColumn('mnemonic_enc', 'text', (c) => c.notNull())
    .addColumn('next_sub_index', 'integer', (c) => c.notNull().defaultTo(1))
    .addColumn('next_nonce', ts)
    .addColumn('created_at', ts, (c) => c.notNull())
    .addColumn('updated_at', ts, (c) => c.notNull())
    .execute();
  await db.schema.createIndex('wallets_user_idx').on('wallets').columns(['user_id', 'id']).execute();
  await db.schema.createIndex('wallets_address_idx').on('wallets').columns(['network_id', 'address']).execute();

  await db.schema
    .createTable('sub_wallets')
    .addColumn(...id())
    .addColumn('wallet_id', ts, (c) => c.notNull().references('wallets.id').onDelete('cascade'))
    .addColumn('derivation_index', 'integer', (c) => c.notNull())
    .addColumn('address', 'varchar(42)', (c) => c.notNull())
    .addColumn('private_key_enc', 'text', (c) => c.notNull())
    .addColumn('created_at', ts, (c) => c.notNull())
    .addUniqueConstraint('sub_wallets_wallet_index_uq', ['wallet_id', 'derivation_index'])
    .execute();
  await db.schema.createIndex('sub_wallets_address_idx').on('sub_wallets').column('address').execute();

  await db.schema
    .createTable('wallet_tokens')
    .addColumn(...id())
    .addColumn('wallet_id', ts, (c) => c.notNull().references('wallets.id').onDelete('cascade'))
    .addColumn('name', 'varchar(255)', (c) => c.notNull())
    .addColumn('symbol', 'varchar(64)', (c) => c.notNull())
    .addColumn('decimals', 'integer', (c) => c.notNull())
    .addColumn('contract', 'varchar(42)', (c) => c.notNull())
    .addColumn('is_native', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('is_active', 'integer', (c) => c.notNull().defaultTo(1))
    .addColumn('is_testnet', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('created_at', ts, (c) => c.notNull())
    .addColumn('updated_at', ts, (c) => c.notNull())
    .addUniqueConstraint('wallet_tokens_wallet_contract_uq', ['wallet_id', 'contract'])
    .execute();

  await db.schema
    .createTable('wallet_balances')
    .addColumn(...id())
    .addColumn('wallet_id', ts, (c) => c.notNull().references('wallets.id').onDelete('cascade'))
    .addColumn('token_id', ts, (c) => c.notNull().references('wallet_tokens.id').onDelete('cascade'))
    .addColumn('amount', d.amountType, (c) => c.notNull())
    .addColumn('last_balance', d.amountType, (c) => c.notNull())
    .addColumn('refreshed_at', ts, (c) => c.notNull())
    .addColumn('created_at', ts, (c) => c.notNull())
    .addColumn('updated_at', ts, (c) => c.notNull())
    .addUniqueConstraint('wallet_balances_wallet_token_uq', ['wallet_id', 'token_id'])
    .execute();

  await db.schema
    .createTable('transactions')
    .addColumn(...id())
    .addColumn('wallet_id', ts, (c) => c.notNull().references('wallets.id').onDelete('cascade'))
    .addColumn('token_id', ts, (c) => c.notNull().references('wallet_tokens.id'))
    .addColumn('type', 'varchar(16)', (c) => c.notNull())
    .addColumn('status', 'varchar(16)', (c) => c.notNull())
    .addColumn('amount', d.amountType, (c) => c.notNull())
    .addColumn('fee_reserved', d.amountType, (c) => c.notNull())
    .addColumn('from_address', 'varchar(42)', (c) => c.notNull())
    .addColumn('to_address', 'varchar(42)', (c) => c.notNull())
    .addColumn('tx_hash', 'varchar(66)')
    .addColumn('log_index', 'integer', (c) => c.notNull().defaultTo(-1))
    .addColumn('block_number', ts)
    .addColumn('block_hash', 'varchar(66)')
    .addColumn('block_timestamp', ts)
    .addColumn('nonce', ts)
    .addColumn('gas', d.amountType)
    .addColumn('gas_price', d.amountType)
    .addColumn('gas_used', d.amountType)
    .addColumn('cumulative_gas_used', d.amountType)
    .addColumn('receipt_status', 'integer')
    .addColumn('raw_tx', 'text')
    .addColumn('input', 'text')
    .addColumn('info', 'text')
    .addColumn('error', 'varchar(1000)')
    .addColumn('broadcast_at', ts)
    .addColumn('confirmed_at', ts)
    .addColumn('failed_at', ts)
    .addColumn('created_at', ts, (c) => c.notNull())
    .addColumn('updated_at', ts, (c) => c.notNull())
    .execute();
  // Keyset pagination: newest first per wallet, optionally per token.
  await db.schema.createIndex('transactions_wallet_id_idx').on('transactions').columns(['wallet_id', 'id']).execute();
  await db.schema.createIndex('transactions_wallet_token_id_idx').on('transactions').columns(['wallet_id', 'token_id', 'id']).execute();
  await db.schema.createIndex('transactions_status_idx').on('transactions').columns(['status', 'id']).execute();
  await db.schema.createIndex('transactions_hash_idx').on('transactions').column('tx_hash').execute();
  // One row per (wallet, chain transaction, log): a receipt is never recorded twice.
  await db.schema
    .createIndex('transactions_wallet_hash_log_uq')
    .on('transactions')
    .columns(['wallet_id', 'tx_hash', 'log_index', 'type'])
    .unique()
    .execute();

  await db.schema
    .createTable('charges')
    .addColumn(...id())
    .addColumn('uuid', 'varchar(36)', (c) => c.notNull().unique())
    .addColumn('wallet_id', ts, (c) => c.notNull().references('wallets.id').onDelete('cascade'))
    .addColumn('sub_wallet_id', ts, (c) => c.notNull().references('sub_wallets.id'))
    .addColumn('token_id', ts, (c) => c.notNull().references('wallet_tokens.id'))
    .addColumn('amount', d.amountType, (c) => c.notNull())
    .addColumn('paid_amount', d.amountType, (c) => c.notNull())
    .addColumn('status', 'varchar(16)', (c) => c.notNull())
    .addColumn('mode', 'varchar(8)', (c) => c.notNull())
    .addColumn('expires', 'integer', (c) => c.notNull())
    .addColumn('expires_at', ts, (c) => c.notNull())
    .addColumn('paid_at', ts)
    .addColumn('content', 'text')
    .addColumn('info', 'text')
    .addColumn('swept_tx_hash', 'varchar(66)')
    .addColumn('created_at', ts, (c) => c.notNull())
    .addColumn('updated_at', ts, (c) => c.notNull())
    .execute();
  await db.schema.createIndex('charges_wallet_id_idx').on('charges').columns(['wallet_id', 'id']).execute();
  await db.schema.createIndex('charges_status_expires_idx').on('charges').columns(['status', 'expires_at']).execute();

  await db.schema
    .createTable('webhooks')
    .addColumn(...id())
    .addColumn('wallet_id', ts, (c) => c.notNull().references('wallets.id').onDelete('cascade'))
    .addColumn('url', 'varchar(2048)', (c) => c.notNull())
    .addColumn('type', 'varchar(16)', (c) => c.notNull())
    .addColumn('events', 'text', (c) => c.notNull())
    .addColumn('status', 'varchar(16)', (c) => c.notNull())
    .addColumn('signature_enc', 'text')
    .addColumn('headers_enc', 'text')
    .addColumn('deleted_at', ts)
    .addColumn('created_at', ts, (c) => c.notNull())
    .addColumn('updated_at', ts, (c) => c.notNull())
    .execute();
  await db.schema.createIndex('webhooks_wallet_idx').on('webhooks').columns(['wallet_id', 'type']).execute();

  await db.schema
    .createTable('events')
    .addColumn(...id())
    .addColumn('user_id', ts, (c) => c.notNull())
    .addColumn('wallet_id', ts, (c) => c.notNull())
    .addColumn('type', 'varchar(16)', (c) => c.notNull())
    .addColumn('name', 'varchar(64)', (c) => c.notNull())
    .addColumn('payload', 'text', (c) => c.notNull())
    .addColumn('dispatched_at', ts)
    .addColumn('created_at', ts, (c) => c.notNull())
    .execute();
  await db.schema.createIndex('events_undispatched_idx').on('events').columns(['dispatched_at', 'id']).execute();

  await db.schema
    .createTable('webhook_deliveries')
    .addColumn(...id())
    .addColumn('uuid', 'varchar(36)', (c) => c.notNull().unique())
    .addColumn('webhook_id', ts, (c) => c.notNull().references('webhooks.id').onDelete('cascade'))
    .addColumn('event_id', ts, (c) => c.notNull().references('events.id').onDelete('cascade'))
    .addColumn('event_name', 'varchar(64)', (c) => c.notNull())
    .addColumn('body', 'text', (c) => c.notNull())
    .addColumn('status', 'varchar(16)', (c) => c.notNull())
    .addColumn('attempts', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('next_attempt_at', ts, (c) => c.notNull())
    .addColumn('locked_by', 'varchar(64)')
    .addColumn('locked_until', ts)
    .addColumn('response_status', 'integer')
    .addColumn('last_error', 'varchar(1000)')
    .addColumn('delivered_at', ts)
    .addColumn('created_at', ts, (c) => c.notNull())
    .addColumn('updated_at', ts, (c) => c.notNull())
    .addUniqueConstraint('webhook_deliveries_webhook_event_uq', ['webhook_id', 'event_id'])
    .execute();
  await db.schema.createIndex('webhook_deliveries_due_idx').on('webhook_deliveries').columns(['status', 'next_attempt_at']).execute();
  await db.schema.createIndex('webhook_deliveries_webhook_idx').on('webhook_deliveries').columns(['webhook_id', 'id']).execute();

  await db.schema
    .createTable('webhook_attempts')
    .addColumn(...id())
    .addColumn('delivery_id', ts, (c) => c.notNull().references('webhook_deliveries.id').onDelete('cascade'))
    .addColumn('attempt', 'integer', (c) => c.notNull())
    .addColumn('response_status', 'integer')
    .addColumn('duration_ms', 'integer', (c) => c.notNull())
    .addColumn('response_body', 'text')
    .addColumn('error', 'varchar(1000)')
    .addColumn('created_at', ts, (c) => c.notNull())
    .execute();
  await db.schema.createIndex('webhook_attempts_delivery_idx').on('webhook_attempts').columns(['delivery_id', 'attempt']).execute();

  await db.schema
    .createTable('idempotency_keys')
    .addColumn(...id())
    .addColumn('user_id', ts, (c) => c.notNull().references('users.id').onDelete('cascade'))
    .addColumn('key', 'varchar(255)', (c) => c.notNull())
    .addColumn('request_hash', 'varchar(64)', (c) => c.notNull())
    .addColumn('response_status', 'integer')
    .addColumn('response_body', 'text')
    .addColumn('created_at', ts, (c) => c.notNull())
    .addColumn('expires_at', ts, (c) => c.notNull())
    .addUniqueConstraint('idempotency_keys_user_key_uq', ['user_id', 'key'])
    .execute();

  await db.schema
    .createTable('chain_cursors')
    .addColumn('network_id', ts, (c) => c.primaryKey().references('networks.id').onDelete('cascade'))
    .addColumn('block_number', ts, (c) => c.notNull())
    .addColumn('block_hash', 'varchar(66)', (c) => c.notNull())
    .addColumn('updated_at', ts, (c) => c.notNull())
    .execute();

  await db.schema
    .createTable('chain_blocks')
    .addColumn('network_id', ts, (c) => c.notNull().references('networks.id').onDelete('cascade'))
    .addColumn('block_number', ts, (c) => c.notNull())
    .addColumn('block_hash', 'varchar(66)', (c) => c.notNull())
    .addColumn('parent_hash', 'varchar(66)', (c) => c.notNull())
    .addColumn('created_at', ts, (c) => c.notNull())
    .addPrimaryKeyConstraint('chain_blocks_pk', ['network_id', 'block_number'])
    .execute();

  await db.schema
    .createTable('leases')
    .addColumn('name', 'varchar(100)', (c) => c.primaryKey())
    .addColumn('holder', 'varchar(100)', (c) => c.notNull())
    .addColumn('expires_at', ts, (c) => c.notNull())
    .execute();
}
