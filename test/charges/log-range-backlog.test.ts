/**
 * A provider that refuses `eth_getLogs` over more than 10 blocks (issue 19): ERC-20 payments
 * spread over a 500-block backlog are all found. The follower asks for a block's logs by its
 * hash (never a range), and the transport splits any range a provider refuses; the proxy in
 * front of anvil refuses every wider range the service might send, and counts them.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Address } from 'viem';
import { startTestApp, type TestApp, type TestUser } from '../helpers/app.js';
import { startTestChain, type TestChain } from '../helpers/chain.js';
import { deployErc20, mintErc20 } from '../helpers/erc20.js';
import { RpcProxy, proxiedNetwork } from '../helpers/transfers.js';
import { chargeApi } from './support.js';

const RANGE_LIMIT = 10;

function rangeOf(params: unknown[]): number {
  const f = (params[0] ?? {}) as { fromBlock?: string; toBlock?: string; blockHash?: string };
  if (f.blockHash !== undefined || f.fromBlock === undefined || f.toBlock === undefined) return 0;
  if (!f.fromBlock.startsWith('0x') || !f.toBlock.startsWith('0x')) return Number.MAX_SAFE_INTEGER;
  return Number(BigInt(f.toBlock) - BigInt(f.fromBlock)) + 1;
}

describe('ERC-20 payments over a backlog, with a provider limiting eth_getLogs ranges', () => {
  let t: TestApp;
  let chain: TestChain;
  let proxy: RpcProxy;
  let user: TestUser;
  beforeAll(async () => {
    t = await startTestApp({ env: { CHARGES_POLL_MS: '200' } });
    chain = await startTestChain();
    proxy = await RpcProxy.start(chain.rpcUrl);
    proxy.rule('eth_getLogs', {
      match: (params) => rangeOf(params) > RANGE_LIMIT,
      action: 'error',
      code: -32005,
      message: `query exceeds max block range ${RANGE_LIMIT}`,
    });
    user = await t.createUser();
  });
  afterAll(async () => {
    await t?.workers?.stop();
    await t?.close();
    await proxy?.down();
    await chain?.stop();
  });

  it('five token charges paid across 500 blocks of backlog: every payment found, every charge paid', async () => {
    t.startWorkers();
    const networkId = await proxiedNetwork(t, proxy);
    const wallet = (await t.request('POST', '/api/wallet/create', { token: user.token, body: { name: 'Shop', network_id: networkId } }))
      .body.data;
    const usdc = await deployErc20(chain.rpcUrl, { name: 'USD Coin', symbol: 'USDC', decimals: 6 });
    expect((await t.request('POST', `/api/wallet/${wallet.id}/token/add`, { token: user.token, body: { contract: usdc } })).status).toBe(
      200,
    );
    const api = chargeApi(t, wallet.id, user.token);
    const charges: { id: number; address: Address }[] = [];
    for (let i = 0; i < 5; i++) charges.push(await api.create({ amount: `${i + 1}.5`, token: 'USDC', expires: 3600 }));

    // The follower stops; 500 blocks go by with a payment every 100.
    await t.workers!.stop();
    t.workers = null;
    for (const [i, c] of charges.entries()) {
      await chain.mine(99);
      await mintErc20(chain.rpcUrl, usdc, c.address, BigInt(i + 1) * 1_000_000n + 500_000n);
    }
    t.startWorkers();
    for (const c of charges) {
      const paid = await api.until(c.id, (x) => x.status === 'paid', `charge ${c.id} paid`, 60_000);
      expect(paid.payments).toHaveLength(1);
      expect(paid.paid_amount).toBe(paid.amount);
    }
    // The proxy answered no range over the limit: any the service asked was refused (and split).
    expect(proxy.calls.filter((m) => m === 'eth_getLogs').length).toBeGreaterThan(0);
  }, 120_000);
});
