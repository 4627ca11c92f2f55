/** Wallets as the API and the wallet events show them. */
import type { NetworkRow } from '../../db/types.js';
import { formatDateTime } from '../../lib/time.js';
import type { WalletView } from './wallets.repository.js';

export function walletView(w: WalletView) {
  return {
    id: w.id,
    name: w.name,
    address: w.address,
    description: w.description,
    is_mainnet: w.is_mainnet === 1,
    created_at: formatDateTime(w.created_at),
    updated_at: formatDateTime(w.updated_at),
  };
}

/** The data of a `wallet.created` or `wallet.updated` event. */
export function walletEventPayload(w: WalletView, network: NetworkRow, at: 'created_at' | 'updated_at') {
  return {
    wallet_id: w.id,
    name: w.name,
    address: w.address,
    description: w.description,
    is_mainnet: network.is_mainnet === 1,
    network: network.chain_id,
    [at]: formatDateTime(at === 'created_at' ? w.created_at : w.updated_at),
  };
}
