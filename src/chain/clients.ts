/**
 * One viem public client per network, built from the network row and cached by id, RPC URLs and
 * chain id. Its transport is the network's endpoints (src/chain/endpoints.ts): failover, rests,
 * lag and broadcasts to every endpoint that is up. RPC calls carry a time-out and a bounded
 * retry, so dead nodes answer quickly as an error.
 */
import { createPublicClient, defineChain, type Chain, type PublicClient } from 'viem';
import { endpointUrls, EndpointSet, type EndpointHealth, type EndpointStats } from './endpoints.js';

export interface NetworkLike {
  id: number;
  name: string;
  rpc_url: string;
  /** Every endpoint, a JSON array whose first element is rpc_url (migration 015); null or absent: rpc_url alone. */
  rpc_urls?: string | null;
  chain_id: number;
  currency_symbol: string;
}

export interface ChainClientOptions {
  timeoutMs: number;
  retryCount: number;
  /** RPC_MAX_LAG_BLOCKS: an endpoint further behind the best head serves no reads. */
  maxLagBlocks: number;
  /** How often each endpoint's head is read (WATCHER_POLL_MS). */
  healthEveryMs: number;
}

const DEFAULTS: ChainClientOptions = { timeoutMs: 5_000, retryCount: 1, maxLagBlocks: 3, healthEveryMs: 1_000 };

export function chainOf(n: NetworkLike): Chain {
  return defineChain({
    id: n.chain_id,
    name: n.name,
    nativeCurrency: { name: n.currency_symbol, symbol: n.currency_symbol, decimals: 18 },
    rpcUrls: { default: { http: endpointUrls(n) } },
  });
}

interface Entry {
  key: string;
  client: PublicClient;
  endpoints: EndpointSet;
}

export class ChainClients {
  private readonly byNetwork = new Map<number, Entry>();
  private readonly opts: ChainClientOptions;

  constructor(opts: Partial<ChainClientOptions> = {}) {
    this.opts = { ...DEFAULTS, ...opts };
  }

  get(n: NetworkLike): PublicClient {
    return this.entry(n).client;
  }

  /** The network's endpoints as this process knows them now (no call made). */
  health(n: NetworkLike): EndpointHealth[] {
    return this.entry(n).endpoints.health();
  }

  /** The same, after the first head read of each endpoint (waiting at most `waitMs` for it). */
  checkedHealth(n: NetworkLike, waitMs: number): Promise<EndpointHealth[]> {
    return this.entry(n).endpoints.checkedHealth(waitMs);
  }

  /** The same, after a head read of every endpoint now (waiting at most `waitMs` for it). */
  freshHealth(n: NetworkLike, waitMs: number): Promise<EndpointHealth[]> {
    return this.entry(n).endpoints.freshHealth(waitMs);
  }

  /** Calls and errors per endpoint host of every network this process has used. */
  stats(): Array<EndpointStats & { network_id: number }> {
    return [...this.byNetwork].flatMap(([id, e]) => e.endpoints.stats().map((s) => ({ network_id: id, ...s })));
  }

  /** Stops the head reads. */
  close(): void {
    for (const e of this.byNetwork.values()) e.endpoints.stop();
    this.byNetwork.clear();
  }

  private entry(n: NetworkLike): Entry {
    const urls = endpointUrls(n);
    const key = `${urls.join(' ')}|${n.chain_id}`;
    const known = this.byNetwork.get(n.id);
    if (known && known.key === key) return known;
    known?.endpoints.stop();
    const endpoints = new EndpointSet(urls, {
      timeoutMs: this.opts.timeoutMs,
      maxLagBlocks: this.opts.maxLagBlocks,
      healthEveryMs: this.opts.healthEveryMs,
    });
    const client = createPublicClient({ chain: chainOf(n), transport: endpoints.transport(this.opts.retryCount, 100) }) as PublicClient;
    const entry = { key, client, endpoints };
    this.byNetwork.set(n.id, entry);
    endpoints.start();
    return entry;
  }
}
