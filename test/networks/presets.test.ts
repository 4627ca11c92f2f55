/**
 * Network presets: the table (src/modules/networks/presets.ts) against the values written out
 * here, one test per preset; then `network:add --preset base` end to end against anvil (chain id
 * overridden to 31337), a wallet on it, and `token/add` by symbol reading the token from the chain.
 */
import { getAddress, type Address, type Hex } from 'viem';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkNetworkInput } from '../../src/modules/networks/networks.service.js';
import { findPreset, findPresetToken, NETWORK_PRESETS } from '../../src/modules/networks/presets.js';
import { startTestApp, TEST_APP_KEY, type TestApp, type TestUser } from '../helpers/app.js';
import { startTestChain, type TestChain } from '../helpers/chain.js';
import { createTestDatabase, type TestDatabase } from '../helpers/db.js';
import { deployErc20 } from '../helpers/erc20.js';
import { expectValidationError } from '../helpers/expect.js';
import { runCli } from '../helpers/process.js';
import { createWallet } from '../wallets/support.js';

const USDC = 'USDC';
const USDT = 'USDT';

/** What each preset must say, written out independently of the file. */
const EXPECTED: Array<
  [
    string,
    {
      name: string;
      chain_id: number;
      currency: string;
      explorer: string;
      mainnet: boolean;
      confirmations: number;
      tokens: Record<string, string>;
    },
  ]
> = [
  [
    'ethereum',
    {
      name: 'Ethereum',
      chain_id: 1,
      currency: 'ETH',
      explorer: 'https://etherscan.io',
      mainnet: true,
      confirmations: 12,
      tokens: { [USDC]: '0xA0b86991c6218b36c1d19D4a2e9Eb0cE3606eB48', [USDT]: '0xdAC17F958D2ee523a2206206994597C13D831ec7' },
    },
  ],
  [
    'base',
    {
      name: 'Base',
      chain_id: 8453,
      currency: 'ETH',
      explorer: 'https://basescan.org',
      mainnet: true,
      confirmations: 10,
      tokens: { [USDC]: '0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913' },
    },
  ],
  [
    'arbitrum',
    {
      name: 'Arbitrum One',
      chain_id: 42161,
      currency: 'ETH',
      explorer: 'https://arbiscan.io',
      mainnet: true,
      confirmations: 20,
      tokens: { [USDC]: '0xaf88d065e77c8cC2239327C5EDb3A432268e5831', [USDT]: '0xFd086bC7CD5C481DCC9C85ebE478A1C0b69FCbb9' },
    },
  ],
  [
    'optimism',
    {
      name: 'OP Mainnet',
      chain_id: 10,
      currency: 'ETH',
      explorer: 'https://optimistic.etherscan.io',
      mainnet: true,
      confirmations: 10,
      tokens: { [USDC]: '0x0b2C639c533813f4Aa9D7837CAf62653d097Ff85', [USDT]: '0x94b008aA00579c1307B0EF2c499aD98a8ce58e58' },
    },
  ],
  [
    'polygon',
    {
      name: 'Polygon PoS',
      chain_id: 137,
      currency: 'POL',
      explorer: 'https://polygonscan.com',
      mainnet: true,
      confirmations: 128,
      tokens: { [USDC]: '0x3c499c542cEF5E3811e1192ce70d8cC03d5c3359', [USDT]: '0xc2132D05D31c914a87C6611C10748AEb04B58e8F' },
    },
  ],
  [
    'bsc',
    {
      name: 'BNB Smart Chain',
      chain_id: 56,
      currency: 'BNB',
      explorer: 'https://bscscan.com',
      mainnet: true,
      confirmations: 15,
      tokens: { [USDT]: '0x55d398326f99059fF775485246999027B3197955' },
    },
  ],
  [
    'sepolia',
    {
      name: 'Sepolia',
      chain_id: 11155111,
      currency: 'ETH',
      explorer: 'https://sepolia.etherscan.io',
      mainnet: false,
      confirmations: 12,
      tokens: { [USDC]: '0x1c7D4B196Cb0C7B01d743Fbc6116a902379C7238' },
    },
  ],
  [
    'base-sepolia',
    {
      name: 'Base Sepolia',
      chain_id: 84532,
      currency: 'ETH',
      explorer: 'https://sepolia.basescan.org',
      mainnet: false,
      confirmations: 10,
      tokens: { [USDC]: '0x036CbD53842c5426634e7929541eC2318f3dCF7e' },
    },
  ],
  [
    'arbitrum-sepolia',
    {
      name: 'Arbitrum Sepolia',
      chain_id: 421614,
      currency: 'ETH',
      explorer: 'https://sepolia.arbiscan.io',
      mainnet: false,
      confirmations: 20,
      tokens: { [USDC]: '0x75faf114eafb1BDbe2F0316DF893fd58CE46AA4d' },
    },
  ],
  [
    'optimism-sepolia',
    {
      name: 'OP Sepolia',
      chain_id: 11155420,
      currency: 'ETH',
      explorer: 'https://sepolia-optimism.etherscan.io',
      mainnet: false,
      confirmations: 10,
      tokens: { [USDC]: '0x5fd84259d66Cd46123540766Be93DFE6D43130D7' },
    },
  ],
  [
    'polygon-amoy',
    {
      name: 'Polygon Amoy',
      chain_id: 80002,
      currency: 'POL',
      explorer: 'https://amoy.polygonscan.com',
      mainnet: false,
      confirmations: 128,
      tokens: { [USDC]: '0x41E94Eb019C0762f9Bfcf9Fb1E58725BfB0e7582' },
    },
  ],
  [
    'bsc-testnet',
    {
      name: 'BSC Testnet',
      chain_id: 97,
      currency: 'tBNB',
      explorer: 'https://testnet.bscscan.com',
      mainnet: false,
      confirmations: 15,
      tokens: {},
    },
  ],
];

