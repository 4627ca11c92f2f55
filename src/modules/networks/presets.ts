/**
 * Network presets (`network:add --preset NAME`, a NETWORKS_FILE entry's `preset`): DATA only.
 * Each entry names its sources. Contract addresses are EIP-55 checksummed and were checked
 * against the sources named (test/networks/presets.test.ts checks the checksums and the table's
 * shape). A token is listed only where its address was confirmed; see docs/operating.md,
 * "Network presets", for why each confirmations default is what it is.
 *
 * Sources:
 * - USDC: Circle, "USDC Contract Addresses", https://developers.circle.com/stablecoins/usdc-contract-addresses
 * - USDT: Tether, "Supported Protocols", https://tether.to/en/supported-protocols/ and each chain's explorer;
 *   on BNB Smart Chain the "USDT" is Binance-Peg BSC-USD (issued by Binance, not Tether): https://bscscan.com/token/0x55d398326f99059fF775485246999027B3197955
 * - Chain ids: https://chainlist.org (EIP-155 registry, ethereum-lists/chains)
 * - Price feeds: Chainlink, "Price Feed Contract Addresses",
 *   https://docs.chain.link/data-feeds/price-feeds/addresses (each network's page, named on the
 *   feed); each is the feed's proxy (EACAggregatorProxy), the address Chainlink tells readers to use.
 *   None on Polygon Amoy, where no address could be confirmed.
 * - Finality: Ethereum consensus specs (Casper FFG, 2 epochs); OP Stack "Transaction finality";
 *   Arbitrum "Transaction lifecycle"; Polygon PIP-11 "Deterministic finality via Milestones";
 *   BNB Chain BEP-126 "Fast Finality Mechanism" and docs.bnbchain.org "Finality API".
 */

export interface PresetToken {
  readonly symbol: string;
  /** EIP-55 checksummed. */
  readonly contract: string;
  readonly source: string;
  /** The currency its issuer redeems it 1:1 for: its rate there is 1 when no other rate is set. */
  readonly pegged?: 'USD';
}

/** A Chainlink price feed of the network's native coin. */
export interface PresetFeed {
  /** `SYMBOL/CURRENCY`, the symbol the network's own (a testnet's coin is priced as its mainnet's). */
  readonly pair: string;
  /** The feed's proxy, EIP-55 checksummed. */
  readonly address: string;
  readonly source: string;
}

export interface NetworkPreset {
  /** What `--preset` takes (lower case). */
  readonly key: string;
  /** The network's default name. */
  readonly name: string;
  readonly chain_id: number;
  readonly currency_symbol: string;
  readonly block_explorer: string;
  readonly is_mainnet: boolean;
  readonly confirmations: number;
  /** Why `confirmations` is what it is (docs/operating.md says more). */
  readonly confirmations_reason: string;
  readonly tokens: readonly PresetToken[];
  readonly price_feeds: readonly PresetFeed[];
  readonly sources: readonly string[];
}

const CIRCLE = 'https://developers.circle.com/stablecoins/usdc-contract-addresses';
const TETHER = 'https://tether.to/en/supported-protocols/';
const feeds = (network: string) => `https://docs.chain.link/data-feeds/price-feeds/addresses?network=${network}`;
/** A Chainlink USD feed of the native coin, from the page of `network`. */
const usdFeed = (symbol: string, address: string, network: string): PresetFeed => ({
  pair: `${symbol}/USD`,
  address,
  source: feeds(network),
});

const ETH_REASON =
  'PoS Ethereum finalizes after 2 epochs (64-95 blocks, ~13 min); reorgs of more than 1-2 blocks have not been seen since the Merge, so 12 blocks (~2.4 min) is the common exchange practice.';
const OP_REASON =
  'OP Stack L2: the sequencer soft-confirms at once; a block can only be reorged before its batch is on L1 (sequencer failure or equivocation). 10 blocks (~20 s at 2 s blocks).';
