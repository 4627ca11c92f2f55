/**
 * Table types for Kysely. Conventions, the same on SQLite and PostgreSQL:
 * - ids and timestamps are integers (timestamps: milliseconds since the epoch, UTC);
 * - amounts are base units held exactly: NUMERIC(78,0) on PostgreSQL, TEXT on SQLite,
 *   read back as decimal strings and turned into bigint by the repositories;
 * - booleans are 0/1 integers; JSON values are TEXT.
 */
import type { Generated, Insertable, Kysely, Selectable } from 'kysely';

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

/** Long-lived API keys (migration 003): only the SHA-256 of the key is stored. */
export interface ApiKeysTable {
  id: Generated<number>;
  user_id: number;
  name: string;
  /** The key's first 12 characters (`wps_` + 8), to recognise it in a list. */
  prefix: string;
  key_hash: string;
  /** JSON array of scopes. */
  scopes: string;
  expires_at: number | null;
  /** Kept to the minute: written at most once a minute per key. */
  last_used_at: number | null;
  revoked_at: number | null;
  created_at: number;
}

export interface NetworksTable {
  id: Generated<number>;
  name: string;
  rpc_url: string;
  /** Every endpoint in order, a JSON array of URLs (first = rpc_url); NULL: rpc_url alone (migration 015). */
  rpc_urls: string | null;
  chain_id: number;
  currency_symbol: string;
  block_explorer: string;
  is_mainnet: number;
  confirmations: number;
  /** The preset it was registered from (src/modules/networks/presets.ts), or NULL (migration 017). */
  preset: string | null;
  /** The Sweeper contract's address on this network (src/chain/sweeper.ts), or NULL while none is deployed (migration 032). */
  sweeper: string | null;
  /** Chainlink feeds named by NETWORKS_FILE or the devnet's start, JSON `{"ETH/USD": address}`; NULL: none beyond its preset's (migration 036). */
  price_feeds: string | null;
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
  created_at: number;
  updated_at: number;
}

/** A wallet's next nonce (migration 010); no row: none handed out yet. */
export interface WalletNoncesTable {
  wallet_id: number;
  /** The next nonce this service will use for the wallet's main address. */
  next_nonce: number | null;
}

export interface SubWalletsTable {
  id: Generated<number>;
  wallet_id: number;
  derivation_index: number;
  address: string;
  private_key_enc: string;
  created_at: number;
  /** `keyed` (a derived key) or `keyless` (an address of the Sweeper: `salt`, `sweeper`); migration 033. */
  kind: Generated<string>;
  salt: string | null;
  sweeper: string | null;
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
  /** The block `amount` was read at (migration 012); null for a row not yet read at a known block. */
  block_number: Generated<number | null>;
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
  /** `legacy` (type 0) or `eip1559` (type 2) (migration 005). */
  tx_kind: Generated<string>;
  /** EIP-1559 fees, wei per gas unit (null for legacy rows) (migration 005). */
  max_fee_per_gas: Amount | null;
  max_priority_fee_per_gas: Amount | null;
  /** Calldata of a `contract` transaction (0x hex), null otherwise (migration 005). */
  data: string | null;
  /** OP-stack L1 data fee (wei) included in `fee_reserved`, 0 elsewhere (migration 005). */
  l1_fee: Generated<Amount>;
  /** reverted | dropped | cancelled | rejected (migration 006), rejected_by_approver | approval_expired (019) on a failed row, else null. */
  failure_reason: string | null;
  /** The create's fee choice while the row awaits approval (JSON), else null (migration 019). */
  requested_fees: string | null;
  /** The refund this transfer pays (unique), else null (migration 020). */
  refund_id: number | null;
  /** The payout this transfer is an item of, and the item's reference (migration 021). */
  payout_id: number | null;
  reference: string | null;
  /** Sends attempted: a refusal ends the row at once only on the first (migration 006). */
  broadcast_attempts: Generated<number>;
  /** When the watcher next checks the unmined row with the node; null: at once (migration 006). */
  next_check_at: number | null;
  check_count: Generated<number>;
  /** When it was first seen pending longer than TX_STUCK_AFTER_S (migration 006). */
  stuck_at: number | null;
  /** Why every endpoint refused its re-send (not for its fee); migration 024. */
  stuck_reason: string | null;
  /** original | speed-up | cancel: what the current tx_hash is (migration 006). */
  broadcast_kind: Generated<string>;
  /** Hashes of the earlier versions, comma-separated, oldest first (migration 006). */
  replaced_hashes: string | null;
  /** What the mined transfer cost: gas used × effective gas price + the receipt's L1 data fee; null unmined (migration 011). */
  fee_paid: Amount | null;
  /** A call to one of the wallet's token contracts: that token, the amount its policy counted, and what it takes from the wallet's balance (migration 029). */
  call_token_id: number | null;
  call_amount: Amount | null;
  call_spend: Amount | null;
  /** A payout item sent in a batch: the batch's own row, and the item's 0-based place in its call (migration 034). */
  batch_tx_id: number | null;
  batch_index: number | null;
  /** The deposit address a receipt reached (its reference in `reference`), else null (migration 035). */
  deposit_address_id: number | null;
  /** Why it was held for approval: `approval_above` or `contract_call`; null if never held (migration 039). */
  held_rule: string | null;
  /** `approval_above`: the threshold (base units), the symbol and decimals of its token, as at the hold (migration 039). */
  held_limit: Amount | null;
  held_symbol: string | null;
  held_decimals: number | null;
}

