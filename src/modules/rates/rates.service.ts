/**
 * Exchange rates: what one whole token is worth in a currency of price charges (docs/prices.md).
 *
 * A token's rate in a currency is, in this order:
 * 1. a manual rate (`rate:set`), the network's own before one set for every network; it holds
 *    until it is changed or cleared: the operator chose it, no clock ages it;
 * 2. the network's Chainlink feed of the pair (`SYMBOL/CURRENCY`: the preset's, then those
 *    NETWORKS_FILE or the devnet's start name, the latter winning), read through the network's
 *    own endpoints, when its last report is at most RATE_MAX_AGE_S old: an older one, or one
 *    that cannot be read, is no rate, and the next source is asked;
 * 3. 1, for a token its network's preset marks pegged to that currency (USDC, USDT to USD), the
 *    preset's own contract only: a token of the same symbol elsewhere is not the issuer's.
 * None of them: no rate.
 */
import { getAddress, type Address } from 'viem';
import type { Logger } from 'pino';
import type { AppContext } from '../../context.js';
import type { NetworkRow } from '../../db/types.js';
import { readFeed } from '../../chain/price-feeds.js';
import { formatUnits18, parseAmount } from '../../lib/money.js';
import { fieldError } from '../../errors.js';
import { findNetwork, listNetworks } from '../networks/networks.repository.js';
import { findPreset } from '../networks/presets.js';
import { isPriceCurrency, PRICE_CURRENCIES, RATE_DECIMALS, type PriceCurrency } from './currencies.js';
import { clearManualRate, EVERY_NETWORK, listManualRates, setManualRate, type ManualRateRow } from './rates.repository.js';

export type RateSource = 'manual' | 'chainlink' | 'pegged';

export interface Rate {
  /** The token's symbol. */
  token: string;
  currency: PriceCurrency;
  /** Units of the currency for one whole token, RATE_DECIMALS places. */
  value: bigint;
  source: RateSource;
  /** When it was set, reported (a feed's last report) or, pegged, read. */
  atMs: number;
}

/** What a rate is looked up for: a symbol, and the contract (null: the network's native coin). */
export interface RateToken {
  symbol: string;
  contract: string | null;
}

const ONE = 10n ** BigInt(RATE_DECIMALS);

export class RateService {
  private readonly log: Logger;

  constructor(private readonly ctx: AppContext) {
    this.log = ctx.log.child({ component: 'rates' });
  }

  /**
   * `rate:set`: a manual rate of `symbol` in `currency` on one network (or, without one, every
   * network), `value` a decimal > 0 of at most RATE_DECIMALS places. 422 naming the field.
   */
  async setManual(input: { symbol: string; currency: string; value: string; networkId?: number }): Promise<ManualRateRow> {
    const pair = await this.checkPair(input);
    let value: bigint;
    try {
      value = parseAmount(input.value, RATE_DECIMALS);
    } catch {
      value = 0n;
    }
    if (value <= 0n) throw fieldError('value', `The value must be a number greater than 0 with at most ${RATE_DECIMALS} decimal places.`);
    const row = { ...pair, value: formatUnits18(value, RATE_DECIMALS) };
    await setManualRate(this.ctx.store.db, row, this.ctx.clock.nowMs());
    this.log.info({ network_id: row.network_id, symbol: row.symbol, currency: row.currency, value: row.value }, 'manual rate set');
    return { ...row, updated_at: this.ctx.clock.nowMs() };
  }

  /** `rate:clear`: false when no such manual rate was set. */
  async clearManual(input: { symbol: string; currency: string; networkId?: number }): Promise<boolean> {
    const cleared = await clearManualRate(this.ctx.store.db, await this.checkPair(input));
    if (cleared)
      this.log.info(
        { network_id: input.networkId ?? EVERY_NETWORK, symbol: input.symbol, currency: input.currency },
        'manual rate cleared',
      );
    return cleared;
  }

  private async checkPair(input: { symbol: string; currency: string; networkId?: number }) {
    if (!/^[A-Za-z0-9.]{1,20}$/.test(input.symbol))
      throw fieldError('token', 'The token must be a symbol of 1 to 20 letters, digits or dots.');
    if (!isPriceCurrency(input.currency)) throw fieldError('currency', `The currency must be one of ${PRICE_CURRENCIES.join(', ')}.`);
    if (input.networkId !== undefined && !(await findNetwork(this.ctx.store.db, input.networkId)))
      throw fieldError('network_id', 'The selected network_id is invalid.');
    return { network_id: input.networkId ?? EVERY_NETWORK, symbol: input.symbol, currency: input.currency };
  }

