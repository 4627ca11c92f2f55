/**
 * Wallet tokens: list, show (with balance), add an ERC-20 by contract address, remove.
 *
 * Adding reads the contract on chain first, with no transaction open (code, name, symbol,
 * decimals and the wallet's balance, which also proves balanceOf works), then checks and
 * writes in one transaction that holds the wallet's token lock: the contract is not already
 * active, no active token has the same symbol (symbols identify tokens in transaction create),
 * insert or reactivate, and the `token.added` event. The balance just read is then stored like
 * any other reading (`balance.updated` if it differs from the cache).
 *
 * The token may already be held: its reconciliation checkpoint (the block of the node's head
 * and balanceOf at that block, read before the transaction) is written with it, so the
 * reconciliation counts only what moves after (src/modules/reconciliation/).
 */
import type { Address } from 'viem';
import type { AppContext } from '../../context.js';
import type { Executor } from '../../db/index.js';
import type { NetworkRow, WalletTokenRow } from '../../db/types.js';
import { getAddress } from 'viem';
import { atHead } from '../../chain/blocks.js';
import { probeErc20, readBalance, type Erc20Probe, type TokenMetadata } from '../../chain/erc20.js';
import { mapChainError } from '../../chain/errors.js';
import { fieldError } from '../../errors.js';
import { recordEvent } from '../events/outbox.js';
import { findNetwork } from '../networks/networks.repository.js';
import { findPresetToken } from '../networks/presets.js';
import { resetCheckpoint } from '../reconciliation/reconciliation.repository.js';
import type { BalanceService } from '../wallets/balances.service.js';
import { tokenBalanceView } from '../wallets/balances.views.js';
import { lockWallet, type WalletView } from '../wallets/wallets.repository.js';
import * as repo from './tokens.repository.js';
import { parseContract } from './tokens.schemas.js';
import { tokenEventPayload, tokenView } from './tokens.views.js';

/** ERC-20 amounts are shown with 18 decimal places, so a token with more cannot be shown exactly. */
export const MAX_TOKEN_DECIMALS = 18;
export const MAX_SYMBOL_LENGTH = 64;
export const MAX_NAME_LENGTH = 255;

// eslint-disable-next-line no-control-regex -- control characters are what it looks for
const CONTROL_CHARS = /[\u0000-\u001f\u007f]/;

/** The metadata as stored, or a 422 on the `contract` field saying why the token cannot be used. */
function checkMetadata(meta: TokenMetadata): TokenMetadata {
  if (!Number.isInteger(meta.decimals) || meta.decimals < 0 || meta.decimals > MAX_TOKEN_DECIMALS) {
    throw fieldError('contract', `The token must not have more than ${MAX_TOKEN_DECIMALS} decimals.`);
  }
  const symbol = meta.symbol.trim();
  if (symbol === '' || symbol.length > MAX_SYMBOL_LENGTH || CONTROL_CHARS.test(symbol)) {
    throw fieldError('contract', `The token symbol must be 1 to ${MAX_SYMBOL_LENGTH} printable characters.`);
  }
  const name = meta.name.trim() === '' ? symbol : meta.name.trim();
  if (name.length > MAX_NAME_LENGTH || CONTROL_CHARS.test(name)) {
    throw fieldError('contract', `The token name must be at most ${MAX_NAME_LENGTH} printable characters.`);
  }
  return { name, symbol, decimals: meta.decimals };
}

export class TokenService {
  constructor(
    private readonly ctx: AppContext,
    private readonly balances: BalanceService,
  ) {}

  /** Every token of the wallet, active and removed, oldest first. */
  async list(wallet: WalletView) {
    return (await repo.listTokens(this.ctx.store.db, wallet.id)).map(tokenView);
  }

  /** The token of this wallet with this id (undefined for another wallet's token). */
  find(wallet: WalletView, tokenId: number): Promise<WalletTokenRow | undefined> {
    return repo.findToken(this.ctx.store.db, wallet.id, tokenId);
  }

  /** One token with its balance, by the same freshness rule as the balance route. */
  async show(wallet: WalletView, token: WalletTokenRow) {
    const reading = await this.balances.getBalances(wallet, [token]);
    return { data: tokenBalanceView(token, reading.values.get(token.id)!), reading };
  }

  /**
   * The contract an add request names: its `contract`, or the token of its `symbol` in the preset
   * of the wallet's network (the network's `preset`, so an overridden chain id does not matter).
   * Exactly one of the two, else a 422.
   */
  async resolveContract(wallet: WalletView, body: { contract?: string; symbol?: string }): Promise<Address> {
    if (body.contract !== undefined && body.symbol !== undefined)
      throw fieldError('symbol', 'The symbol field must not be given with the contract field.');
    if (body.symbol === undefined) {
      if (body.contract === undefined) throw fieldError('contract', 'The contract field is required.');
      return parseContract(body.contract);
    }
    const network = await findNetwork(this.ctx.store.db, wallet.network_id);
    const token = findPresetToken(network?.preset ?? null, body.symbol);
    if (!token) throw fieldError('symbol', `The network of this wallet has no preset token with the symbol ${body.symbol}.`);
    return getAddress(token.contract);
  }