/** Every signed version (same nonce) of a replaced transaction (migration 006). */
export interface TransactionBroadcastsTable {
  id: Generated<number>;
  transaction_id: number;
  tx_hash: string;
  raw_tx: string;
  kind: string;
  gas: Amount;
  /** The max fee per gas (legacy: the gas price). */
  gas_price: Amount;
  tx_kind: string;
  max_priority_fee_per_gas: Amount | null;
  created_at: number;
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
  watch_until: number;
  settled_block: number | null;
  announced: string | null;
  sweep_due_at: number | null;
  /** A price charge's price (migration 037): a decimal string and its currency; NULL: a charge made with `amount` and `token`. */
  price_amount: string | null;
  price_currency: string | null;
  /** The quoted tokens as the follower matches payments, JSON `[{"token_id", "contract"}]`; NULL: a charge of one token (migration 037). */
  quote_tokens: string | null;
  /** The counted payments, each over its token's quote, 18-place fixed point; NULL until settlement writes it (migration 037). */
  paid_fraction: Amount | null;
}

/** A price charge's quotes, in order: `position` 0 is the charge's own token and amount (migration 037). */
export interface ChargeQuotesTable {
  id: Generated<number>;
  charge_id: number;
  position: number;
  token_id: number;
  amount: Amount;
  /** The currency's units for one whole token, as read. */
  rate: string;
  rate_source: string;
  rate_at: number;
}

export interface ChargePaymentsTable {
  id: Generated<number>;
  charge_id: number;
  network_id: number;
  /** Null (with from_address and block_hash): found by the address's balance after its watch ended; migration 026. */
  tx_hash: string | null;
  log_index: number;
  from_address: string | null;
  amount: Amount;
  block_number: number;
  block_hash: string | null;
  block_timestamp: number;
  confirmed: number;
  notified: number;
  /** 1: reached the address through a contract (an internal call); migration 016. */
  internal: Generated<number>;
  /** 1: its sender was on the SCREENING_FILE list when recorded (not counted toward paid); 1 in `screened_notified` once `charge.screened` is written; migration 030. */
  screened: Generated<number>;
  screened_notified: Generated<number>;
  created_at: number;
  /** The token paid in (a price charge's quoted token; else the charge's); migration 037. */
  token_id: number | null;
}

/** The late payments `charge.delayed` was written for (kept when a reorg deletes the payment); migration 026. */
export interface ChargeLateAnnouncementsTable {
  id: Generated<number>;
  charge_id: number;
  tx_hash: string;
  ordinal: number;
  created_at: number;
}

