/**
 * Balances. The chain is the source of truth; wallet_balances caches it. `refresh` reads the
 * chain first (no transaction open), then writes every changed balance and its
 * `balance.updated` event in one transaction. The first observation of a balance counts as a
 * change from zero (so a non-zero first reading emits an event, a zero one does not).
 *
 * Readings move forward only. A reading is taken at a named block (the head when it starts) and
 * stored with it (migration 012); one older than the stored reading is not stored and emits
 * nothing, so two refreshes that race (the watcher's and a request's) can never store the older
 * value last, and for one wallet and token each `balance.updated` has a `block_number` no lower
 * than the one before.
 *
 * Reads for the API (`getBalances`) serve the cache while it is younger than BALANCE_MAX_AGE_S,
 * else re-read the chain (one shared read per wallet and token set at a time, so a burst of
 * requests on a stale cache costs one round of RPC calls, not one per request). When the node
 * fails, the last cached values are served and flagged as such; with nothing cached the
 * request fails with 503 (node unreachable) or 502 (node answered with an error).
 */
import type { Address } from 'viem';
import type { AppContext } from '../../context.js';
import type { WalletTokenRow } from '../../db/types.js';
import { atHead } from '../../chain/blocks.js';
import { readBalance } from '../../chain/erc20.js';
import { mapChainError } from '../../chain/errors.js';
import { AppError, Errors, isAppError } from '../../errors.js';
import { recordEvent } from '../events/outbox.js';
import { findNetwork } from '../networks/networks.repository.js';
import { listTokens } from '../tokens/tokens.repository.js';
import * as repo from './balances.repository.js';
import { balanceEventPayload, walletBalanceView } from './balances.views.js';

export interface BalanceOwner {
  id: number;
  user_id: number;
  network_id: number;
  address: string;
}

/**
 * Where a reading came from: `chain` read just now; `cache` a cached value younger than
 * BALANCE_MAX_AGE_S; `fallback` an older cached value served because the chain read failed.
 */
export type BalanceSource = 'chain' | 'cache' | 'fallback';

export interface BalanceReading {
  /** Base units by token id, one for every token asked for. */
  values: Map<number, bigint>;
  source: BalanceSource;
  /** With source `fallback`: the node was unreachable, or it answered with an error. */
  failure?: 'unavailable' | 'error';
}

/** The API message of a reading: the given one, or a note that the values come from the cache. */
export function readingMessage(reading: BalanceReading, okMessage: string): string {
  if (reading.source !== 'fallback') return okMessage;
  return reading.failure === 'unavailable'
    ? 'Balance from cache: the blockchain node is unavailable'
    : 'Balance from cache: the blockchain node returned an error';
}

/** Chain balances by token id, all read at block `block`. */
export interface ChainReading {
  values: Map<number, bigint>;
  block: number;
}

type RefreshOutcome = { ok: true; fresh: Map<number, bigint> } | { ok: false; error: AppError };

export class BalanceService {
  /** Chain reads in progress, by wallet and token set; requests that find one join it. */
  private readonly inflight = new Map<string, Promise<RefreshOutcome>>();
  /** The balance route's view of cached rows, by the (frozen) rows it was made from. */
  private readonly views = new WeakMap<repo.TokensWithCache, ReturnType<typeof walletBalanceView>>();

  constructor(private readonly ctx: AppContext) {}

  /**
   * Reads the chain balance of each token (default: every active token), all at the node's
   * head block, named. Throws mapped chain errors.
   */
  async readChain(wallet: BalanceOwner, tokens: WalletTokenRow[]): Promise<ChainReading> {
    const network = await findNetwork(this.ctx.store.db, wallet.network_id);
    if (!network) throw new Error(`network ${wallet.network_id} missing`);
    const client = this.ctx.chains.get(network);
    try {
      return await atHead(client, async (head) => {
        const values = await Promise.all(tokens.map((t) => readBalance(client, t.contract, wallet.address as Address, head)));
        return { values: new Map(tokens.map((t, i) => [t.id, values[i]!])), block: Number(head) };
      });
    } catch (e) {
      throw mapChainError(e);
    }
  }

