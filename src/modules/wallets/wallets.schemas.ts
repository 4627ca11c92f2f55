import { Type } from '@sinclair/typebox';
import { WalletTokenSchema } from '../tokens/tokens.views.js';

export const NetworkSchema = Type.Object({
  id: Type.Integer(),
  name: Type.String(),
  rpc_url: Type.String(),
  chain_id: Type.Integer(),
  currency_symbol: Type.String(),
  block_explorer: Type.String(),
});

export const WalletSchema = Type.Object({
  id: Type.Integer(),
  name: Type.String(),
  address: Type.String(),
  description: Type.String(),
  is_mainnet: Type.Boolean(),
  created_at: Type.String(),
  updated_at: Type.String(),
});

export const WalletDetailSchema = Type.Intersect([
  WalletSchema,
  Type.Object({ wallet_tokens: Type.Array(WalletTokenSchema), network: NetworkSchema }),
]);

export const WalletParams = Type.Object({ wallet: Type.String() });

export const CreateWalletBody = Type.Object({
  name: Type.String({ minLength: 1, maxLength: 255 }),
  network_id: Type.Integer({ minimum: 1 }),
  description: Type.Optional(Type.String({ maxLength: 1000 })),
});

export const UpdateWalletBody = Type.Object({
  name: Type.Optional(Type.String({ minLength: 1, maxLength: 255 })),
  description: Type.Optional(Type.String({ maxLength: 1000 })),
});
