/**
 * Direct-to-database factories for tests that need rows without going through the chain
 * (e.g. webhook tests). Wallet tests create wallets through the API instead.
 */
import { randomBytes } from 'node:crypto';
import { generatePrivateKey, privateKeyToAddress } from 'viem/accounts';
import type { TestApp } from './app.js';
import { upsertNetwork } from '../../src/modules/networks/networks.repository.js';
import { walletPlace } from '../../src/modules/wallets/wallets.repository.js';

export async function ensureNetwork(t: TestApp, rpcUrl = 'http://127.0.0.1:1', name = 'Test network') {
  return upsertNetwork(
    t.store.db,
    { name, rpc_url: rpcUrl, chain_id: 31337, currency_symbol: 'ETH', block_explorer: '', is_mainnet: false, confirmations: 1 },
    Date.now(),
  );
}

/** A wallet row owned by `userId`, with encrypted (throw-away) secrets and its native token. */
export async function createWalletRow(t: TestApp, userId: number, opts: { name?: string; networkId?: number } = {}) {
  const networkId = opts.networkId ?? (await ensureNetwork(t)).id;
  const key = generatePrivateKey();
  const now = Date.now();
  const wallet = await t.store.db
    .insertInto('wallets')
    .values({
      user_id: userId,
      network_id: networkId,
      name: opts.name ?? `wallet-${randomBytes(3).toString('hex')}`,
      description: '',
      address: privateKeyToAddress(key),
      private_key_enc: '',
      mnemonic_enc: '',
      next_sub_index: 1,
      created_at: now,
      updated_at: now,
    })
    .returning(['id', 'address', 'name'])
    .executeTakeFirstOrThrow();
  // Encrypted once the row has its id: each value is bound to its row (src/lib/crypto.ts).
  await t.store.db
    .updateTable('wallets')
    .set({
      private_key_enc: t.ctx.secrets.encrypt(key, walletPlace(wallet.id, 'private_key_enc')),
      mnemonic_enc: t.ctx.secrets.encrypt(
        'test test test test test test test test test test test junk',
        walletPlace(wallet.id, 'mnemonic_enc'),
      ),
    })
    .where('id', '=', wallet.id)
    .execute();
  await t.store.db
    .insertInto('wallet_tokens')
    .values({
      wallet_id: wallet.id,
      name: 'Ether',
      symbol: 'ETH',
      decimals: 18,
      contract: '0x0000000000000000000000000000000000000000',
      is_native: 1,
      is_active: 1,
      is_testnet: 1,
      created_at: now,
      updated_at: now,
    })
    .execute();
  return wallet;
}
