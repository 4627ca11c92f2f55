/**
 * Exchange rates (docs/prices.md), through `GET /api/rates` and the CLI, against a real anvil with
 * real feed contracts (contracts/DevnetPriceFeed.sol, the devnet's, read like any Chainlink feed):
 *
 * - a feed's answer is the rate (`chainlink`), in its own decimals made 18 places;
 * - a manual rate wins over the feed, the network's own over one for every network; cleared,
 *   the feed answers again;
 * - a feed whose last report is older than RATE_MAX_AGE_S is no rate, nor is one that cannot be
 *   read; a preset's stablecoin is 1 (`pegged`) for its own contract only;
 * - the devnet's start deploys its feeds once and finds them again on the next start.
 */
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { encodeDeployData, getAddress, type Address, type Hex } from 'viem';
import { ManualClock, startTestApp, TEST_APP_KEY, type TestApp, type TestUser } from '../helpers/app.js';
import { startTestChain, type TestChain } from '../helpers/chain.js';
import { runCli } from '../helpers/process.js';
import { waitFor } from '../helpers/wait.js';
import { compileContract, DEVNET_PRICE_FEED } from '../../scripts/contract-artifacts.js';
import { DEVNET_PRICE_FEED_COMPILER, devnetPriceFeedAbi, devnetPriceFeedBytecode } from '../../src/chain/price-feed-artifact.js';
import { findNetwork, setPriceFeeds } from '../../src/modules/networks/networks.repository.js';
import { ensureDevnetFeeds } from '../../src/modules/rates/devnet-feeds.js';
import { findPresetToken } from '../../src/modules/networks/presets.js';
import { RateService } from '../../src/modules/rates/rates.service.js';

const clock = new ManualClock();
let chain: TestChain;
let t: TestApp;
let alice: TestUser;
let networkId: number;
let env: Record<string, string>;

/** Deploys a feed from anvil's first dev account: `answer` with `decimals` places. */
async function deployFeed(answer: bigint, decimals: number, description: string): Promise<Address> {
  const [from] = await chain.rpc<Address[]>('eth_accounts');
  const data = encodeDeployData({ abi: devnetPriceFeedAbi, bytecode: devnetPriceFeedBytecode, args: [answer, decimals, description] });
  const hash = await chain.rpc<Hex>('eth_sendTransaction', [{ from, data }]);
  const receipt = await waitFor(() => chain.rpc<{ contractAddress: Address } | null>('eth_getTransactionReceipt', [hash]), {
    message: `the ${description} feed mined`,
  });
  return getAddress(receipt.contractAddress);
}

async function rates(query: string) {
  const r = await t.request('GET', `/api/rates${query}`, { token: alice.token });
  expect(r.status, r.text).toBe(200);
  return r.body.data as Array<{ network_id: number; token: string; currency: string; value: string; source: string; at: string }>;
}

beforeAll(async () => {
  chain = await startTestChain();
  t = await startTestApp({ clock });
  networkId = await chain.register(t);
  alice = await t.createUser();
  env = {
    NODE_ENV: 'test',
    DATA_DIR: t.database.dataDir,
    APP_KEY: TEST_APP_KEY,
    ...(t.database.databaseUrl ? { DATABASE_URL: t.database.databaseUrl } : {}),
  };
  // The chain's time is the clock's: a feed read now is fresh.
  clock.advance(Date.now() - clock.nowMs());
});

afterAll(async () => {
  await t?.close();
  await chain?.stop();
});