/** The screened payments `charge.screened` was written for (kept when a reorg deletes the payment); migration 030. */
export interface ChargeScreenedAnnouncementsTable {
  id: Generated<number>;
  charge_id: number;
  tx_hash: string;
  ordinal: number;
  created_at: number;
}

export interface ChargeBlocksTable {
  network_id: number;
  block_number: number;
  block_timestamp: number;
}

export interface ChargeSweepsTable {
  id: Generated<number>;
  charge_id: number;
  kind: string;
  token_id: number;
  amount: Amount;
  status: string;
  live_key: string | null;
  tx_hash: string | null;
  raw_tx: string | null;
  nonce: number | null;
  transaction_id: number | null;
  block_number: number | null;
  error: string | null;
  created_at: number;
  updated_at: number;
  /** What the mined sweep cost (as `transactions.fee_paid`); null unmined (migration 011). */
  fee_paid: Amount | null;
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
  /** The secret an update replaced, still signing deliveries until `previous_signature_until` (ms). */
  previous_signature_enc: string | null;
  previous_signature_until: number | null;
  /** Why the service made the webhook inactive: `gone` (410) or `failing`; null otherwise. */
  disabled_reason: string | null;
  disabled_at: number | null;
  /** First failed attempt since the last delivered one; null while the receiver answers. */
  failing_since: number | null;
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

/** A block whose call traces are still to be read (migration 027; src/workers/watcher.traces.ts). */
export interface TracePendingTable {
  network_id: number;
  block_number: number;
  block_hash: string;
  attempts: Generated<number>;
  next_attempt_at: number;
  created_at: number;
}

/** When an endpoint of the network last answered a trace call (migration 027). */
export interface NetworkTracesTable {
  network_id: number;
  answered_at: number;
}

/** Leases: exactly one process holds a named lease (e.g. the watcher of one network) at a time. */
export interface LeasesTable {
  name: string;
  holder: string;
  expires_at: number;
}

/** Per wallet, address and token: the block records are counted from, and the chain balance there (migration 011). */
export interface ReconciliationCheckpointsTable {
  id: Generated<number>;
  wallet_id: number;
  address: string;
  charge_id: number | null;
  token_id: number;
  block_number: number;
  balance: Amount;
  /** 1 while the last answer for it showed a difference. */
  unreconciled: Generated<number>;
  checked_block: number | null;
  checked_balance: Amount | null;
  created_at: number;
  updated_at: number;
  /** 1: a reorg moved it back to the common ancestor; `balance` is to be read there again (migration 038). */
  stale: Generated<number>;
}

/** An accepted difference, signed (migration 011). */
export interface ReconciliationAdjustmentsTable {
  id: Generated<number>;
  wallet_id: number;
  address: string;
  token_id: number;
  amount: Amount;
  block_number: number;
  note: string;
  created_at: number;
}

export interface SpendingPoliciesTable {
  wallet_id: number;
  allowlist_only: number;
  updated_at: number;
}

export interface SpendingLimitsTable {
  id: Generated<number>;
  wallet_id: number;
  token_id: number;
  /** `per_transaction`, `daily` or `approval_above`. */
  kind: string;
  amount: Amount;
}

export interface AllowlistEntriesTable {
  id: Generated<number>;
  wallet_id: number;
  address: string;
  /** The address lowercased: unique per wallet. */
  address_key: string;
  label: string;
  created_at: number;
}

export interface RefundsTable {
  id: Generated<number>;
  uuid: string;
  charge_id: number;
  wallet_id: number;
  /** The charge's token; `amount` in its base units. */
  token_id: number;
  amount: Amount;
  /** Where it is sent: given at create, or by the payer's claim; null while claimable. */
  address: string | null;
  reason: string | null;
  /** A claim's end (null for a refund created with an address). */
  claim_expires_at: number | null;
  created_at: number;
  updated_at: number;
}

export interface PayoutsTable {
  id: Generated<number>;
  wallet_id: number;
  token_id: number;
  total: Amount;
  /** The items' fee level (`low`, `medium`, `high`); null: medium. */
  fee_level: string | null;
  /** `approval` (waits for a person), `sending`, `rejected`, `expired`. */
  state: string;
  /** The maximum fee of one item quoted at the create, reserved for each unsent item (migration 028). */
  item_fee_reserved: Generated<Amount>;
  created_at: number;
  updated_at: number;
  /** The token's `approval_above` its total was over when held; null if never held (migration 039). */
  held_limit: Amount | null;
}

export interface PayoutItemsTable {
  id: Generated<number>;
  payout_id: number;
  wallet_id: number;
  /** The item's place in the payout (0-based): items are sent in this order. */
  seq: number;
  address: string;
  amount: Amount;
  reference: string | null;
  /** Its transaction once sent; or `error` (and `refused_at`) when its create was refused. */
  transaction_id: number | null;
  error: string | null;
  refused_at: number | null;
}

/** A wallet's permanent deposit address (migration 035): its sub-wallet and the backing charge that watches and sweeps it. */
export interface DepositAddressesTable {
  id: Generated<number>;
  wallet_id: number;
  reference: string;
  label: string | null;
  sub_wallet_id: number;
  charge_id: number;
  created_at: number;
}

/** Facts the service learned about its own data, by name (migration 031): `secrets_unbound_refused`. */
export interface AppFlagsTable {
  name: string;
  set_at: number;
}

/** A manual exchange rate (`rate:set`, migration 036): `network_id` 0 holds for every network. */
export interface RatesTable {
  id: Generated<number>;
  network_id: number;
  symbol: string;
  currency: string;
  /** Units of the currency for one whole token, a decimal string as set. */
  value: string;
  created_at: number;
  updated_at: number;
}

export interface Database {
  app_flags: AppFlagsTable;
  users: UsersTable;
  access_tokens: AccessTokensTable;
  api_keys: ApiKeysTable;
  networks: NetworksTable;
  wallets: WalletsTable;
  wallet_nonces: WalletNoncesTable;
  sub_wallets: SubWalletsTable;
  wallet_tokens: WalletTokensTable;
  wallet_balances: WalletBalancesTable;
  transactions: TransactionsTable;
  transaction_broadcasts: TransactionBroadcastsTable;
  charges: ChargesTable;
  charge_payments: ChargePaymentsTable;
  charge_quotes: ChargeQuotesTable;
  charge_late_announcements: ChargeLateAnnouncementsTable;
  charge_screened_announcements: ChargeScreenedAnnouncementsTable;
  charge_blocks: ChargeBlocksTable;
  charge_sweeps: ChargeSweepsTable;
  webhooks: WebhooksTable;
  events: EventsTable;
  webhook_deliveries: WebhookDeliveriesTable;
  webhook_attempts: WebhookAttemptsTable;
  idempotency_keys: IdempotencyKeysTable;
  chain_cursors: ChainCursorsTable;
  chain_blocks: ChainBlocksTable;
  trace_pending: TracePendingTable;
  network_traces: NetworkTracesTable;
  leases: LeasesTable;
  reconciliation_checkpoints: ReconciliationCheckpointsTable;
  reconciliation_adjustments: ReconciliationAdjustmentsTable;
  spending_policies: SpendingPoliciesTable;
  spending_limits: SpendingLimitsTable;
  allowlist_entries: AllowlistEntriesTable;
  refunds: RefundsTable;
  payouts: PayoutsTable;
  payout_items: PayoutItemsTable;
  deposit_addresses: DepositAddressesTable;
  rates: RatesTable;
}

export type NetworkRow = Selectable<NetworksTable>;
export type WalletTokenRow = Selectable<WalletTokensTable>;
export type NewTransaction = Insertable<TransactionsTable>;

/**
 * A connection of any schema: the service's (`Kysely<Database>`) or a migration's, which must not
 * depend on today's tables. For the database plumbing that serves both (dialect, prepared
 * statements, the read cache).
 */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- Kysely's own type for "any schema"
export type AnyKysely = Kysely<any>;
