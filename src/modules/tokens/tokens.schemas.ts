import { Type } from '@sinclair/typebox';
import { component } from '../../http/components.js';
import { getAddress, type Address } from 'viem';
import { isValidAddress } from '../../chain/address.js';
import { fieldError } from '../../errors.js';

export const TokenParams = Type.Object({ wallet: Type.String(), token: Type.String() });

/**
 * `contract` or `symbol`, exactly one (checked by `TokenService.resolveContract`). The address
 * format (and EIP-55 checksum of mixed case) is checked by `parseContract`, with its own message.
 */
export const AddTokenBody = Type.Object(
  {
    contract: Type.Optional(Type.String({ minLength: 1, maxLength: 100, description: 'The ERC-20 contract address.' })),
    symbol: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 20,
        description:
          "A stablecoin of the wallet's network preset (e.g. USDC), instead of `contract`; 422 when the network has no preset token of that symbol.",
      }),
    ),
  },
  { examples: [{ contract: '0xA0b86991c6218b36c1d19D4a2e9Eb0cE3606eB48' }] },
);

/** The `contract` of an add request as a checksummed address, or a 422 on the field. */
export function parseContract(raw: string): Address {
  if (!isValidAddress(raw)) throw fieldError('contract', 'The contract field must be a valid address.');
  return getAddress(raw);
}

/** WalletToken as the API shows it (wallet_id omitted). */
export const WalletTokenSchema = Type.Object({
  id: Type.Integer(),
  name: Type.String(),
  symbol: Type.String(),
  decimals: Type.Integer(),
  is_native: Type.Boolean(),
  is_active: Type.Boolean(),
  is_testnet: Type.Boolean(),
  contract: Type.String(),
  created_at: Type.String(),
  updated_at: Type.String(),
});

export const WalletTokenRef = component('WalletToken', WalletTokenSchema);

/** A WalletToken with its balance (an exact 18-place decimal string). */
export const TokenWithBalanceSchema = Type.Composite([WalletTokenSchema, Type.Object({ balance: Type.String() })]);
