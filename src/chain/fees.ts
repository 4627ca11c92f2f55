/**
 * Gas and fees for outgoing transactions: the gas limit, the fee per gas unit, and the most a
 * transaction can cost in fees (what a pending transaction reserves of the native balance).
 *
 * - Gas limit: `eth_estimateGas` from the wallet's own address, unmodified.
 * - A network whose latest block carries a base fee gets EIP-1559 (type 2) transactions. The
 *   tip of each level is the median, over the recent non-empty blocks of `eth_feeHistory`, of
 *   the 10th / 50th / 90th percentile of the tips paid in each block; with no non-empty block in
 *   that window it is half, once and twice the node's suggestion
 *   (`eth_maxPriorityFeePerGas`). Low is at most 3/4 of medium's tip and high at least 5/4 of
 *   it, so the levels differ even when each recent block held a single transaction. The max fee is `2 × next base fee + tip`: the base fee can
 *   rise 12.5% a block, so twice today's survives six full blocks in a row.
 * - Elsewhere, legacy (type 0) transactions at `eth_gasPrice`, the same for every level.
 * - OP-stack networks charge an L1 data fee on top, not bounded by any field of the
 *   transaction: it follows the L1 base fee. It is detected by code at the `GasPriceOracle`
 *   predeploy (once per network), quoted with `getL1Fee(unsigned tx)` and reserved with 25%
 *   headroom.
 *
 * Nothing here decides anything about a wallet: callers pass a client and get figures back.
 */
import { parseAbi, serializeTransaction, type Address, type Hex, type PublicClient } from 'viem';

export type FeeLevel = 'low' | 'medium' | 'high';
export const FEE_LEVELS: readonly FeeLevel[] = ['low', 'medium', 'high'];
export const DEFAULT_FEE_LEVEL: FeeLevel = 'medium';

export type TxKind = 'legacy' | 'eip1559';

/** The fee fields a transaction is signed with (wei per gas unit). Legacy: both are the gas price. */
export interface Fees {
  kind: TxKind;
  maxFeePerGas: bigint;
  maxPriorityFeePerGas: bigint;
}

/** Fees at one level, with the base fee they were computed from (null on a legacy network). */
export interface FeeQuote extends Fees {
  baseFee: bigint | null;
}

/** All three levels at once (the fee preview). */
export interface FeeMarket {
  kind: TxKind;
  baseFee: bigint | null;
  levels: Record<FeeLevel, Fees>;
}

/** Blocks of `eth_feeHistory` the tips are taken from. */
const HISTORY_BLOCKS = 20;
/** Reward percentiles of the low, medium and high levels. */
const PERCENTILES = [10, 50, 90] as const;
/** A replacement must raise both fee fields by at least this (geth's default `--txpool.pricebump`). */
const BUMP_PERCENT = 10n;
/** Headroom on the quoted L1 data fee, which moves with the L1 base fee after the quote. */
const L1_FEE_HEADROOM_PERCENT = 125n;

export const GAS_PRICE_ORACLE: Address = '0x420000000000000000000000000000000000000F';
const ORACLE_ABI = parseAbi(['function getL1Fee(bytes _data) view returns (uint256)']);

export function estimateGas(
  client: PublicClient,
  call: { from: Address; to: Address; value: bigint; data?: Hex | undefined },
): Promise<bigint> {
  return client.estimateGas({ account: call.from, to: call.to, value: call.value, data: call.data });
}

function median(values: bigint[]): bigint {
  const sorted = [...values].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  return sorted[Math.floor(sorted.length / 2)]!;
}

/** Tips of the three levels: from the recent non-empty blocks, else from the node's suggestion. */
function tipsOf(history: { reward?: bigint[][] | undefined; gasUsedRatio: number[] }, suggested: bigint): [bigint, bigint, bigint] {
  const rewards = (history.reward ?? []).filter((_, i) => (history.gasUsedRatio[i] ?? 0) > 0);
  const [low, medium, high] =
    rewards.length === 0 ? [suggested / 2n, suggested, suggested * 2n] : PERCENTILES.map((_, p) => median(rewards.map((r) => r[p] ?? 0n)));
  // Blocks of one or two transactions give the same tip at every percentile: keep the levels
  // apart, low at most 3/4 of medium and high at least 5/4 of it.
  const lowCap = (medium! * 3n) / 4n;
  const highFloor = (medium! * 5n + 3n) / 4n;
  return [low! < lowCap ? low! : lowCap, medium!, high! > highFloor ? high! : highFloor];
}