  /** Adds the ERC-20 at `contract` (a checked address), or reactivates it if it was removed. */
  async add(wallet: WalletView, contract: Address) {
    const db = this.ctx.store.db;
    const existing = await repo.findTokenByContractAnyCase(db, wallet.id, contract);
    if (existing?.is_active === 1) throw fieldError('contract', 'The contract has already been added.');
    const network = await findNetwork(db, wallet.network_id);
    if (!network) throw new Error(`network ${wallet.network_id} missing`);
    const probe = await this.probe(wallet, network, contract);
    const meta = checkMetadata(probe.metadata);
    const checkpoint = await this.checkpointReading(network, contract, wallet.address as Address);

    const now = this.ctx.clock.nowMs();
    const token = await db.transaction().execute(async (trx) => {
      await lockWallet(trx, wallet.id);
      const row = await this.insertOrReactivate(trx, wallet, network, contract, meta, now);
      await resetCheckpoint(trx, { wallet_id: wallet.id, address: getAddress(wallet.address), token_id: row.id, ...checkpoint }, now);
      await recordEvent(trx, {
        userId: wallet.user_id,
        walletId: wallet.id,
        name: 'token.added',
        payload: tokenEventPayload(row, 'added_at', now),
        nowMs: now,
      });
      return row;
    });
    this.ctx.log.info(
      { wallet_id: wallet.id, token_id: token.id, contract, symbol: token.symbol, reactivated: Boolean(existing) },
      'token added',
    );

    try {
      // Read again at a named block (the probe's reading has none): readings move forward only.
      await this.balances.refresh(wallet, [token]);
    } catch (e) {
      // The token is added; its balance is read again on the next balance request.
      this.ctx.log.warn({ wallet_id: wallet.id, token_id: token.id, err: e }, 'storing the first token balance failed');
    }
    return tokenView(token);
  }

  /** Reads the contract on chain (no transaction open); a 422 on `contract` when it is no ERC-20. */
  private async probe(wallet: WalletView, network: NetworkRow, contract: Address): Promise<Extract<Erc20Probe, { kind: 'token' }>> {
    let probe: Erc20Probe;
    try {
      probe = await probeErc20(this.ctx.chains.get(network), contract, wallet.address as Address);
    } catch (e) {
      throw mapChainError(e);
    }
    if (probe.kind === 'no-code') throw fieldError('contract', 'The contract field must be the address of a deployed contract.');
    if (probe.kind === 'not-erc20') throw fieldError('contract', 'The contract field must be the address of an ERC-20 token contract.');
    return probe;
  }

  /** The node's head and the wallet's balance of the token at that block (no transaction open). */
  private async checkpointReading(
    network: NetworkRow,
    contract: Address,
    owner: Address,
  ): Promise<{ block_number: number; balance: bigint }> {
    const client = this.ctx.chains.get(network);
    try {
      return await atHead(client, async (head) => ({
        block_number: Number(head),
        balance: await readBalance(client, contract, owner, head),
      }));
    } catch (e) {
      throw mapChainError(e);
    }
  }

  /** Under the wallet lock: the contract is not active, its symbol is free; insert or reactivate. */
  private async insertOrReactivate(
    trx: Executor,
    wallet: WalletView,
    network: NetworkRow,
    contract: Address,
    meta: TokenMetadata,
    now: number,
  ) {
    const current = await repo.findTokenByContractAnyCase(trx, wallet.id, contract);
    if (current?.is_active === 1) throw fieldError('contract', 'The contract has already been added.');
    const clash = await repo.findActiveTokenBySymbol(trx, wallet.id, meta.symbol);
    if (clash) throw fieldError('contract', `The symbol ${meta.symbol} is already used by an active token of this wallet.`);
    if (current) return repo.reactivateToken(trx, current.id, meta, now);
    return repo.insertToken(trx, { wallet_id: wallet.id, ...meta, contract, is_native: false, is_testnet: network.is_mainnet !== 1 }, now);
  }

  /** Marks the token inactive (`token.removed`). Removing a removed token changes nothing and emits nothing. */
  async remove(wallet: WalletView, token: WalletTokenRow) {
    if (token.is_native === 1) throw fieldError('token', 'The native token cannot be removed.');
    const now = this.ctx.clock.nowMs();
    const row = await this.ctx.store.db.transaction().execute(async (trx) => {
      await lockWallet(trx, wallet.id);
      const current = await repo.findToken(trx, wallet.id, token.id);
      if (!current || current.is_active !== 1) return current ?? token;
      await repo.setTokenActive(trx, current.id, false, now);
      const removed = (await repo.findToken(trx, wallet.id, token.id))!;
      await recordEvent(trx, {
        userId: wallet.user_id,
        walletId: wallet.id,
        name: 'token.removed',
        payload: tokenEventPayload(removed, 'removed_at', now),
        nowMs: now,
      });
      return removed;
    });
    return tokenView(row);
  }
}
