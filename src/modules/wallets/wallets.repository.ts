/**
 * Wallet rows. Read paths select explicit columns: the encrypted private key and mnemonic are
 * selected only by `findWalletSecrets`, which the signing code alone calls.
 */
import type { Executor } from '../../db/index.js';

export interface WalletView {
  id: number;
  user_id: number;
  network_id: number;
  name: string;
  description: string;
  address: string;
  created_at: number;
  updated_at: number;
}

const WALLET_COLUMNS = ['id', 'user_id', 'network_id', 'name', 'description', 'address', 'created_at', 'updated_at'] as const;

export function findWalletForUser(db: Executor, userId: number, walletId: number): Promise<WalletView | undefined> {
  return db
    .selectFrom('wallets')
    .select(WALLET_COLUMNS)
    .where('id', '=', walletId)
    .where('user_id', '=', userId)
    .executeTakeFirst();
}

export function listWalletsForUser(db: Executor, userId: number): Promise<WalletView[]> {
  return db.selectFrom('wallets').select(WALLET_COLUMNS).where('user_id', '=', userId).orderBy('id', 'asc').execute();
}

export function findWalletSecrets(db: Executor, walletId: number) {
  return db
    .selectFrom('wallets')
    .select(['id', 'address', 'private_key_enc', 'mnemonic_enc'])
    .where('id', '=', walletId)
    .executeTakeFirstOrThrow();
}
