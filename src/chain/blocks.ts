/**
 * Reading blocks, receipts and ERC-20 `Transfer` logs from a node, for the chain follower
 * (src/workers/watcher.ts). Fetching only: what a block means for a wallet is decided in
 * src/modules/transactions/transactions.chain-sync.ts.
 */
import { TransactionReceiptNotFoundError, type Block, type Hex, type PublicClient, type TransactionReceipt } from 'viem';
import { TRANSFER_EVENT } from './erc20.js';
import { isNotYetAtHeight } from './errors.js';

/** getLogs filters on the recipient topic for up to this many addresses; above, the caller filters. */
export const MAX_TOPIC_ADDRESSES = 500;
/** Receipts fetched at once. */
const RECEIPT_CONCURRENCY = 8;

/** A block with its full transactions. */
export type FullBlock = Block<bigint, true, 'latest'>;

/** The chain changed while a block was read (a receipt or log no longer matches the block). */
export class ChainMoved extends Error {
  constructor() {
    super('the chain changed while a block was read');
  }
}

/**
 * The highest block with `confirmations` (at least 1) when `head` is the newest block followed:
 * a block at or below it is final for the service.
 */
export function confirmedHeight(head: number, confirmations: number): number {
  return head - Math.max(1, confirmations) + 1;
}

/** The node's current block number (never cached). */
export async function headNumber(client: PublicClient): Promise<number> {
  return Number(await client.getBlockNumber({ cacheTime: 0 }));
}

/**
 * `read(head)` at the node's current head, and once more at a new head when no endpoint has that
 * head any longer (`NotYetAtHeightError`: the node's height fell back in a reorg, or a balancer's
 * backend behind the one that gave the head answered "header not found"). A second such answer is
 * thrown, as any node fault.
 */
export async function atHead<T>(client: PublicClient, read: (head: bigint) => Promise<T>): Promise<T> {
  const once = async () => read(await client.getBlockNumber({ cacheTime: 0 }));
  try {
    return await once();
  } catch (e) {
    if (!isNotYetAtHeight(e)) throw e;
  }
  return once();
}

/** The block header at `n` (hash, parent hash, timestamp). */
export function blockAt(client: PublicClient, n: number | bigint) {
  return client.getBlock({ blockNumber: BigInt(n) });
}

/** The block at `n` with its full transactions. */
export async function fullBlockAt(client: PublicClient, n: number): Promise<FullBlock> {
  return (await client.getBlock({ blockNumber: BigInt(n), includeTransactions: true })) as FullBlock;
}

/** The receipt of a transaction, or null when the node has none (not mined, or unknown). */
export async function receiptOrNull(client: PublicClient, hash: Hex): Promise<TransactionReceipt | null> {
  try {
    return await client.getTransactionReceipt({ hash });
  } catch (e) {
    if (e instanceof TransactionReceiptNotFoundError) return null;
    throw e;
  }
}

async function inBatches<T, R>(items: T[], size: number, fn: (item: T) => Promise<R>): Promise<R[]> {
  const out: R[] = [];
  for (let i = 0; i < items.length; i += size) out.push(...(await Promise.all(items.slice(i, i + size).map(fn))));
  return out;
}

/**
 * The receipts of transactions of the block `blockHash`, by transaction hash. Throws
 * `ChainMoved` when one is missing or in another block (the block was replaced meanwhile).
 */
export async function blockReceipts(client: PublicClient, blockHash: Hex, hashes: Hex[]): Promise<Map<string, TransactionReceipt>> {
  const receipts = new Map<string, TransactionReceipt>();
  for (const r of await inBatches(hashes, RECEIPT_CONCURRENCY, (h) => receiptOrNull(client, h))) {
    if (!r || r.blockHash !== blockHash) throw new ChainMoved();
    receipts.set(r.transactionHash, r);
  }
  return receipts;
}

export interface TransferLog {
  contract: Hex;
  from: Hex;
  to: Hex;
  value: bigint;
  logIndex: number;
  txHash: Hex;
  removed: boolean;
}

/**
 * ERC-20 `Transfer` logs of the block `blockHash` emitted by `contracts`, filtered by the node
 * on the recipient when there are few enough `recipients` (else, or with `null`, every transfer
 * is returned and the caller filters).
 */
export async function transferLogs(
  client: PublicClient,
  blockHash: Hex,
  contracts: Hex[],
  recipients: Hex[] | null,
): Promise<TransferLog[]> {
  const found = await client.getLogs({
    blockHash,
    address: contracts,
    event: TRANSFER_EVENT,
    args: recipients !== null && recipients.length <= MAX_TOPIC_ADDRESSES ? { to: recipients } : undefined,
    strict: true,
  });
  return found.map((l) => ({
    contract: l.address,
    from: l.args.from,
    to: l.args.to,
    value: l.args.value,
    logIndex: l.logIndex,
    txHash: l.transactionHash,
    removed: l.removed,
  }));
}