describe('exchange rates', () => {
  it('the committed feed artifact is contracts/DevnetPriceFeed.sol compiled as it stands', () => {
    const fresh = compileContract(DEVNET_PRICE_FEED);
    expect([DEVNET_PRICE_FEED_COMPILER, devnetPriceFeedAbi, devnetPriceFeedBytecode]).toEqual([fresh.compiler, fresh.abi, fresh.bytecode]);
  });

  it('a feed is the rate; a manual rate wins, the network’s own first; cleared, the feed again', async () => {
    const usd = await deployFeed(3012_45000000n, 8, 'ETH / USD');
    // A feed of 20 places (more than a rate keeps) is cut to 18.
    const eur = await deployFeed(2_500_123456789012345678901n, 20, 'ETH / EUR');
    await setPriceFeeds(t.store.db, networkId, { 'ETH/USD': usd, 'ETH/EUR': eur }, Date.now());
    const fed = await rates(`?network_id=${networkId}`);
    expect(fed.map((r) => [r.token, r.currency, r.value, r.source])).toEqual([
      ['ETH', 'USD', '3012.450000000000000000', 'chainlink'],
      ['ETH', 'EUR', '25001.234567890123456789', 'chainlink'],
    ]);
    expect(fed[0]!.network_id).toBe(networkId);

    // For every network, then for this one: the network's own wins.
    const every = await runCli(['rate:set', '--token', 'ETH', '--currency', 'USD', '--value', '2999.5'], env);
    expect([every.code, every.json]).toEqual([
      0,
      { network_id: null, token: 'ETH', currency: 'USD', value: '2999.500000000000000000', source: 'manual' },
    ]);
    expect((await rates(`?network_id=${networkId}&currency=USD`)).map((r) => [r.value, r.source])).toEqual([
      ['2999.500000000000000000', 'manual'],
    ]);
    const own = await runCli(['rate:set', '--token', 'ETH', '--currency', 'USD', '--value', '3100', '--network', String(networkId)], env);
    expect(own.code, own.stdout).toBe(0);
    expect((await rates(`?network_id=${networkId}&currency=USD`)).map((r) => r.value)).toEqual(['3100.000000000000000000']);
    // A token with no feed, priced by hand only.
    expect((await runCli(['rate:set', '--token', 'WBTC', '--currency', 'GBP', '--value', '70000.25'], env)).code).toBe(0);
    expect((await rates(`?network_id=${networkId}&currency=GBP`)).map((r) => [r.token, r.value, r.source])).toEqual([
      ['WBTC', '70000.250000000000000000', 'manual'],
    ]);
    expect((await runCli(['rate:clear', '--token', 'WBTC', '--currency', 'GBP'], env)).json.cleared).toBe(true);

    for (const args of [['--network', String(networkId)], []]) {
      const c = await runCli(['rate:clear', '--token', 'ETH', '--currency', 'USD', ...args], env);
      expect([c.code, c.json.cleared]).toEqual([0, true]);
    }
    expect((await runCli(['rate:clear', '--token', 'ETH', '--currency', 'USD'], env)).json.cleared).toBe(false);
    expect((await rates(`?network_id=${networkId}&currency=USD`)).map((r) => [r.value, r.source])).toEqual([
      ['3012.450000000000000000', 'chainlink'],
    ]);
  });

  it('refuses a bad manual rate, naming the field', async () => {
    const cases: Array<[string[], string]> = [
      [['--token', 'ETH', '--currency', 'USD', '--value', '0'], 'value'],
      [['--token', 'ETH', '--currency', 'USD', '--value', '1.0000000000000000001'], 'value'],
      [['--token', 'ETH', '--currency', 'JPY', '--value', '1'], 'currency'],
      [['--token', 'E T H', '--currency', 'USD', '--value', '1'], 'token'],
      [['--token', 'ETH', '--currency', 'USD', '--value', '1', '--network', '999'], 'network_id'],
    ];
    for (const [args, field] of cases) {
      const r = await runCli(['rate:set', ...args], env);
      expect([r.code, Object.keys(r.json.fields ?? {})], r.stdout).toEqual([1, [field]]);
    }
    const bad = await t.request('GET', '/api/rates?network_id=999', { token: alice.token });
    expect([bad.status, bad.body.data]).toEqual([422, { network_id: ['The selected network_id is invalid.'] }]);
    expect((await t.request('GET', '/api/rates?currency=JPY', { token: alice.token })).status).toBe(422);
    expect((await t.request('GET', '/api/rates')).status).toBe(401);
  });

  it('a feed older than RATE_MAX_AGE_S is no rate; the next source answers', async () => {
    // The service's clock an hour and a minute ahead of the chain's: every report is that old.
    clock.advance(3_660_000);
    try {
      expect(await rates(`?network_id=${networkId}&currency=USD`)).toEqual([]);
      expect(t.logs.some((l) => l.includes('price feed is stale'))).toBe(true);
      // A manual rate is not aged by the clock.
      expect((await runCli(['rate:set', '--token', 'ETH', '--currency', 'USD', '--value', '3000'], env)).code).toBe(0);
      expect((await rates(`?network_id=${networkId}&currency=USD`)).map((r) => r.source)).toEqual(['manual']);
      expect((await runCli(['rate:clear', '--token', 'ETH', '--currency', 'USD'], env)).json.cleared).toBe(true);
    } finally {
      clock.advance(-3_660_000);
    }
  });

  it('a preset’s stablecoin is pegged at 1; its feed that has no code is no rate', async () => {
    // Base on anvil: its Chainlink feed's address has no code here, its USDC is pegged.
    const base = (await findNetwork(t.store.db, await chain.register(t, { name: 'Base on anvil', preset: 'base' })))!;
    const listed = await rates(`?network_id=${base.id}`);
    expect(listed.map((r) => [r.token, r.currency, r.value, r.source])).toEqual([['USDC', 'USD', '1.000000000000000000', 'pegged']]);
    expect(t.logs.some((l) => l.includes('price feed could not be read'))).toBe(true);
    // Pegged only for the preset's own contract.
    const usdc = findPresetToken('base', 'USDC')!;
    const r = new RateService(t.ctx);
    expect((await r.rateFor(base, { symbol: 'USDC', contract: usdc.contract }, 'USD'))?.source).toBe('pegged');
    expect(await r.rateFor(base, { symbol: 'USDC', contract: '0x000000000000000000000000000000000000dEaD' }, 'USD')).toBeNull();
    expect(await r.rateFor(base, { symbol: 'USDC', contract: usdc.contract }, 'EUR')).toBeNull();
  });

  it('the devnet’s start deploys its feeds once; the next start finds them', async () => {
    const devnet = (await findNetwork(t.store.db, await chain.register(t, { name: 'Devnet twin' })))!;
    const log = pino({ level: 'silent' });
    await ensureDevnetFeeds(t.store.db, devnet, log, Date.now());
    const first = (await findNetwork(t.store.db, devnet.id))!;
    const feeds = JSON.parse(first.price_feeds!) as Record<string, string>;
    expect(Object.keys(feeds)).toEqual(['ETH/USD', 'ETH/EUR', 'ETH/GBP']);
    const nonce = await chain.rpc<string>('eth_getTransactionCount', [(await chain.rpc<Address[]>('eth_accounts'))[0], 'latest']);
    await ensureDevnetFeeds(t.store.db, first, log, Date.now());
    expect(JSON.parse((await findNetwork(t.store.db, devnet.id))!.price_feeds!)).toEqual(feeds);
    expect(await chain.rpc<string>('eth_getTransactionCount', [(await chain.rpc<Address[]>('eth_accounts'))[0], 'latest'])).toBe(nonce);
    expect((await rates(`?network_id=${devnet.id}`)).map((r) => [r.token, r.currency, r.value, r.source])).toEqual([
      ['ETH', 'USD', '3000.000000000000000000', 'chainlink'],
      ['ETH', 'EUR', '2500.000000000000000000', 'chainlink'],
      ['ETH', 'GBP', '2200.000000000000000000', 'chainlink'],
    ]);
  });
});
