/** WalletToken as the API shows it (wallet_id omitted). */
import { Type } from '@sinclair/typebox';
import type { WalletTokenRow } from '../../db/types.js';
import { formatDateTime } from '../../lib/time.js';

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

export function tokenView(t: WalletTokenRow) {
  return {
    id: t.id,
    name: t.name,
    symbol: t.symbol,
    decimals: t.decimals,
    is_native: t.is_native === 1,
    is_active: t.is_active === 1,
    is_testnet: t.is_testnet === 1,
    contract: t.contract,
    created_at: formatDateTime(t.created_at),
    updated_at: formatDateTime(t.updated_at),
  };
}

/** A WalletToken with its balance (an exact 18-place decimal string). */
export const TokenWithBalanceSchema = Type.Composite([WalletTokenSchema, Type.Object({ balance: Type.String() })]);
