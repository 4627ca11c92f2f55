import { Type, type Static } from '@sinclair/typebox';
import { component } from '../../http/components.js';
import { NetworkRef } from '../networks/networks.schemas.js';
import { WalletTokenRef } from '../tokens/tokens.schemas.js';

export const WalletSchema = Type.Object({
  id: Type.Integer(),
  name: Type.String(),
  address: Type.String(),
  description: Type.String(),
  is_mainnet: Type.Boolean(),
  created_at: Type.String(),
  updated_at: Type.String(),
});

export const WalletRef = component('Wallet', WalletSchema);

/** A wallet with its tokens and network: show, create and update answer with it. */
export const WalletDetailRef = component(
  'WalletDetail',
  Type.Intersect([WalletRef, Type.Object({ wallet_tokens: Type.Array(WalletTokenRef), network: NetworkRef })]),
);

export const WalletParams = Type.Object({ wallet: Type.String() });

export const CreateWalletBody = Type.Object({
  name: Type.String({ minLength: 1, maxLength: 255 }),
  network_id: Type.Integer({ minimum: 1 }),
  description: Type.Optional(Type.String({ maxLength: 1000 })),
});
export type CreateWalletInput = Static<typeof CreateWalletBody>;

export const UpdateWalletBody = Type.Object({
  name: Type.Optional(Type.String({ minLength: 1, maxLength: 255 })),
  description: Type.Optional(Type.String({ maxLength: 1000 })),
});
export type UpdateWalletInput = Static<typeof UpdateWalletBody>;