describe('the preset table', () => {
  it('holds exactly the twelve presets, no key or chain id twice', () => {
    expect(NETWORK_PRESETS.map((p) => p.key)).toEqual(EXPECTED.map(([k]) => k));
    expect(new Set(NETWORK_PRESETS.map((p) => p.chain_id)).size).toBe(12);
    expect(Object.isFrozen(NETWORK_PRESETS)).toBe(true);
  });

  it.each(EXPECTED)('%s: chain id, currency, explorer, confirmations and tokens', (key, e) => {
    const p = findPreset(key)!;
    expect(p).toBeDefined();
    expect({
      name: p.name,
      chain_id: p.chain_id,
      currency: p.currency_symbol,
      explorer: p.block_explorer,
      mainnet: p.is_mainnet,
      confirmations: p.confirmations,
    }).toEqual({
      name: e.name,
      chain_id: e.chain_id,
      currency: e.currency,
      explorer: e.explorer,
      mainnet: e.mainnet,
      confirmations: e.confirmations,
    });
    expect(Object.fromEntries(p.tokens.map((t) => [t.symbol, t.contract]))).toEqual(e.tokens);
    // Checksummed (EIP-55) as written, no symbol twice, each with its source; the preset's own sources.
    for (const t of p.tokens) {
      expect(getAddress(t.contract), `${key} ${t.symbol}`).toBe(t.contract);
      expect(t.source).toMatch(/^https:\/\//);
    }
    expect(new Set(p.tokens.map((t) => t.symbol.toUpperCase())).size).toBe(p.tokens.length);
    // Stablecoins are pegged to the dollar; the native coin's feeds are priced in its own symbol.
    for (const t of p.tokens) expect(t.pegged, `${key} ${t.symbol}`).toBe('USD');
    for (const f of p.price_feeds) {
      expect(getAddress(f.address), `${key} ${f.pair}`).toBe(f.address);
      expect(f.pair).toBe(`${p.currency_symbol}/USD`);
      expect(f.source).toMatch(/^https:\/\/docs\.chain\.link\//);
    }
    expect(p.price_feeds.length, key).toBe(key === 'polygon-amoy' ? 0 : 1);
    expect(p.sources.length).toBeGreaterThan(0);
    expect(p.confirmations_reason.length).toBeGreaterThan(20);
    for (const [symbol, contract] of Object.entries(e.tokens)) expect(findPresetToken(key, symbol.toLowerCase())?.contract).toBe(contract);
    expect(findPresetToken(key, 'DAI')).toBeUndefined();
  });
});

describe('a definition with a preset (CLI or NETWORKS_FILE)', () => {
  it('takes what it does not give from the preset; what it gives wins', () => {
    expect(
      checkNetworkInput({ preset: 'Polygon', rpc_url: 'https://polygon.example/KEY', confirmations: 3, name: 'Polygon (ours)' }),
    ).toEqual({
      name: 'Polygon (ours)',
      rpc_url: 'https://polygon.example/KEY',
      rpc_urls: ['https://polygon.example/KEY'],
      chain_id: 137,
      currency_symbol: 'POL',
      block_explorer: 'https://polygonscan.com',
      is_mainnet: true,
      confirmations: 3,
      preset: 'polygon',
      price_feeds: null,
    });
    // Feeds beyond the preset's (NETWORKS_FILE): pairs of a price currency, checksummed addresses.
    const feed = '0xab594600376ec9fd91f8e885dadf0ce036862de0';
    expect(checkNetworkInput({ preset: 'polygon', rpc_url: 'https://p.example', price_feeds: { 'POL/EUR': feed } }).price_feeds).toEqual({
      'POL/EUR': '0xAB594600376Ec9fD91F8e885dADF0CE036862dE0',
    });
    for (const price_feeds of [{ 'POL/JPY': feed }, { POL: feed }, { 'POL/USD': '0x12' }, [feed]])
      expect(() => checkNetworkInput({ preset: 'polygon', rpc_url: 'https://p.example', price_feeds })).toThrow(
        expect.objectContaining({ data: { price_feeds: [expect.stringContaining('"ETH/USD"')] } }),
      );
    expect(checkNetworkInput({ name: 'Plain', rpc_url: 'https://x.example', chain_id: 5, currency_symbol: 'ETH' }).preset).toBeNull();
    expect(() => checkNetworkInput({ preset: 'nope', rpc_url: 'https://x.example' })).toThrow(
      expect.objectContaining({ data: { preset: [expect.stringContaining('ethereum, base, arbitrum')] } }),
    );
  });
});

describe('network:add --preset, then token/add by symbol', () => {
  let db: TestDatabase;
  let env: Record<string, string>;
  let chain: TestChain;
  let t: TestApp | undefined;
  let alice: TestUser;
  beforeAll(async () => {
    db = await createTestDatabase();
    env = { NODE_ENV: 'test', DATA_DIR: db.dataDir, APP_KEY: TEST_APP_KEY, ...(db.databaseUrl ? { DATABASE_URL: db.databaseUrl } : {}) };
    chain = await startTestChain();
  });
  afterAll(async () => {
    await t?.close();
    await chain?.stop();
    await db?.drop();
  });

  it('refuses an unknown preset with one line listing the presets, exit 1', async () => {
    const r = await runCli(['network:add', '--preset', 'dogechain', '--rpc-url', chain.rpcUrl], env);
    expect(r.code).toBe(1);
    expect(r.stdout.trim().split('\n')).toHaveLength(1);
    expect(r.json).toEqual({
      error:
        'unknown preset "dogechain"; the presets are: ethereum, base, arbitrum, optimism, polygon, bsc, sepolia, base-sepolia, arbitrum-sepolia, optimism-sepolia, polygon-amoy, bsc-testnet',
    });
  });

  it('registers Base on anvil with the chain id overridden; token/add {symbol: "USDC"} adds the token at the preset address', async () => {
    const n = await runCli(['network:add', '--preset', 'base', '--rpc-url', chain.rpcUrl, '--chain-id', '31337'], env);
    expect(n.code, n.stdout).toBe(0);
    expect(n.json).toEqual({
      id: 1,
      name: 'Base',
      rpc_url: chain.rpcUrl,
      rpc_endpoints: [expect.objectContaining({ url: chain.rpcUrl, ok: true })],
      chain_id: 31337,
      currency_symbol: 'ETH',
      block_explorer: 'https://basescan.org',
      preset: 'base',
      sweeper: null,
      is_mainnet: true,
      confirmations: 10,
    });

    // The real USDC address has no code on anvil: put a test token's code and storage there.
    const usdc = findPresetToken('base', 'USDC')!.contract as Address;
    const deployed = await deployErc20(chain.rpcUrl, { name: 'USD Coin', symbol: 'USDC', decimals: 6 });
    await chain.rpc('anvil_setCode', [usdc, await chain.rpc<Hex>('eth_getCode', [deployed, 'latest'])]);
    for (let slot = 0; slot < 4; slot++) {
      const key = `0x${slot.toString(16).padStart(64, '0')}`;
      await chain.rpc('anvil_setStorageAt', [usdc, key, await chain.rpc<Hex>('eth_getStorageAt', [deployed, key, 'latest'])]);
    }

    t = await startTestApp({ database: db, keepDatabase: true });
    alice = await t.createUser();
    const nets = await t.request('GET', '/api/networks', { token: alice.token });
    expect(nets.body.data.map((x: { name: string; preset: string | null }) => [x.name, x.preset])).toEqual([['Base', 'base']]);
    const w = await createWallet(t, alice, 1);
    const res = await t.request('POST', `/api/wallet/${w.id}/token/add`, { token: alice.token, body: { symbol: 'usdc' } });
    expect(res.status, res.text).toBe(200);
    expect(res.body.data).toMatchObject({
      name: 'USD Coin',
      symbol: 'USDC',
      decimals: 6,
      contract: usdc,
      is_native: false,
      is_active: true,
      is_testnet: false,
    });

    const add = (body: unknown) => t!.request('POST', `/api/wallet/${w.id}/token/add`, { token: alice.token, body });
    expectValidationError(await add({}), { contract: ['The contract field is required.'] });
    expectValidationError(await add({ symbol: 'USDC', contract: usdc }), {
      symbol: ['The symbol field must not be given with the contract field.'],
    });
    expectValidationError(await add({ symbol: 'DAI' }), {
      symbol: ['The network of this wallet has no preset token with the symbol DAI.'],
    });
    // USDT exists in other presets, not in Base's.
    expectValidationError(await add({ symbol: 'USDT' }), {
      symbol: ['The network of this wallet has no preset token with the symbol USDT.'],
    });
    expectValidationError(await add({ symbol: 'USDC' }), { contract: ['The contract has already been added.'] });
  });

  it('a network without a preset offers no token by symbol', async () => {
    const n = await runCli(['network:add', '--name', 'Plain', '--rpc-url', chain.rpcUrl, '--chain-id', '31337', '--symbol', 'ETH'], env);
    expect(n.code, n.stdout).toBe(0);
    expect(n.json.preset).toBeNull();
    const w = await createWallet(t!, alice, n.json.id);
    const res = await t!.request('POST', `/api/wallet/${w.id}/token/add`, { token: alice.token, body: { symbol: 'USDC' } });
    expectValidationError(res, { symbol: ['The network of this wallet has no preset token with the symbol USDC.'] });
  });
});
