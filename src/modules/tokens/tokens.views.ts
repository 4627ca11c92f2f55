/** WalletToken as the API shows it (wallet_id omitted); the schema is tokens.schemas.ts. */
import type { WalletTokenRow } from '../../db/types.js';
import { formatDateTime } from '../../lib/time.js';

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

/** The data of a `token.added` or `token.removed` event. */
export function tokenEventPayload(t: WalletTokenRow, at: 'added_at' | 'removed_at', nowMs: number) {
  return {
    wallet_id: t.wallet_id,
    token_id: t.id,
    name: t.name,
    symbol: t.symbol,
    contract: t.contract,
    decimals: t.decimals,
    is_native: t.is_native === 1,
    [at]: formatDateTime(nowMs),
  };
}