  /**
   * Writes readings into the cache and emits balance.updated for each change, in one
   * transaction. A token whose stored reading is of a later block keeps it (nothing emitted).
   */
  async store(wallet: BalanceOwner, tokens: WalletTokenRow[], reading: ChainReading): Promise<void> {
    const now = this.ctx.clock.nowMs();
    const { dialect } = this.ctx.store;
    await this.ctx.store.db.transaction().execute(async (trx) => {
      for (const token of tokens) {
        const amount = reading.values.get(token.id);
        if (amount === undefined) continue;
        // The row exists before it is locked (a first reading starts from zero), so two
        // processes storing the first reading at once serialise on the row lock and only
        // the first of them sees a change and writes the event.
        await repo.insertBalance(trx, wallet.id, token.id, 0n, now);
        const cached = (await repo.findCachedBalanceForUpdate(trx, dialect, wallet.id, token.id))!;
        if (cached.block_number !== null && cached.block_number > reading.block) continue; // an older reading
        const old = cached.amount;
        if (old === amount) {
          await repo.touchBalance(trx, cached.id, reading.block, now);
          continue;
        }
        await repo.updateBalance(trx, cached.id, amount, old, reading.block, now);
        await recordEvent(trx, {
          userId: wallet.user_id,
          walletId: wallet.id,
          name: 'balance.updated',
          payload: balanceEventPayload(wallet.id, token, old, amount, reading.block, now),
          nowMs: now,
        });
      }
    });
  }

  /** Reads the chain and stores the readings (a token just added). Throws on a chain or database failure. */
  async refresh(wallet: BalanceOwner, tokens: WalletTokenRow[]): Promise<void> {
    const outcome = await this.refreshShared(wallet, tokens);
    if (!outcome.ok) throw outcome.error;
  }

  cached(walletId: number) {
    return repo.listCachedBalances(this.ctx.store.db, walletId);
  }

  /**
   * Balances of `tokens` (default: every active token) for the API, by the freshness rule in
   * the header. Never fails with a 500 because of the node: 503 when unreachable and nothing is
   * cached, 502 when it answered with an error and nothing is cached.
   */
  async getBalances(wallet: BalanceOwner, tokens?: WalletTokenRow[]): Promise<BalanceReading> {
    const list = tokens ?? (await listTokens(this.ctx.store.db, wallet.id, { activeOnly: true }));
    return this.resolve(wallet, list, await this.cached(wallet.id));
  }

  private async resolve(wallet: BalanceOwner, list: WalletTokenRow[], cached: Map<number, repo.CachedBalance>): Promise<BalanceReading> {
    const maxAgeMs = this.ctx.config.balanceMaxAgeS * 1000;
    const now = this.ctx.clock.nowMs();
    const allCached = list.every((t) => cached.has(t.id));
    if (allCached && list.every((t) => now - cached.get(t.id)!.refreshed_at < maxAgeMs)) {
      return { values: cachedValues(list, cached), source: 'cache' };
    }
    const outcome = await this.refreshShared(wallet, list);
    if (outcome.ok) return { values: outcome.fresh, source: 'chain' };
    const unavailable = outcome.error.code === 'CHAIN_UNAVAILABLE';
    if (allCached) {
      this.ctx.log.warn(
        { wallet_id: wallet.id, code: outcome.error.code, err: outcome.error.cause ?? outcome.error },
        'balance read failed; serving cached values',
      );
      return { values: cachedValues(list, cached), source: 'fallback', failure: unavailable ? 'unavailable' : 'error' };
    }
    if (unavailable) throw outcome.error;
    throw Errors.chainError(outcome.error.cause ?? outcome.error);
  }

  /** The balance route's data: the native balance and every active token with its balance. */
  async walletBalances(wallet: BalanceOwner) {
    const read = await repo.listActiveTokensWithCache(this.ctx.store.db, wallet.id);
    const reading = await this.resolve(wallet, read.tokens, read.cached);
    if (reading.source !== 'cache' || !Object.isFrozen(read)) return { data: walletBalanceView(read.tokens, reading.values), reading };
    // Served from cached rows the read cache kept (src/db/read-cache.ts): the view is a function
    // of those rows alone, so it is formatted once per change of the rows, not per request.
    let data = this.views.get(read);
    if (!data) {
      data = Object.freeze(walletBalanceView(read.tokens, reading.values));
      this.views.set(read, data);
    }
    return { data, reading };
  }

  private refreshShared(wallet: BalanceOwner, tokens: WalletTokenRow[]): Promise<RefreshOutcome> {
    const key = `${wallet.id}:${tokens.map((t) => t.id).join(',')}`;
    const running = this.inflight.get(key);
    if (running) return running;
    const p = this.refreshOutcome(wallet, tokens).finally(() => this.inflight.delete(key));
    this.inflight.set(key, p);
    return p;
  }

  /** A chain failure is an outcome (the caller may fall back to the cache); a database failure throws. */
  private async refreshOutcome(wallet: BalanceOwner, tokens: WalletTokenRow[]): Promise<RefreshOutcome> {
    let reading: ChainReading;
    try {
      reading = await this.readChain(wallet, tokens);
    } catch (e) {
      if (isAppError(e)) return { ok: false, error: e };
      throw e;
    }
    await this.store(wallet, tokens, reading);
    return { ok: true, fresh: reading.values };
  }
}

function cachedValues(list: readonly WalletTokenRow[], cached: Map<number, repo.CachedBalance>): Map<number, bigint> {
  return new Map(list.map((t) => [t.id, cached.get(t.id)!.amount]));
}
