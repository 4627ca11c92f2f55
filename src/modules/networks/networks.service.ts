/** Networks: registered by the CLI, from NETWORKS_FILE, and the local devnet at start. */
import { readFileSync } from 'node:fs';
import { getAddress, isAddress } from 'viem';
import { fieldError, validationError, type FieldErrors } from '../../errors.js';
import type { NetworkRow } from '../../db/types.js';
import type { AppContext } from '../../context.js';
import type { Executor } from '../../db/index.js';
import * as repo from './networks.repository.js';
import { networkView } from './networks.views.js';
import { findPreset, presetKeys, type NetworkPreset } from './presets.js';
import { isPriceCurrency, PRICE_CURRENCIES } from '../rates/currencies.js';

export const DEVNET_NAME = 'Local devnet';
export const DEVNET_CHAIN_ID = 31337;
/** How long a listing waits for the first head read of endpoints this process has not used yet. */
const HEALTH_WAIT_MS = 2_000;

/** The networks the API lists. */
export class NetworkService {
  constructor(private readonly ctx: AppContext) {}

  /** Each with its endpoints' health (after their first head read in this process, 2 s at most). */
  async list() {
    const rows = await repo.listNetworks(this.ctx.store.db);
    return Promise.all(rows.map(async (n) => networkView(n, await this.ctx.chains.checkedHealth(n, HEALTH_WAIT_MS))));
  }
}

/** The preset named by `preset`, or a 422 on `preset` listing every preset. */
export function requirePreset(key: unknown): NetworkPreset {
  const p = typeof key === 'string' ? findPreset(key) : undefined;
  if (!p) throw fieldError('preset', `Unknown preset ${JSON.stringify(key)}; the presets are: ${presetKeys().join(', ')}.`);
  return p;
}

/**
 * A definition with its preset's values where it gives none (`preset`: a key of presets.ts;
 * anything given explicitly wins, e.g. a test's chain id). Without `preset`, as it was.
 */
export function applyPreset(raw: Record<string, unknown>): Record<string, unknown> {
  if (raw.preset === undefined || raw.preset === null) return raw;
  const p = requirePreset(raw.preset);
  const given = Object.fromEntries(Object.entries(raw).filter(([, v]) => v !== undefined));
  return {
    name: p.name,
    chain_id: p.chain_id,
    currency_symbol: p.currency_symbol,
    block_explorer: p.block_explorer,
    is_mainnet: p.is_mainnet,
    confirmations: p.confirmations,
    ...given,
    preset: p.key,
  };
}

/** Checks a network definition (from the CLI or a file); throws a 422-style error naming the fields. */
export function checkNetworkInput(input: Record<string, unknown>): repo.NetworkInput {
  const raw = applyPreset(input);
  const errors: FieldErrors = {};
  const add = (f: string, m: string) => (errors[f] ??= []).push(m);
  const name = raw.name;
  if (typeof name !== 'string' || name.trim() === '') add('name', 'The name field is required.');
  else if (name.length > 100) add('name', 'The name field must not be greater than 100 characters.');
  const urls = checkRpcUrls(raw, add);
  const chainId = Number(raw.chain_id);
  if (!Number.isSafeInteger(chainId) || chainId < 1) add('chain_id', 'The chain_id field must be a positive integer.');
  const symbol = raw.currency_symbol;
  if (typeof symbol !== 'string' || !/^[A-Za-z0-9.]{1,20}$/.test(symbol)) add('currency_symbol', 'The currency_symbol field is invalid.');
  const explorer = raw.block_explorer ?? '';
  if (typeof explorer !== 'string' || (explorer !== '' && !isHttpUrl(explorer)))
    add('block_explorer', 'The block_explorer field must be a valid URL.');
  const confirmations = raw.confirmations === undefined ? 1 : Number(raw.confirmations);
  if (!Number.isSafeInteger(confirmations) || confirmations < 1 || confirmations > 1000)
    add('confirmations', 'The confirmations field must be between 1 and 1000.');
  const priceFeeds = checkPriceFeeds(raw.price_feeds, add);
  if (Object.keys(errors).length > 0) throw validationError(errors);
  return {
    name: (name as string).trim(),
    rpc_url: urls[0]!,
    rpc_urls: urls,
    chain_id: chainId,
    currency_symbol: symbol as string,
    block_explorer: explorer as string,
    is_mainnet: raw.is_mainnet === true,
    confirmations,
    preset: typeof raw.preset === 'string' ? raw.preset : null,
    price_feeds: priceFeeds,
  };
}