const ARB_REASON =
  'Arbitrum Nitro: the sequencer feed soft-confirms at once (0.25 s blocks); a block can only be reorged before its batch is on L1. 20 blocks (~5 s).';
const POLYGON_REASON =
  'Polygon PoS had deep reorgs (over 100 blocks) before PIP-11 milestones gave it deterministic finality; 128 blocks (~4.5 min at 2 s) covers milestone finality with a margin.';
const BSC_REASON =
  'BEP-126 fast finality finalizes block n by block n+2; when fast finality stalls, probabilistic finality needs 2/3 of the 21 validators plus one: 15 blocks.';

function make(p: NetworkPreset): NetworkPreset {
  return Object.freeze({
    ...p,
    tokens: Object.freeze(p.tokens.map((t) => Object.freeze({ ...t }))),
    price_feeds: Object.freeze(p.price_feeds.map((f) => Object.freeze({ ...f }))),
    sources: Object.freeze([...p.sources]),
  });
}

/** Every preset, mainnets first, then their public testnets. */
export const NETWORK_PRESETS: readonly NetworkPreset[] = Object.freeze([
  make({
    key: 'ethereum',
    name: 'Ethereum',
    chain_id: 1,
    currency_symbol: 'ETH',
    block_explorer: 'https://etherscan.io',
    is_mainnet: true,
    confirmations: 12,
    confirmations_reason: ETH_REASON,
    tokens: [
      { symbol: 'USDC', contract: '0xA0b86991c6218b36c1d19D4a2e9Eb0cE3606eB48', source: CIRCLE, pegged: 'USD' },
      { symbol: 'USDT', contract: '0xdAC17F958D2ee523a2206206994597C13D831ec7', source: TETHER, pegged: 'USD' },
    ],
    price_feeds: [usdFeed('ETH', '0x5f4eC3Df9cbd43714FE2740f5E3616155c5b8419', 'ethereum')],
    sources: ['https://ethereum.org/en/developers/docs/consensus-mechanisms/pos/#finality', 'https://chainlist.org/chain/1'],
  }),
  make({
    key: 'base',
    name: 'Base',
    chain_id: 8453,
    currency_symbol: 'ETH',
    block_explorer: 'https://basescan.org',
    is_mainnet: true,
    confirmations: 10,
    confirmations_reason: OP_REASON,
    tokens: [{ symbol: 'USDC', contract: '0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913', source: CIRCLE, pegged: 'USD' }],
    price_feeds: [usdFeed('ETH', '0x71041dddad3595F9CEd3DcCFBe3D1F4b0a16Bb70', 'base')],
    sources: ['https://docs.optimism.io/stack/transactions/transaction-finality', 'https://chainlist.org/chain/8453'],
  }),
  make({
    key: 'arbitrum',
    name: 'Arbitrum One',
    chain_id: 42161,
    currency_symbol: 'ETH',
    block_explorer: 'https://arbiscan.io',
    is_mainnet: true,
    confirmations: 20,
    confirmations_reason: ARB_REASON,
    tokens: [
      { symbol: 'USDC', contract: '0xaf88d065e77c8cC2239327C5EDb3A432268e5831', source: CIRCLE, pegged: 'USD' },
      {
        symbol: 'USDT',
        contract: '0xFd086bC7CD5C481DCC9C85ebE478A1C0b69FCbb9',
        source: 'https://arbiscan.io/token/0xFd086bC7CD5C481DCC9C85ebE478A1C0b69FCbb9',
        pegged: 'USD',
      },
    ],
    price_feeds: [usdFeed('ETH', '0x639Fe6ab55C921f74e7fac1ee960C0B6293ba612', 'arbitrum')],
    sources: ['https://docs.arbitrum.io/how-arbitrum-works/transaction-lifecycle', 'https://chainlist.org/chain/42161'],
  }),
  make({
    key: 'optimism',
    name: 'OP Mainnet',
    chain_id: 10,
    currency_symbol: 'ETH',
    block_explorer: 'https://optimistic.etherscan.io',
    is_mainnet: true,
    confirmations: 10,
    confirmations_reason: OP_REASON,
    tokens: [
      { symbol: 'USDC', contract: '0x0b2C639c533813f4Aa9D7837CAf62653d097Ff85', source: CIRCLE, pegged: 'USD' },
      {
        symbol: 'USDT',
        contract: '0x94b008aA00579c1307B0EF2c499aD98a8ce58e58',
        source: 'https://optimistic.etherscan.io/token/0x94b008aA00579c1307B0EF2c499aD98a8ce58e58',
        pegged: 'USD',
      },
    ],
    price_feeds: [usdFeed('ETH', '0x13e3Ee699D1909E989722E753853AE30b17e08c5', 'optimism')],
    sources: ['https://docs.optimism.io/stack/transactions/transaction-finality', 'https://chainlist.org/chain/10'],
  }),
  make({
    key: 'polygon',
    name: 'Polygon PoS',
    chain_id: 137,
    currency_symbol: 'POL',
    block_explorer: 'https://polygonscan.com',
    is_mainnet: true,
    confirmations: 128,
    confirmations_reason: POLYGON_REASON,
    tokens: [
      { symbol: 'USDC', contract: '0x3c499c542cEF5E3811e1192ce70d8cC03d5c3359', source: CIRCLE, pegged: 'USD' },
      { symbol: 'USDT', contract: '0xc2132D05D31c914a87C6611C10748AEb04B58e8F', source: TETHER, pegged: 'USD' },
    ],
    price_feeds: [usdFeed('POL', '0xAB594600376Ec9fD91F8e885dADF0CE036862dE0', 'polygon')],
    sources: ['https://github.com/maticnetwork/Polygon-Improvement-Proposals/blob/main/PIPs/PIP-11.md', 'https://chainlist.org/chain/137'],
  }),
  make({
    key: 'bsc',
    name: 'BNB Smart Chain',
    chain_id: 56,
    currency_symbol: 'BNB',
    block_explorer: 'https://bscscan.com',
    is_mainnet: true,
    confirmations: 15,
    confirmations_reason: BSC_REASON,
    // No Circle-issued USDC on BNB Smart Chain (Circle's page lists none).
    tokens: [
      {
        symbol: 'USDT',
        contract: '0x55d398326f99059fF775485246999027B3197955',
        source: 'https://bscscan.com/token/0x55d398326f99059fF775485246999027B3197955',
        pegged: 'USD',
      },
    ],
    price_feeds: [usdFeed('BNB', '0x0567F2323251f0Aab15c8dFb1967E4e8A7D42aeE', 'bsc')],
    sources: [
      'https://github.com/bnb-chain/BEPs/blob/master/BEPs/BEP126.md',
      'https://docs.bnbchain.org/bnb-smart-chain/developers/json_rpc/bsc-api-list/',
      'https://chainlist.org/chain/56',
    ],
  }),
  make({
    key: 'sepolia',
    name: 'Sepolia',
    chain_id: 11155111,
    currency_symbol: 'ETH',
    block_explorer: 'https://sepolia.etherscan.io',
    is_mainnet: false,
    confirmations: 12,
    confirmations_reason: ETH_REASON,
    tokens: [{ symbol: 'USDC', contract: '0x1c7D4B196Cb0C7B01d743Fbc6116a902379C7238', source: CIRCLE, pegged: 'USD' }],
    price_feeds: [usdFeed('ETH', '0x694AA1769357215DE4FAC081bf1f309aDC325306', 'ethereum')],
    sources: ['https://chainlist.org/chain/11155111'],
  }),
  make({
    key: 'base-sepolia',
    name: 'Base Sepolia',
    chain_id: 84532,
    currency_symbol: 'ETH',
    block_explorer: 'https://sepolia.basescan.org',
    is_mainnet: false,
    confirmations: 10,
    confirmations_reason: OP_REASON,
    tokens: [{ symbol: 'USDC', contract: '0x036CbD53842c5426634e7929541eC2318f3dCF7e', source: CIRCLE, pegged: 'USD' }],
    price_feeds: [usdFeed('ETH', '0x4aDC67696bA383F43DD60A9e78F2C97Fbbfc7cb1', 'base')],
    sources: ['https://chainlist.org/chain/84532'],
  }),
  make({
    key: 'arbitrum-sepolia',
    name: 'Arbitrum Sepolia',
    chain_id: 421614,
    currency_symbol: 'ETH',
    block_explorer: 'https://sepolia.arbiscan.io',
    is_mainnet: false,
    confirmations: 20,
    confirmations_reason: ARB_REASON,
    tokens: [{ symbol: 'USDC', contract: '0x75faf114eafb1BDbe2F0316DF893fd58CE46AA4d', source: CIRCLE, pegged: 'USD' }],
    price_feeds: [usdFeed('ETH', '0xd30e2101a97dcbAeBCBC04F14C3f624E67A35165', 'arbitrum')],
    sources: ['https://chainlist.org/chain/421614'],
  }),
  make({
    key: 'optimism-sepolia',
    name: 'OP Sepolia',
    chain_id: 11155420,
    currency_symbol: 'ETH',
    block_explorer: 'https://sepolia-optimism.etherscan.io',
    is_mainnet: false,
    confirmations: 10,
    confirmations_reason: OP_REASON,
    tokens: [{ symbol: 'USDC', contract: '0x5fd84259d66Cd46123540766Be93DFE6D43130D7', source: CIRCLE, pegged: 'USD' }],
    price_feeds: [usdFeed('ETH', '0x61Ec26aA57019C486B10502285c5A3D4A4750AD7', 'optimism')],
    sources: ['https://chainlist.org/chain/11155420'],
  }),
  make({
    key: 'polygon-amoy',
    name: 'Polygon Amoy',
    chain_id: 80002,
    currency_symbol: 'POL',
    block_explorer: 'https://amoy.polygonscan.com',
    is_mainnet: false,
    confirmations: 128,
    confirmations_reason: POLYGON_REASON,
    tokens: [{ symbol: 'USDC', contract: '0x41E94Eb019C0762f9Bfcf9Fb1E58725BfB0e7582', source: CIRCLE, pegged: 'USD' }],
    price_feeds: [],
    sources: ['https://chainlist.org/chain/80002'],
  }),
  make({
    key: 'bsc-testnet',
    name: 'BSC Testnet',
    chain_id: 97,
    currency_symbol: 'tBNB',
    block_explorer: 'https://testnet.bscscan.com',
    is_mainnet: false,
    confirmations: 15,
    confirmations_reason: BSC_REASON,
    tokens: [],
    price_feeds: [usdFeed('tBNB', '0x2514895c72f50D8bd4B4F9b1110F0D6bD2c97526', 'bsc')],
    sources: ['https://chainlist.org/chain/97'],
  }),
]);

/** The preset with this key (case-insensitive), or undefined. */
export function findPreset(key: string): NetworkPreset | undefined {
  const k = key.trim().toLowerCase();
  return NETWORK_PRESETS.find((p) => p.key === k);
}

export function presetKeys(): string[] {
  return NETWORK_PRESETS.map((p) => p.key);
}

/** The preset token of this symbol (case-insensitive) on the network's preset, or undefined. */
export function findPresetToken(presetKey: string | null, symbol: string): PresetToken | undefined {
  if (presetKey === null) return undefined;
  const s = symbol.trim().toUpperCase();
  return findPreset(presetKey)?.tokens.find((t) => t.symbol.toUpperCase() === s);
}
