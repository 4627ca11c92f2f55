/**
 * One viem public client per network, built from the network row and cached by id and RPC URL.
 * RPC calls carry a time-out and a bounded retry, so a dead node answers quickly as an error.
 */
import { createPublicClient, defineChain, http, type Chain, type PublicClient } from 'viem';
import { rpcFetch } from './rpc-fetch.js';

export interface NetworkLike {
  id: number;
  name: string;
  rpc_url: string;
  chain_id: number;
  currency_symbol: string;
}

export interface ChainClientOptions {
  timeoutMs: number;
  retryCount: number;
}

export function chainOf(n: NetworkLike): Chain {
  return defineChain({
    id: n.chain_id,
    name: n.name,
    nativeCurrency: { name: n.currency_symbol, symbol: n.currency_symbol, decimals: 18 },
    rpcUrls: { default: { http: [n.rpc_url] } },
  });
}

export class ChainClients {
  private readonly clients = new Map<string, PublicClient>();

  constructor(private readonly opts: ChainClientOptions = { timeoutMs: 5_000, retryCount: 1 }) {}

  get(n: NetworkLike): PublicClient {
    const key = `${n.id}|${n.rpc_url}|${n.chain_id}`;
    let c = this.clients.get(key);
    if (!c) {
      c = createPublicClient({
        chain: chainOf(n),
        transport: http(n.rpc_url, {
          timeout: this.opts.timeoutMs,
          retryCount: this.opts.retryCount,
          retryDelay: 100,
          fetchFn: rpcFetch as unknown as typeof fetch,
          // rpcFetch reads at most MAX_RPC_BODY_BYTES itself.
          maxResponseBodySize: false,
          batch: { wait: 0 },
        }),
      }) as PublicClient;
      this.clients.set(key, c);
    }
    return c;
  }
}
