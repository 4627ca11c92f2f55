/**
 * A real anvil chain per test file, on a free port, registered as a network in the test
 * service's database. Test-only node methods (anvil_setBalance, evm_mine) go over JSON-RPC.
 */
import type { Address } from 'viem';
import { findFreePort, startDevnet, type Devnet } from '../../src/chain/devnet.js';
import { upsertNetwork } from '../../src/modules/networks/networks.repository.js';
import type { TestApp } from './app.js';

export interface TestChain {
  devnet: Devnet;
  rpcUrl: string;
  rpc<T = unknown>(method: string, params?: unknown[]): Promise<T>;
  setBalance(address: string, wei: bigint): Promise<void>;
  mine(blocks?: number): Promise<void>;
  blockNumber(): Promise<number>;
  /** The chain as a network of the service (its own endpoint, or `rpcUrls`: proxies in front of it, in order). */
  register(t: TestApp, opts?: { name?: string; confirmations?: number; preset?: string; rpcUrls?: string[] }): Promise<number>;
  stop(): Promise<void>;
}

export async function startTestChain(opts: { blockTimeS?: number } = {}): Promise<TestChain> {
  const port = await findFreePort();
  const devnet = await startDevnet({ port, blockTimeS: opts.blockTimeS });
  let id = 0;
  const rpc = async <T>(method: string, params: unknown[] = []): Promise<T> => {
    const res = await fetch(devnet.rpcUrl, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ jsonrpc: '2.0', id: ++id, method, params }),
    });
    const json = (await res.json()) as { result?: T; error?: { message: string } };
    if (json.error) throw new Error(`${method}: ${json.error.message}`);
    return json.result as T;
  };
  return {
    devnet,
    rpcUrl: devnet.rpcUrl,
    rpc,
    setBalance: async (address, wei) => {
      await rpc('anvil_setBalance', [address as Address, `0x${wei.toString(16)}`]);
    },
    mine: async (blocks = 1) => {
      await rpc('anvil_mine', [`0x${blocks.toString(16)}`]);
    },
    blockNumber: async () => Number(BigInt(await rpc<string>('eth_blockNumber'))),
    register: async (t, o = {}) => {
      const n = await upsertNetwork(
        t.store.db,
        {
          name: o.name ?? 'Local devnet',
          rpc_url: o.rpcUrls?.[0] ?? devnet.rpcUrl,
          rpc_urls: o.rpcUrls,
          chain_id: 31337,
          currency_symbol: 'ETH',
          block_explorer: '',
          is_mainnet: false,
          confirmations: o.confirmations ?? 1,
          preset: o.preset ?? null,
        },
        Date.now(),
      );
      return n.id;
    },
    stop: () => devnet.stop(),
  };
}