/**
 * `price_feeds`: Chainlink feeds beyond the preset's, `{"ETH/USD": address}`, each pair a symbol
 * and a currency of price charges; absent: none.
 */
function checkPriceFeeds(raw: unknown, add: (f: string, m: string) => void): Record<string, string> | null {
  if (raw === undefined || raw === null) return null;
  const message = `The price_feeds field must map pairs like "ETH/USD" (a currency of ${PRICE_CURRENCIES.join(', ')}) to contract addresses.`;
  if (typeof raw !== 'object' || Array.isArray(raw)) {
    add('price_feeds', message);
    return null;
  }
  const out: Record<string, string> = {};
  for (const [pair, address] of Object.entries(raw)) {
    const [symbol, currency] = pair.split('/');
    if (!/^[A-Za-z0-9.]{1,20}$/.test(symbol ?? '') || !isPriceCurrency(currency) || typeof address !== 'string' || !isAddress(address)) {
      add('price_feeds', message);
      return null;
    }
    out[`${symbol}/${currency}`] = getAddress(address);
  }
  return out;
}

/** At most this many endpoints per network. */
const MAX_RPC_URLS = 10;

/**
 * The endpoints, in order: `rpc_urls` (an array: a NETWORKS_FILE entry, `network:add --rpc-url`
 * repeated) or `rpc_url` alone. Each an http(s) URL, no URL twice.
 */
function checkRpcUrls(raw: Record<string, unknown>, add: (f: string, m: string) => void): string[] {
  if (raw.rpc_urls === undefined) {
    const rpc = raw.rpc_url;
    if (typeof rpc !== 'string' || !isHttpUrl(rpc)) add('rpc_url', 'The rpc_url field must be a valid URL.');
    return [rpc as string];
  }
  const list = raw.rpc_urls;
  if (
    !Array.isArray(list) ||
    list.length === 0 ||
    list.length > MAX_RPC_URLS ||
    !list.every((u) => typeof u === 'string' && isHttpUrl(u))
  ) {
    add('rpc_urls', `The rpc_urls field must be a list of 1 to ${MAX_RPC_URLS} valid URLs.`);
    return [''];
  }
  if (new Set(list).size !== list.length) add('rpc_urls', 'The rpc_urls field must not list a URL twice.');
  if (typeof raw.rpc_url === 'string' && raw.rpc_url !== list[0]) add('rpc_url', 'The rpc_url field must be the first of rpc_urls.');
  return list as string[];
}

function isHttpUrl(v: string): boolean {
  try {
    const u = new URL(v);
    return u.protocol === 'http:' || u.protocol === 'https:';
  } catch {
    return false;
  }
}

export async function registerNetwork(db: Executor, input: Record<string, unknown>, nowMs: number): Promise<NetworkRow> {
  return repo.upsertNetwork(db, checkNetworkInput(input), nowMs);
}

/** The local devnet, on its endpoints (DEVNET_RPC_URL may list several). */
export async function registerDevnet(db: Executor, rpcUrls: readonly string[], nowMs: number): Promise<NetworkRow> {
  return repo.upsertNetwork(
    db,
    {
      name: DEVNET_NAME,
      rpc_url: rpcUrls[0]!,
      rpc_urls: rpcUrls,
      chain_id: DEVNET_CHAIN_ID,
      currency_symbol: 'ETH',
      block_explorer: '',
      is_mainnet: false,
      confirmations: 1,
    },
    nowMs,
  );
}

/** NETWORKS_FILE: a JSON array of network definitions. */
export async function registerNetworksFile(db: Executor, path: string, nowMs: number): Promise<NetworkRow[]> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(readFileSync(path, 'utf8'));
  } catch (e) {
    throw new Error(`NETWORKS_FILE ${path} is not readable JSON: ${(e as Error).message}`, { cause: e });
  }
  if (!Array.isArray(parsed)) throw fieldError('networks', 'NETWORKS_FILE must hold a JSON array of networks.');
  const out: NetworkRow[] = [];
  for (const item of parsed) out.push(await registerNetwork(db, item as Record<string, unknown>, nowMs));
  return out;
}
