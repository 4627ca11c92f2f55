/**
 * A /metrics scrape asks no node anything (issue 20): the head and `network_rpc_up` come from
 * what the endpoint health tracker already knows, so a scraper (or someone hammering the public
 * route) cannot turn scrapes into RPC calls against a rate-limited provider.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { startTestChain, type TestChain } from '../helpers/chain.js';
import { RpcProxy } from '../helpers/transfers.js';
import { upsertNetwork } from '../../src/modules/networks/networks.repository.js';

describe('/metrics and the nodes', () => {
  let t: TestApp;
  let chain: TestChain;
  let proxy: RpcProxy;
  beforeAll(async () => {
    // Health refreshes (every WATCHER_POLL_MS) are out of the way for the length of the test.
    t = await startTestApp({ env: { WATCHER_POLL_MS: '600000' } });
    chain = await startTestChain();
    proxy = await RpcProxy.start(chain.rpcUrl);
    await upsertNetwork(
      t.store.db,
      {
        name: 'Scraped',
        rpc_url: proxy.url,
        chain_id: 31337,
        currency_symbol: 'ETH',
        block_explorer: '',
        is_mainnet: false,
        confirmations: 1,
      },
      Date.now(),
    );
  });
  afterAll(async () => {
    await t?.close();
    await proxy?.down();
    await chain?.stop();
  });

  it('20 scrapes make no JSON-RPC call', async () => {
    const first = await fetch(`${t.url}/metrics`);
    expect(first.status).toBe(200);
    await first.text();
    const before = proxy.calls.length;
    for (let i = 0; i < 20; i++) {
      const res = await fetch(`${t.url}/metrics`);
      expect(res.status).toBe(200);
      expect(await res.text()).toContain('network_rpc_up');
    }
    expect(proxy.calls.slice(before)).toEqual([]);
  });
});
