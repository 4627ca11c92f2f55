/**
 * Table types for Kysely. Conventions, the same on SQLite and PostgreSQL:
 * - ids and timestamps are integers (timestamps: milliseconds since the epoch, UTC);
 * - amounts are base units held exactly: NUMERIC(78,0) on PostgreSQL, TEXT on SQLite,
 *   read back as decimal strings and turned into bigint by the repositories;
 * - booleans are 0/1 integers; JSON values are TEXT.
 */
import type { Generated, Insertable, Selectable, Updateable } from 'kysely';

/** A base-unit amount as the driver hands it over (decimal string); written as a string too. */
export type Amount = string;

export interface UsersTable {
  id: Generated<number>;
  name: string;
  email: string;
  password_hash: string;
  created_at: number;
  updated_at: number;
}

export interface AccessTokensTable {
  id: Generated<number>;
  user_id: number;
  token_hash: string;
  expires_at: number;
  revoked_at: number | null;
  created_at: number;
}

export interface NetworksTable {
  id: Generated<number>;
  name: string;
  rpc_url: string;
  chain_id: number;
  currency_symbol: string;
  block_explorer: string;
  is_mainnet: number;
  confirmations: number;
  created_at: number;
  updated_at: number;
}

export interface WalletsTable {
  id: Generated<number>;
  user_id: number;
  network_id: number;
  name: string;
  description: string;
  address: string;
  private_key_enc: string;
  mnemonic_enc: string;
  /** The next BIP-44 address index to hand to a sub-wallet (0 is the wallet's own address). */
  next_sub_index: number;
  /** The next nonce this service will use for the wallet's main address. */
  next_nonce: number | null;
  created_at: number;
  updated_at: number;
}

export interface SubWalletsTable {
  id: Generated<number>;
  wallet_id: number;
  derivation_index: number;
  address: string;
  private_key_enc: string;
  created_at: number;
}

export interface WalletTokensTable {
  id: Generated<number>;
  wallet_id: number;
  name: string;
  symbol: string;
  decimals: number;
  contract: string;
  is_native: number;
  is_active: number;
  is_testnet: number;
  created_at: number;
  updated_at: number;
}

export interface WalletBalancesTable {
  id: Generated<number>;
  wallet_id: number;
  token_id: number;
  amount: Amount;
  last_balance: Amount;
  refreshed_at: number;
  created_at: number;
  updated_at: number;
}

export interface TransactionsTable {
  id: Generated<number>;
  wallet_id: number;
  token_id: number;
  type: string;
  status: string;
  amount: Amount;
  /** Maximum native fee (gas × gas price) reserved while pending. */
  fee_reserved: Amount;
  from_address: string;
  to_address: string;
  tx_hash: string | null;
  /** Index of the ERC-20 Transfer log for receipts (-1 for a native transfer). */
  log_index: number;
  block_number: number | null;
  block_hash: string | null;
  block_timestamp: number | null;
  nonce: number | null;
  gas: Amount | null;
  gas_price: Amount | null;
  gas_used: Amount | null;
  cumulative_gas_used: Amount | null;
  receipt_status: number | null;
  /** The signed raw transaction, kept so it can be re-broadcast after a crash. */
  raw_tx: string | null;
  input: string | null;
  info: string | null;
  error: string | null;
  broadcast_at: number | null;
  confirmed_at: number | null;
  failed_at: number | null;
  created_at: number;
  updated_at: number;
  /** Dense per-wallet sequence (1, 2, ...) for O(1) pagination (migration 002). */
  seq: Generated<number>;
  /** Upper-cased token symbol, the list's `token` filter (migration 002). */
  symbol_key: Generated<string>;
  /** Dense per-wallet-and-symbol sequence (migration 002). */
  symbol_seq: Generated<number>;
}

export interface ChargesTable {
  id: Generated<number>;
  uuid: string;
  wallet_id: number;
  sub_wallet_id: number;
  token_id: number;
  amount: Amount;
  paid_amount: Amount;
  status: string;
  mode: string;
  expires: number;
  expires_at: number;
  paid_at: number | null;
  content: string | null;
  info: string | null;
  swept_tx_hash: string | null;
  created_at: number;
  updated_at: number;
}

export interface WebhooksTable {
  id: Generated<number>;
  wallet_id: number;
  url: string;
  type: string;
  /** JSON array of full dotted event names, or ["*"]. */
  events: string;
  status: string;
  signature_enc: string | null;
  headers_enc: string | null;
  deleted_at: number | null;
  created_at: number;
  updated_at: number;
}

/** The outbox: written in the same transaction as the change that causes the event. */
export interface EventsTable {
  id: Generated<number>;
  user_id: number;
  wallet_id: number;
  type: string;
  name: string;
  payload: string;
  /** Set once the event has been fanned out into webhook deliveries. */
  dispatched_at: number | null;
  created_at: number;
}

export interface WebhookDeliveriesTable {
  id: Generated<number>;
  uuid: string;
  webhook_id: number;
  event_id: number;
  event_name: string;
  /** The exact body bytes sent on every attempt. */
  body: string;
  status: string;
  attempts: number;
  next_attempt_at: number;
  locked_by: string | null;
  locked_until: number | null;
  response_status: number | null;
  last_error: string | null;
  delivered_at: number | null;
  created_at: number;
  updated_at: number;
}

export interface WebhookAttemptsTable {
  id: Generated<number>;
  delivery_id: number;
  attempt: number;
  response_status: number | null;
  duration_ms: number;
  response_body: string | null;
  error: string | null;
  created_at: number;
}

export interface IdempotencyKeysTable {
  id: Generated<number>;
  user_id: number;
  key: string;
  request_hash: string;
  response_status: number | null;
  response_body: string | null;
  created_at: number;
  expires_at: number;
}

export interface ChainCursorsTable {
  network_id: number;
  block_number: number;
  block_hash: string;
  updated_at: number;
}

/** Recent block hashes the watcher has processed, to notice a reorg. */
export interface ChainBlocksTable {
  network_id: number;
  block_number: number;
  block_hash: string;
  parent_hash: string;
  created_at: number;
}

/** Leases: exactly one process holds a named lease (e.g. the watcher of one network) at a time. */
export interface LeasesTable {
  name: string;
  holder: string;
  expires_at: number;
}

export interface Database {
  users: UsersTable;
  access_tokens: AccessTokensTable;
  networks: NetworksTable;
  wallets: WalletsTable;
  sub_wallets: SubWalletsTable;
  wallet_tokens: WalletTokensTable;
  wallet_balances: WalletBalancesTable;
  transactions: TransactionsTable;
  charges: ChargesTable;
  webhooks: WebhooksTable;
  events: EventsTable;
  webhook_deliveries: WebhookDeliveriesTable;
  webhook_attempts: WebhookAttemptsTable;
  idempotency_keys: IdempotencyKeysTable;
  chain_cursors: ChainCursorsTable;
  chain_blocks: ChainBlocksTable;
  leases: LeasesTable;
}

export type UserRow = Selectable<UsersTable>;
export type NetworkRow = Selectable<NetworksTable>;
export type WalletRow = Selectable<WalletsTable>;
export type WalletTokenRow = Selectable<WalletTokensTable>;
export type TransactionRow = Selectable<TransactionsTable>;
export type WebhookRow = Selectable<WebhooksTable>;
export type DeliveryRow = Selectable<WebhookDeliveriesTable>;
export type NewTransaction = Insertable<TransactionsTable>;
export type TransactionUpdate = Updateable<TransactionsTable>;
