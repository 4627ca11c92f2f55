/**
 * Transaction shapes on the wire. Explicit schemas, so nothing else leaves (wallet_id,
 * token_id, input, info, raw_tx, error are never serialised).
 *
 * Decimals (amount, gas figures) are 18-place strings, except in the creation response, whose
 * gas fields are JSON numbers (SPEC): `gas` in gas units, `gas_price` in the native currency
 * per gas unit; there `block_timestamp` is the integer Unix time of submission.
 */
import { Type, type TSchema } from '@sinclair/typebox';
import { PageQuerySchema } from '../../http/pagination.js';
import { WalletTokenSchema } from '../tokens/tokens.views.js';

const Nullable = <T extends TSchema>(t: T) => Type.Union([t, Type.Null()]);

const HEAD = {
  id: Type.Integer(),
  amount: Type.String({ description: 'Decimal with 18 places' }),
  type: Type.String({ enum: ['transfer', 'receipt', 'contract'] }),
  status: Type.String({ enum: ['pending', 'confirmed', 'failed'] }),
  tx_hash: Nullable(Type.String()),
  block_number: Nullable(Type.Integer()),
};

export const TransactionSchema = Type.Object({
  ...HEAD,
  block_timestamp: Nullable(Type.String({ description: 'YYYY-MM-DD HH:MM:SS (UTC)' })),
  block_hash: Nullable(Type.String()),
  nonce: Nullable(Type.Integer()),
  gas: Nullable(Type.String({ description: 'Gas limit in gas units, 18 places' })),
  gas_price: Nullable(Type.String({ description: 'Native currency per gas unit, 18 places' })),
  gas_used: Nullable(Type.String()),
  cumulative_gas_used: Nullable(Type.String()),
  receipt_status: Nullable(Type.Boolean()),
  symbol: Type.String(),
  created_at: Type.String(),
  updated_at: Type.String(),
});

export const TransactionDetailSchema = Type.Composite([TransactionSchema, Type.Object({ wallet_token: WalletTokenSchema })]);

export const CreatedTransactionSchema = Type.Object({
  ...HEAD,
  block_timestamp: Type.Integer({ description: 'Unix time of submission (seconds)' }),
  block_hash: Nullable(Type.String()),
  nonce: Nullable(Type.Integer()),
  gas: Type.Number({ description: 'Gas limit in gas units' }),
  gas_price: Type.Number({ description: 'Native currency per gas unit' }),
  gas_used: Nullable(Type.Number()),
  cumulative_gas_used: Nullable(Type.Number()),
  receipt_status: Nullable(Type.Boolean()),
  symbol: Type.String(),
  created_at: Type.String(),
  updated_at: Type.String(),
});

export const TransactionParams = Type.Object({ wallet: Type.String(), transaction: Type.String() });

export const ListQuery = Type.Object({
  ...PageQuerySchema,
  token: Type.Optional(Type.String({ maxLength: 64, description: 'Token symbol' })),
});

/**
 * The create body. Fields are checked by the service (so each gets the contract's wording,
 * and the amount's decimal places depend on the token); the schema documents them.
 */
export const CreateBody = Type.Object({
  amount: Type.Optional(Type.Unknown({ description: 'Amount (JSON number or decimal string), > 0, at most the token\'s decimals' })),
  token: Type.Optional(Type.Unknown({ description: 'Symbol of an active token of the wallet' })),
  address: Type.Optional(Type.Unknown({ description: 'Destination EVM address (EIP-55 checksum if mixed case)' })),
});