/** The network's fees at every level, read from the node now. */
export async function feeMarket(client: PublicClient): Promise<FeeMarket> {
  const block = await client.getBlock({ blockTag: 'latest' });
  if (block.baseFeePerGas === null || block.baseFeePerGas === undefined) {
    const gasPrice = await client.getGasPrice();
    const fees: Fees = { kind: 'legacy', maxFeePerGas: gasPrice, maxPriorityFeePerGas: gasPrice };
    return { kind: 'legacy', baseFee: null, levels: { low: fees, medium: fees, high: fees } };
  }
  const [history, suggested] = await Promise.all([
    client.getFeeHistory({ blockCount: HISTORY_BLOCKS, rewardPercentiles: [...PERCENTILES], blockTag: 'latest' }),
    client.estimateMaxPriorityFeePerGas(),
  ]);
  const baseFee = history.baseFeePerGas.at(-1) ?? block.baseFeePerGas;
  const tips = tipsOf(history, suggested);
  const level = (tip: bigint): Fees => ({ kind: 'eip1559', maxFeePerGas: 2n * baseFee + tip, maxPriorityFeePerGas: tip });
  return { kind: 'eip1559', baseFee, levels: { low: level(tips[0]), medium: level(tips[1]), high: level(tips[2]) } };
}

/** The fees of one level. */
export async function quoteFees(client: PublicClient, level: FeeLevel = DEFAULT_FEE_LEVEL): Promise<FeeQuote> {
  const market = await feeMarket(client);
  return { ...market.levels[level], baseFee: market.baseFee };
}

/**
 * How long a fee market read may be reused for new transfers. The max fee is 2 × the next base
 * fee + tip, and the base fee rises at most 12.5% a block: a quote a second old still covers six
 * full blocks in a row on a 12 s chain and four 250 ms blocks (1.125^4 ≈ 1.6 < 2) on the fastest
 * L2s. Nothing about money depends on the quote: a transfer reserves exactly the fees it is signed
 * with, and one that turns out underpriced waits in the pool and can be sped up.
 */
export const FEE_QUOTE_MAX_AGE_MS = 1_000;

/** The last fee market read per client (one client per network), shared by the reads in flight. */
const recentMarkets = new WeakMap<PublicClient, { atMs: number; market: Promise<FeeMarket> }>();

/**
 * `feeMarket`, reused for FEE_QUOTE_MAX_AGE_MS: concurrent creates share one read (3 RPC calls)
 * instead of each making its own. A failed read is not kept.
 */
export function recentFeeMarket(client: PublicClient, nowMs = Date.now()): Promise<FeeMarket> {
  const cached = recentMarkets.get(client);
  if (cached !== undefined && nowMs - cached.atMs < FEE_QUOTE_MAX_AGE_MS) return cached.market;
  const entry = { atMs: nowMs, market: feeMarket(client) };
  recentMarkets.set(client, entry);
  entry.market.catch(() => {
    if (recentMarkets.get(client) === entry) recentMarkets.delete(client);
  });
  return entry.market;
}

/** The fees of one level for a new transfer, from `recentFeeMarket`. */
export async function recentQuote(client: PublicClient, level: FeeLevel = DEFAULT_FEE_LEVEL): Promise<FeeQuote> {
  const market = await recentFeeMarket(client);
  return { ...market.levels[level], baseFee: market.baseFee };
}

/**
 * Fees given by the caller (wei per gas unit), for a network of `kind`. On a legacy network the
 * max fee is the gas price.
 */
export function explicitFees(kind: TxKind, maxFeePerGas: bigint, maxPriorityFeePerGas: bigint): Fees {
  return kind === 'legacy' ? { kind, maxFeePerGas, maxPriorityFeePerGas: maxFeePerGas } : { kind, maxFeePerGas, maxPriorityFeePerGas };
}

