/**
 * Balances. The chain is the source of truth; wallet_balances caches it. `refresh` reads the
 * chain first (no transaction open), then writes every changed balance and its
 * `balance.updated` event in one transaction. The first observation of a balance counts as a
 * change from zero (so a non-zero first reading emits an event, a zero one does not).
 */
import type { Address } from 'viem';
import type { AppContext } from '../../context.js';
import type { WalletTokenRow } from '../../db/types.js';
import { readBalance } from '../../chain/erc20.js';
import { mapChainError } from '../../chain/errors.js';
import { formatUnits18 } from '../../lib/money.js';
import { formatDateTime } from '../../lib/time.js';
import { recordEvent } from '../events/outbox.js';
import { findNetwork } from '../networks/networks.repository.js';
import { listTokens } from '../tokens/tokens.repository.js';
import * as repo from './balances.repository.js';

export interface BalanceOwner {
  id: number;
  user_id: number;
  network_id: number;
  address: string;
}

export class BalanceService {
  constructor(private readonly ctx: AppContext) {}

  /** Reads the chain balance of each token (default: every active token). Throws mapped chain errors. */
  async readChain(wallet: BalanceOwner, tokens: WalletTokenRow[]): Promise<Map<number, bigint>> {
    const network = await findNetwork(this.ctx.store.db, wallet.network_id);
    if (!network) throw new Error(`network ${wallet.network_id} missing`);
    const client = this.ctx.chains.get(network);
    try {
      const values = await Promise.all(tokens.map((t) => readBalance(client, t.contract, wallet.address as Address)));
      return new Map(tokens.map((t, i) => [t.id, values[i]!]));
    } catch (e) {
      throw mapChainError(e);
    }
  }

  /** Reads the chain and stores the balances; returns the fresh values by token id. */
  async refresh(wallet: BalanceOwner, tokens?: WalletTokenRow[]): Promise<Map<number, bigint>> {
    const list = tokens ?? (await listTokens(this.ctx.store.db, wallet.id, { activeOnly: true }));
    const fresh = await this.readChain(wallet, list);
    await this.store(wallet, list, fresh);
    return fresh;
  }

  /** Writes readings into the cache and emits balance.updated for each change, in one transaction. */
  async store(wallet: BalanceOwner, tokens: WalletTokenRow[], fresh: Map<number, bigint>): Promise<void> {
    const now = this.ctx.clock.nowMs();
    const { dialect } = this.ctx.store;
    await this.ctx.store.db.transaction().execute(async (trx) => {
      for (const token of tokens) {
        const amount = fresh.get(token.id);
        if (amount === undefined) continue;
        const cached = await repo.findCachedBalanceForUpdate(trx, dialect, wallet.id, token.id);
        const old = cached?.amount ?? 0n;
        if (cached) {
          if (cached.amount === amount) {
            await repo.touchBalance(trx, cached.id, now);
            continue;
          }
          await repo.updateBalance(trx, cached.id, amount, cached.amount, now);
        } else {
          await repo.insertBalance(trx, wallet.id, token.id, amount, now);
          if (amount === 0n) continue;
        }
        await recordEvent(trx, {
          userId: wallet.user_id,
          walletId: wallet.id,
          name: 'balance.updated',
          payload: {
            wallet_id: wallet.id,
            token: token.symbol,
            old_balance: formatUnits18(old, token.decimals),
            new_balance: formatUnits18(amount, token.decimals),
            change: formatUnits18(amount - old, token.decimals),
            updated_at: formatDateTime(now),
          },
          nowMs: now,
        });
      }
    });
  }

  cached(walletId: number) {
    return repo.listCachedBalances(this.ctx.store.db, walletId);
  }
}
