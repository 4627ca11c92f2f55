/**
 * Wallets: creation (fresh mnemonic, keys encrypted at rest, native token, wallet.created in
 * the same transaction), reads, update (wallet.updated), and the signer for a wallet, which is
 * the one place a private key is decrypted.
 */
import type { Hex } from 'viem';
import type { AppContext } from '../../context.js';
import type { Executor } from '../../db/index.js';
import type { InTransaction } from '../../db/index.js';
import type { NetworkRow } from '../../db/types.js';
import { Errors, fieldError } from '../../errors.js';
import { newWalletKeys, signerFor, type TransactionSigner } from '../../chain/keys.js';
import { NATIVE_CONTRACT } from '../../chain/erc20.js';
import { recordEvent, recordEventWithWrite } from '../events/outbox.js';
import { findNetwork } from '../networks/networks.repository.js';
import { networkView } from '../networks/networks.views.js';
import { insertToken, listTokens } from '../tokens/tokens.repository.js';
import { tokenView } from '../tokens/tokens.views.js';
import * as repo from './wallets.repository.js';
import type { WalletView } from './wallets.repository.js';
import type { CreateWalletInput, UpdateWalletInput } from './wallets.schemas.js';
import { walletEventPayload, walletView } from './wallets.views.js';

export class WalletService {
  constructor(private readonly ctx: AppContext) {}

  async create(userId: number, input: CreateWalletInput, opts: { inTransaction?: InTransaction<WalletDetail> } = {}) {
    const db = this.ctx.store.db;
    const name = input.name.trim();
    if (name === '') throw fieldError('name', 'The name field is required.');
    // An integer past 2^53 is no id the database holds (PostgreSQL would refuse it as a bigint).
    const network = Number.isSafeInteger(input.network_id) ? await findNetwork(db, input.network_id) : undefined;
    if (!network) throw fieldError('network_id', 'The selected network_id is invalid.');
    const keys = newWalletKeys();
    const now = this.ctx.clock.nowMs();
    const walletId = await db.transaction().execute(async (trx) => {
      const id = await repo.insertWallet(
        trx,
        {
          user_id: userId,
          network_id: network.id,
          name,
          description: input.description ?? '',
          address: keys.address,
        },
        (id) => ({
          private_key_enc: this.ctx.secrets.encrypt(keys.privateKey, repo.walletPlace(id, 'private_key_enc')),
          mnemonic_enc: this.ctx.secrets.encrypt(keys.mnemonic, repo.walletPlace(id, 'mnemonic_enc')),
        }),
        now,
      );
      await insertToken(
        trx,
        {
          wallet_id: id,
          name: network.currency_symbol,
          symbol: network.currency_symbol,
          decimals: 18,
          contract: NATIVE_CONTRACT,
          is_native: true,
          is_testnet: network.is_mainnet !== 1,
        },
        now,
      );
      const view = (await repo.findWalletView(trx, id))!;
      await recordEvent(trx, {
        userId,
        walletId: id,
        name: 'wallet.created',
        payload: walletEventPayload(view, network, 'created_at'),
        nowMs: now,
      });
      await opts.inTransaction?.(trx, await this.detail(view, trx));
      return id;
    });
    this.ctx.log.info({ wallet_id: walletId, network_id: network.id, address: keys.address }, 'wallet created');
    return this.detail((await repo.findWalletView(db, walletId))!);
  }

  async update(wallet: WalletView, patch: UpdateWalletInput) {
    const db = this.ctx.store.db;
    const now = this.ctx.clock.nowMs();
    const clean: { name?: string; description?: string } = {};
    if (patch.name !== undefined) {
      clean.name = patch.name.trim();
      if (clean.name === '') throw fieldError('name', 'The name field is required.');
    }
    if (patch.description !== undefined) clean.description = patch.description;
    // Nothing that differs: nothing written, no event.
    if ((clean.name ?? wallet.name) === wallet.name && (clean.description ?? wallet.description) === wallet.description) {
      return this.detail(wallet);
    }
    // The answer is the row as this update left it (returned by the update), not re-read after.
    // The network is read before: the update's row lock and the user's event-order lock (which
    // every update of this user's wallets waits for) are held for the update, the event and the
    // commit only. First as one statement (on PostgreSQL; events.repository.ts) that writes only
    // if the fields the patch leaves alone are as read, so that the event is known before it.
    const network = (await findNetwork(db, wallet.network_id))!;
    const expected = { ...wallet, ...clean, updated_at: now };
    const event = { userId: wallet.user_id, walletId: wallet.id, name: 'wallet.updated' as const, nowMs: now };
    const written = await recordEventWithWrite(db, repo.guardedWalletUpdate(wallet.id, clean, wallet, now), {
      ...event,
      payload: walletEventPayload(expected, network, 'updated_at'),
    });
    if (written) return this.detail({ ...written, is_mainnet: network.is_mainnet }, db, network);
    // Changed meanwhile (or gone): in a transaction, the event made from the row the update returns.
    const updated = await db.transaction().execute(async (trx) => {
      const row = await repo.updateWallet(trx, wallet.id, clean, now);
      if (!row) throw Errors.walletNotFound();
      const view = { ...row, is_mainnet: network.is_mainnet };
      await recordEvent(trx, { ...event, payload: walletEventPayload(view, network, 'updated_at') });
      return view;
    });
    return this.detail(updated, db, network);
  }

  /** The user's wallet with this id; undefined for another user's wallet or none. */
  findForUser(userId: number, walletId: number): Promise<WalletView | undefined> {
    return repo.findWalletForUser(this.ctx.store.db, userId, walletId);
  }

  list(userId: number) {
    return repo.listWalletsForUser(this.ctx.store.db, userId);
  }

  /** `known`: the wallet's network, when the caller has just read it. */
  async detail(w: WalletView, db: Executor = this.ctx.store.db, known?: NetworkRow) {
    const [tokens, network] = await Promise.all([listTokens(db, w.id), known ?? findNetwork(db, w.network_id)]);
    return { ...walletView(w), wallet_tokens: tokens.map(tokenView), network: networkView(network!, this.ctx.chains.health(network!)) };
  }

  /** The signing account of a wallet's main address. Decrypts the key; never log the result. */
  async signer(walletId: number): Promise<TransactionSigner> {
    const secrets = await repo.findWalletSecrets(this.ctx.store.db, walletId);
    return signerFor(
      this.ctx.secrets.decrypt(secrets.private_key_enc, repo.walletPlace(walletId, 'private_key_enc')) as Hex,
      secrets.address,
    );
  }

  /** The wallet's mnemonic, for deriving sub-wallet addresses. Never log the result. */
  async mnemonic(walletId: number): Promise<string> {
    const secrets = await repo.findWalletSecrets(this.ctx.store.db, walletId);
    return this.ctx.secrets.decrypt(secrets.mnemonic_enc, repo.walletPlace(walletId, 'mnemonic_enc'));
  }
}

export type WalletDetail = Awaited<ReturnType<WalletService['detail']>>;