/** An explicit max fee may be at most this many times the market's `high` level's. */
export const FEE_CAP_MULTIPLE = 3n;

/**
 * The highest `max_fee_per_gas` a caller may ask for now: FEE_CAP_MULTIPLE times the `high`
 * level's max fee (the gas price on a legacy network). Above it, a 1-wei transfer could hand the
 * wallet's native balance to the block producer.
 */
export function feeCap(market: FeeMarket): bigint {
  return market.levels.high.maxFeePerGas * FEE_CAP_MULTIPLE;
}

/** `v` raised by BUMP_PERCENT, rounded up, and by at least 1 wei. */
function bumped(v: bigint): bigint {
  const up = (v * (100n + BUMP_PERCENT) + 99n) / 100n;
  return up > v ? up : v + 1n;
}

/**
 * Fees for a replacement of a transaction signed with `previous` (same nonce): both fields at
 * least 10% higher, rounded up (what nodes require to replace), or `fresh` (e.g. a new quote at
 * the requested level) where that is higher still. The max fee never falls below the tip.
 */
export function bumpFees(previous: Fees, fresh?: Fees): Fees {
  const max = (a: bigint, b: bigint) => (a > b ? a : b);
  const tip = max(bumped(previous.maxPriorityFeePerGas), fresh?.maxPriorityFeePerGas ?? 0n);
  const fee = max(max(bumped(previous.maxFeePerGas), fresh?.maxFeePerGas ?? 0n), tip);
  return previous.kind === 'legacy'
    ? { kind: 'legacy', maxFeePerGas: fee, maxPriorityFeePerGas: fee }
    : { kind: 'eip1559', maxFeePerGas: fee, maxPriorityFeePerGas: tip };
}

/** The most a transaction can pay in fees (wei): every unit of its gas limit at its max fee, plus the L1 fee. */
export function maxFee(gas: bigint, fees: Pick<Fees, 'maxFeePerGas'>, l1Fee = 0n): bigint {
  return gas * fees.maxFeePerGas + l1Fee;
}

/** The fields viem signs with for these fees. */
export function feeFields(
  fees: Fees,
): { type: 'legacy'; gasPrice: bigint } | { type: 'eip1559'; maxFeePerGas: bigint; maxPriorityFeePerGas: bigint } {
  return fees.kind === 'legacy'
    ? { type: 'legacy', gasPrice: fees.maxFeePerGas }
    : { type: 'eip1559', maxFeePerGas: fees.maxFeePerGas, maxPriorityFeePerGas: fees.maxPriorityFeePerGas };
}

/** Whether a network charges an L1 data fee, per client (one client per network), once known. */
const l1Networks = new WeakMap<PublicClient, boolean>();

async function chargesL1Fee(client: PublicClient): Promise<boolean> {
  let known = l1Networks.get(client);
  if (known === undefined) {
    const code = await client.getCode({ address: GAS_PRICE_ORACLE });
    known = code !== undefined && code !== '0x';
    l1Networks.set(client, known);
  }
  return known;
}

export interface UnsignedCall {
  chainId: number;
  nonce: number;
  gas: bigint;
  to: Address;
  value: bigint;
  data?: Hex | undefined;
}

/**
 * The L1 data fee to reserve for this call with these fees (wei, with headroom): 0 on a network
 * without a `GasPriceOracle`. The nonce need not be final: it changes the size by a byte at most.
 */
export async function l1Fee(client: PublicClient, call: UnsignedCall, fees: Fees): Promise<bigint> {
  if (!(await chargesL1Fee(client))) return 0n;
  const unsigned = serializeTransaction({
    chainId: call.chainId,
    nonce: call.nonce,
    gas: call.gas,
    to: call.to,
    value: call.value,
    data: call.data,
    ...feeFields(fees),
  });
  const quoted = await client.readContract({ address: GAS_PRICE_ORACLE, abi: ORACLE_ABI, functionName: 'getL1Fee', args: [unsigned] });
  return (quoted * L1_FEE_HEADROOM_PERCENT + 99n) / 100n;
}