  /** The rates in force on one network (422 on `network_id` when there is none) or on every network. */
  async listOn(networkId: number | undefined, currencies: readonly PriceCurrency[]): Promise<Array<{ networkId: number; rate: Rate }>> {
    const db = this.ctx.store.db;
    const networks = networkId === undefined ? await listNetworks(db) : [await findNetwork(db, networkId)];
    const out: Array<{ networkId: number; rate: Rate }> = [];
    for (const n of networks) {
      if (!n) throw fieldError('network_id', 'The selected network_id is invalid.');
      for (const rate of await this.list(n, currencies)) out.push({ networkId: n.id, rate });
    }
    return out;
  }

  /** The token's rate in the currency now, or null when no source has a fresh one. */
  async rateFor(network: NetworkRow, token: RateToken, currency: PriceCurrency): Promise<Rate | null> {
    return this.resolve(network, await listManualRates(this.ctx.store.db, network.id), token, currency);
  }

  /**
   * The rates in force on the network, in `currencies`: for the native coin, the preset's
   * tokens, and every symbol a manual rate or a feed names.
   */
  async list(network: NetworkRow, currencies: readonly PriceCurrency[] = PRICE_CURRENCIES): Promise<Rate[]> {
    const manual = await listManualRates(this.ctx.store.db, network.id);
    const tokens = new Map<string, RateToken>();
    tokens.set(network.currency_symbol, { symbol: network.currency_symbol, contract: null });
    for (const t of findPreset(network.preset ?? '')?.tokens ?? []) tokens.set(t.symbol, { symbol: t.symbol, contract: t.contract });
    for (const symbol of [...manual.map((m) => m.symbol), ...[...feedsOf(network).keys()].map((p) => p.split('/')[0]!)])
      if (!tokens.has(symbol)) tokens.set(symbol, { symbol, contract: '' });
    const out: Rate[] = [];
    for (const token of tokens.values())
      for (const currency of currencies) {
        const r = await this.resolve(network, manual, token, currency);
        if (r) out.push(r);
      }
    return out;
  }

  private async resolve(network: NetworkRow, manual: ManualRateRow[], token: RateToken, currency: PriceCurrency): Promise<Rate | null> {
    const set = manual.find((m) => m.symbol === token.symbol && m.currency === currency);
    if (set) return { token: token.symbol, currency, value: parseAmount(set.value, RATE_DECIMALS), source: 'manual', atMs: set.updated_at };
    const feed = feedsOf(network).get(`${token.symbol}/${currency}`);
    const read = feed === undefined ? null : await this.fromFeed(network, token.symbol, currency, feed);
    if (read) return read;
    return pegged(network, token, currency)
      ? { token: token.symbol, currency, value: ONE, source: 'pegged', atMs: this.ctx.clock.nowMs() }
      : null;
  }

  /** The feed's answer as a rate, or null when it cannot be read or its last report is too old (logged). */
  private async fromFeed(network: NetworkRow, symbol: string, currency: PriceCurrency, address: Address): Promise<Rate | null> {
    const pair = `${symbol}/${currency}`;
    try {
      const f = await readFeed(this.ctx.chains.get(network), address);
      const ageS = Math.round((this.ctx.clock.nowMs() - f.updatedAtMs) / 1000);
      if (ageS > this.ctx.config.rateMaxAgeS) {
        this.log.warn(
          { network_id: network.id, pair, feed: address, age_s: ageS },
          'price feed is stale: its last report is older than RATE_MAX_AGE_S',
        );
        return null;
      }
      const value =
        f.decimals <= RATE_DECIMALS
          ? f.answer * 10n ** BigInt(RATE_DECIMALS - f.decimals)
          : f.answer / 10n ** BigInt(f.decimals - RATE_DECIMALS);
      return { token: symbol, currency, value, source: 'chainlink', atMs: f.updatedAtMs };
    } catch (e) {
      this.log.warn({ network_id: network.id, pair, feed: address, err: e }, 'price feed could not be read');
      return null;
    }
  }
}

/** The network's feeds by pair: its preset's, then its own (NETWORKS_FILE, the devnet's start), which win. */
export function feedsOf(network: NetworkRow): Map<string, Address> {
  const out = new Map<string, Address>();
  for (const f of findPreset(network.preset ?? '')?.price_feeds ?? []) out.set(f.pair, getAddress(f.address));
  if (network.price_feeds !== null)
    for (const [pair, address] of Object.entries(JSON.parse(network.price_feeds) as Record<string, string>))
      out.set(pair, getAddress(address));
  return out;
}

/** Whether the network's preset marks this very contract pegged to the currency. */
function pegged(network: NetworkRow, token: RateToken, currency: PriceCurrency): boolean {
  if (!token.contract) return false;
  const contract = token.contract.toLowerCase();
  return (findPreset(network.preset ?? '')?.tokens ?? []).some((t) => t.contract.toLowerCase() === contract && t.pegged === currency);
}
