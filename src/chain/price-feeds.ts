/**
 * Chainlink price feeds (`AggregatorV3Interface`), read through the network's own endpoints.
 *
 * Read at `pending`: the node's newest state. For a real feed that is its last report (its
 * `updatedAt` says when, and the caller decides whether that is fresh); the devnet's feed
 * (contracts/DevnetPriceFeed.sol) reports the time it is read at, which on anvil is the pending
 * block's, the current time, however long the devnet has mined nothing.
 */
import { parseAbi, type Address, type PublicClient } from 'viem';

const AGGREGATOR_ABI = parseAbi([
  'function decimals() view returns (uint8)',
  'function latestRoundData() view returns (uint80 roundId, int256 answer, uint256 startedAt, uint256 updatedAt, uint80 answeredInRound)',
]);

export interface FeedAnswer {
  /** The price, `decimals` places. */
  answer: bigint;
  decimals: number;
  /** When the feed last reported (ms). */
  updatedAtMs: number;
}

/** The feed's latest answer; throws when it cannot be read or is not a price (zero or negative). */
export async function readFeed(client: PublicClient, address: Address): Promise<FeedAnswer> {
  const [decimals, round] = await Promise.all([
    client.readContract({ address, abi: AGGREGATOR_ABI, functionName: 'decimals', blockTag: 'pending' }),
    client.readContract({ address, abi: AGGREGATOR_ABI, functionName: 'latestRoundData', blockTag: 'pending' }),
  ]);
  const [, answer, , updatedAt] = round;
  if (answer <= 0n) throw new Error(`price feed ${address} answers ${answer}, not a price`);
  return { answer, decimals, updatedAtMs: Number(updatedAt) * 1000 };
}
