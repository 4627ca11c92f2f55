/**
 * The local devnet's price feeds, at start: one DevnetPriceFeed (contracts/DevnetPriceFeed.sol)
 * per pair of DEVNET_PRICES, deployed from anvil's first dev account and recorded as the
 * network's own feeds, so a price charge works on a fresh devnet as on a network with Chainlink.
 * Where the recorded feeds still have their code (a devnet state kept across restarts), nothing
 * is sent. A devnet that cannot take them starts all the same, without feeds (a warning).
 */
import type { Logger } from 'pino';
import { encodeDeployData, getAddress, type Address } from 'viem';
import type { Executor } from '../../db/index.js';
import type { NetworkRow } from '../../db/types.js';
import { devnetPriceFeedAbi, devnetPriceFeedBytecode } from '../../chain/price-feed-artifact.js';
import { devAccount, sendFromDevAccount } from '../networks/devnet-fund.js';
import { setPriceFeeds } from '../networks/networks.repository.js';

/** The devnet's prices, 8 places as Chainlink's USD feeds answer: round figures, for trying things out. */
export const DEVNET_PRICES: Readonly<Record<string, bigint>> = {
  'ETH/USD': 3_000_00000000n,
  'ETH/EUR': 2_500_00000000n,
  'ETH/GBP': 2_200_00000000n,
};
const FEED_DECIMALS = 8;

export async function ensureDevnetFeeds(db: Executor, network: NetworkRow, log: Logger, nowMs: number): Promise<void> {
  try {
    const dev = await devAccount(network);
    const recorded = network.price_feeds === null ? {} : (JSON.parse(network.price_feeds) as Record<string, string>);
    const feeds: Record<string, string> = {};
    let deployed = 0;
    for (const [pair, answer] of Object.entries(DEVNET_PRICES)) {
      const at = recorded[pair];
      const code = at === undefined ? undefined : await dev.client.getCode({ address: at as Address });
      if (at !== undefined && code !== undefined && code !== '0x') {
        feeds[pair] = at;
        continue;
      }
      const data = encodeDeployData({
        abi: devnetPriceFeedAbi,
        bytecode: devnetPriceFeedBytecode,
        args: [answer, FEED_DECIMALS, pair.replace('/', ' / ')],
      });
      const receipt = await sendFromDevAccount(dev, { data });
      if (receipt.status !== 'success' || !receipt.contractAddress) throw new Error(`the ${pair} feed's deployment failed`);
      feeds[pair] = getAddress(receipt.contractAddress);
      deployed += 1;
    }
    await setPriceFeeds(db, network.id, feeds, nowMs);
    log.info({ network_id: network.id, feeds, deployed }, 'price feeds ready on the local devnet');
  } catch (e) {
    log.warn({ network_id: network.id, err: e }, 'no price feeds on the local devnet: price charges need a manual rate (rate:set)');
  }
}
