/**
 * The chain watcher of one network. One tick, while this process holds the network's lease:
 *
 * 1. Head and cursor. No cursor yet: start at the current head (blocks before the first start
 *    are not scanned; outgoing transactions are still found through their receipts). The
 *    cursor block's hash no longer on the chain (or the chain is now shorter): a reorg.
 * 2. Blocks cursor+1 .. min(head, cursor + WATCHER_MAX_BLOCKS), one at a time. A block whose
 *    parent hash is not the cursor's hash: a reorg. Otherwise: native transfers to a wallet
 *    address and ERC-20 `Transfer` logs to one (for the tokens it has active) become receipt
 *    rows; the wallets' own pending transfers in the block get their block fields and
 *    receipt; the block's hash is stored and the cursor moved, all in one database transaction
 *    (fenced by the lease). An RPC error stops the tick where it is: the cursor only ever
 *    moves past a block whose records are committed, so an outage misses nothing.
 * 3. Reorg: walk the stored hashes back to the newest block still on the chain (the common
 *    ancestor), then in one database transaction delete receipts from the blocks above it,
 *    put outgoing transfers from them back to pending (block fields cleared) and move the
 *    cursor back. The next blocks are the new chain's, processed as in 2.
 * 4. Settle: pending rows mined at least `confirmations` blocks deep (the receipt's own block
 *    counts as one) become confirmed, or failed if they reverted, each with its event.
 * 5. Pending transfers never seen in a block are checked with the node: all of them on the
 *    first tick after start (the crash-recovery pass), later those not heard of for
 *    WATCHER_RECHECK_MS. Mined already: attached. Known to the node: left alone. Unknown:
 *    the signed raw transaction is sent again; if the node definitively rejects it, the row
 *    fails (reservation released, nonce given back).
 * 6. Balances of every wallet touched are refreshed from the chain (balance.updated events).
 */
import { parseAbiItem, TransactionReceiptNotFoundError, type Block, type Hex, type PublicClient, type Transaction, type TransactionReceipt } from 'viem';
import type { Logger } from 'pino';
import type { AppContext } from '../context.js';
import type { NetworkRow } from '../db/types.js';
import type { BalanceService } from '../modules/wallets/balances.service.js';
import * as txRepo from '../modules/transactions/transactions.repository.js';
import { listTokens } from '../modules/tokens/tokens.repository.js';
import { failUnmined, recordReceipt, rollBackAbove, settleMined } from '../modules/transactions/transactions.state.js';
import { broadcastRaw, nodeKnows } from './broadcast.js';
import { NATIVE_CONTRACT } from './erc20.js';
import * as wrepo from './watcher.repository.js';
import type { Cursor, WatchedToken, WatchedWallet } from './watcher.repository.js';

/** Block hashes kept per network for reorg detection: the deepest reorg rolled back exactly. */
export const KEEP_BLOCKS = 128;
/** Rows settled, and unmined transfers checked, per tick. */
const SETTLE_LIMIT = 500;
const RECHECK_LIMIT = 100;
/** getLogs filters on the recipient topic for up to this many wallets; above, it filters here. */
const MAX_TOPIC_ADDRESSES = 500;
/** Receipts fetched at once. */
const RECEIPT_CONCURRENCY = 8;

const TRANSFER_EVENT = parseAbiItem('event Transfer(address indexed from, address indexed to, uint256 value)');

class LostLease extends Error {
  constructor() {
    super('watcher lease lost');
  }
}

/** The worker is stopping: the node call being awaited is abandoned (never inside a database transaction). */
export class Stopping extends Error {
  constructor() {
    super('watcher stopping');
  }
}

class ChainMoved extends Error {
  constructor() {
    super('the chain changed while a block was read');
  }
}

type FullBlock = Block<bigint, true, 'latest'>;

interface Watched {
  byAddress: Map<string, WatchedWallet>;
  nativeToken: Map<number, WatchedToken>;
  tokenByContract: Map<string, WatchedToken>;
  contracts: Hex[];
}

function index(wallets: WatchedWallet[], tokens: WatchedToken[]): Watched {
  const byAddress = new Map(wallets.map((w) => [w.address.toLowerCase(), w]));
  const nativeToken = new Map<number, WatchedToken>();
  const tokenByContract = new Map<string, WatchedToken>();
  const contracts = new Set<string>();
  for (const t of tokens) {
    if (t.is_native === 1 || t.contract.toLowerCase() === NATIVE_CONTRACT) {
      nativeToken.set(t.wallet_id, t);
    } else {
      tokenByContract.set(`${t.wallet_id}:${t.contract.toLowerCase()}`, t);
      contracts.add(t.contract.toLowerCase());
    }
  }
  return { byAddress, nativeToken, tokenByContract, contracts: [...contracts] as Hex[] };
}

async function inBatches<T, R>(items: T[], size: number, fn: (item: T) => Promise<R>): Promise<R[]> {
  const out: R[] = [];
  for (let i = 0; i < items.length; i += size) out.push(...(await Promise.all(items.slice(i, i + size).map(fn))));
  return out;
}

async function receiptOrNull(client: PublicClient, hash: Hex): Promise<TransactionReceipt | null> {
  try {
    return await client.getTransactionReceipt({ hash });
  } catch (e) {
    if (e instanceof TransactionReceiptNotFoundError) return null;
    throw e;
  }
}

export interface NetworkWatcherDeps {
  ctx: AppContext;
  balances: BalanceService;
  /** This process's lease holder id. */
  holder: string;
  /** Rejects with `Stopping` when the worker stops: node calls in flight are abandoned. */
  stopped: Promise<never>;
  /** Fills a freed nonce that later pending transfers of the wallet wait behind (TransactionService.fillNonceGap). */
  fillNonceGap?: (walletId: number) => Promise<void>;
}

export interface TickResult {
  head: number | null;
  cursor: number | null;
}

export class NetworkWatcher {
  private readonly log: Logger;
  private readonly lease: string;
  private hasLease = false;
  private recoverySweepDone = false;
  private failing = false;

  constructor(
    private readonly deps: NetworkWatcherDeps,
    readonly networkId: number,
  ) {
    this.log = deps.ctx.log.child({ component: 'watcher', network_id: networkId });
    this.lease = wrepo.leaseName(networkId);
  }

  /** One tick (bounded work). Never throws: errors are logged and the next tick retries. */
  async tick(network: NetworkRow, shouldStop: () => boolean): Promise<void> {
    const { ctx } = this.deps;
    const cfg = ctx.config.watcher;
    let acquired: boolean;
    try {
      acquired = await wrepo.acquireLease(ctx.store.db, this.lease, this.deps.holder, ctx.clock.nowMs(), cfg.leaseTtlMs);
    } catch (e) {
      this.log.warn({ err: e }, 'lease check failed');
      return;
    }
    if (!acquired) {
      if (this.hasLease) this.log.info('lease lost to another process');
      this.hasLease = false;
      this.recoverySweepDone = false;
      return;
    }
    if (!this.hasLease) this.log.info({ holder: this.deps.holder }, 'lease acquired; watching');
    this.hasLease = true;

    const client = ctx.chains.get(network);
    const affected = new Set<number>();
    try {
      await this.advance(network, client, affected, shouldStop);
      await this.settle(network, affected);
      await this.checkUnmined(network, client, affected);
      await this.settle(network, affected);
      if (this.failing) this.log.info('watcher recovered');
      this.failing = false;
    } catch (e) {
      if (e instanceof Stopping) {
        this.log.debug('tick abandoned: stopping');
      } else if (e instanceof LostLease) {
        this.log.info('lease lost during a tick; its work was rolled back');
        this.hasLease = false;
        this.recoverySweepDone = false;
      } else if (e instanceof ChainMoved) {
        this.log.debug('chain moved during the tick; retrying next tick');
      } else if (!this.failing) {
        this.failing = true;
        this.log.warn({ err: e }, 'watcher tick failed; retrying every tick until it succeeds');
      } else {
        this.log.debug({ err: e }, 'watcher tick failed again');
      }
    } finally {
      await this.refreshBalances(affected, shouldStop);
    }
  }

  /** Gives the lease up (on a clean stop), so another process takes over at once. */
  async release(): Promise<void> {
    if (!this.hasLease) return;
    this.hasLease = false;
    try {
      await wrepo.releaseLease(this.deps.ctx.store.db, this.lease, this.deps.holder);
    } catch (e) {
      this.log.warn({ err: e }, 'could not release the lease; it expires by itself');
    }
  }

  /**
   * Awaits a node call unless the worker stops first. Only node calls are abandoned this way:
   * no database transaction of the watcher ever waits on the network, so a stop never cuts one.
   */
  private net<T>(p: Promise<T>): Promise<T> {
    return Promise.race([p, this.deps.stopped]);
  }

  /** A database transaction that only commits while this process still holds the lease. */
  private fenced<T>(fn: (trx: AppContext['store']['db']) => Promise<T>): Promise<T> {
    const { ctx } = this.deps;
    return ctx.store.db.transaction().execute(async (trx) => {
      if (!(await wrepo.fence(trx, this.lease, this.deps.holder, ctx.clock.nowMs(), ctx.config.watcher.leaseTtlMs))) throw new LostLease();
      return fn(trx);
    });
  }

  private async advance(network: NetworkRow, client: PublicClient, affected: Set<number>, shouldStop: () => boolean): Promise<void> {
    const { ctx } = this.deps;
    const db = ctx.store.db;
    const head = Number(await this.net(client.getBlockNumber({ cacheTime: 0 })));
    let cursor = await wrepo.findCursor(db, this.networkId);
    if (!cursor) {
      const b = await this.net(client.getBlock({ blockNumber: BigInt(head) }));
      const start: Cursor = { block_number: head, block_hash: b.hash };
      await this.fenced(async (trx) => {
        const now = ctx.clock.nowMs();
        await wrepo.initCursor(trx, this.networkId, start, now);
        await wrepo.saveBlock(trx, this.networkId, { number: head, hash: b.hash, parentHash: b.parentHash }, now);
      });
      this.log.info({ block: head }, 'no cursor yet: watching from the current head');
      return;
    }

    if (head < cursor.block_number || (await this.net(client.getBlock({ blockNumber: BigInt(cursor.block_number) }))).hash !== cursor.block_hash) {
      cursor = await this.rollBack(client, cursor, head, affected);
    }

    const to = Math.min(head, cursor.block_number + ctx.config.watcher.maxBlocksPerTick);
    if (to <= cursor.block_number) return;
    // Read after the head: a wallet (or token) created after this read can only receive in
    // blocks mined after it, which are above `head`, so this tick cannot miss a transfer to it.
    const { wallets, tokens } = await wrepo.watchedOnNetwork(db, this.networkId);
    const watched = index(wallets, tokens);
    for (let n = cursor.block_number + 1; n <= to && !shouldStop(); n++) {
      const block = (await this.net(client.getBlock({ blockNumber: BigInt(n), includeTransactions: true }))) as FullBlock;
      if (block.parentHash !== cursor.block_hash) {
        cursor = await this.rollBack(client, cursor, head, affected);
        return; // the new chain is processed from the ancestor on the next tick
      }
      cursor = await this.processBlock(network, client, block, cursor, watched, affected);
    }
    this.log.debug({ head, cursor: cursor.block_number }, 'tick');
  }

  private async processBlock(
    network: NetworkRow,
    client: PublicClient,
    block: FullBlock,
    cursor: Cursor,
    watched: Watched,
    affected: Set<number>,
  ): Promise<Cursor> {
    const { ctx } = this.deps;
    const number = Number(block.number);
    const hash = block.hash;
    const timestampMs = Number(block.timestamp) * 1000;
    const txs = block.transactions as Transaction[];
    const walletOf = (a: string | null | undefined) => (a ? watched.byAddress.get(a.toLowerCase()) : undefined);

    // Everything from the node first; the database transaction below does no network I/O.
    const incoming = txs.filter((tx) => tx.value > 0n && walletOf(tx.to) && watched.nativeToken.has(walletOf(tx.to)!.id));
    const fromUs = txs.filter((tx) => walletOf(tx.from));
    for (const tx of txs) {
      const to = walletOf(tx.to);
      const from = walletOf(tx.from);
      if (to) affected.add(to.id);
      if (from) affected.add(from.id);
    }
    // One row per hash. Two rows share a hash only when a transfer failed unmined and the same
    // request was made again for its nonce: the live (pending) one is the one mined here.
    const ours = [
      ...(await txRepo.findUnminedByHashes(ctx.store.db, this.networkId, fromUs.map((tx) => tx.hash)))
        .reduce((byHash, rec) => {
          const prev = byHash.get(rec.tx_hash!);
          const better = !prev || (prev.status !== 'pending' && (rec.status === 'pending' || rec.id > prev.id));
          if (better) byHash.set(rec.tx_hash!, rec);
          return byHash;
        }, new Map<string, txRepo.TxRecord>())
        .values(),
    ];

    let logs: Array<{ wallet: WatchedWallet; token: WatchedToken; from: string; value: bigint; logIndex: number; txHash: Hex }> = [];
    if (watched.contracts.length > 0 && watched.byAddress.size > 0) {
      const recipients = [...watched.byAddress.values()].map((w) => w.address as Hex);
      const found = await this.net(client.getLogs({
        blockHash: hash,
        address: watched.contracts,
        event: TRANSFER_EVENT,
        args: recipients.length <= MAX_TOPIC_ADDRESSES ? { to: recipients } : undefined,
        strict: true,
      }));
      logs = found.flatMap((l) => {
        const wallet = walletOf(l.args.to);
        const token = wallet ? watched.tokenByContract.get(`${wallet.id}:${l.address.toLowerCase()}`) : undefined;
        if (!wallet || !token || l.removed || l.args.value === 0n) return [];
        return [{ wallet, token, from: l.args.from, value: l.args.value, logIndex: l.logIndex, txHash: l.transactionHash }];
      });
      for (const l of logs) affected.add(l.wallet.id);
    }

    const needReceipt = [...new Set([...incoming.map((t) => t.hash), ...ours.map((r) => r.tx_hash as Hex), ...logs.map((l) => l.txHash)])];
    const receipts = new Map<string, TransactionReceipt>();
    for (const r of await inBatches(needReceipt, RECEIPT_CONCURRENCY, (h) => this.net(receiptOrNull(client, h)))) {
      if (!r || r.blockHash !== hash) throw new ChainMoved();
      receipts.set(r.transactionHash, r);
    }
    const txByHash = new Map(txs.map((t) => [t.hash, t]));
    const settledNow = network.confirmations <= 1;

    const next: Cursor = { block_number: number, block_hash: hash };
    await this.fenced(async (trx) => {
      const now = ctx.clock.nowMs();
      if (!(await wrepo.moveCursor(trx, this.networkId, cursor, next, now))) throw new LostLease();
      await wrepo.saveBlock(trx, this.networkId, { number, hash, parentHash: block.parentHash }, now);
      await wrepo.pruneBlocks(trx, this.networkId, number, KEEP_BLOCKS);

      const receiptRows: txRepo.NewTx[] = [];
      const base = (tx: Transaction, r: TransactionReceipt) => ({
        type: 'receipt' as const,
        status: settledNow ? ('confirmed' as const) : ('pending' as const),
        fee_reserved: 0n,
        tx_hash: tx.hash,
        block_number: number,
        block_hash: hash,
        block_timestamp: timestampMs,
        nonce: tx.nonce,
        gas: tx.gas,
        gas_price: r.effectiveGasPrice ?? tx.gasPrice ?? null,
        gas_used: r.gasUsed,
        cumulative_gas_used: r.cumulativeGasUsed,
        receipt_status: 1,
        raw_tx: null,
        confirmed_at: settledNow ? now : null,
      });
      for (const tx of incoming) {
        const r = receipts.get(tx.hash)!;
        if (r.status !== 'success') continue;
        const wallet = walletOf(tx.to)!;
        const token = watched.nativeToken.get(wallet.id)!;
        receiptRows.push({
          ...base(tx, r),
          wallet_id: wallet.id,
          token_id: token.id,
          symbol: token.symbol,
          amount: tx.value,
          from_address: tx.from,
          to_address: wallet.address,
          log_index: -1,
        });
      }
      for (const l of logs) {
        const tx = txByHash.get(l.txHash);
        const r = receipts.get(l.txHash)!;
        if (!tx) throw new ChainMoved();
        receiptRows.push({
          ...base(tx, r),
          wallet_id: l.wallet.id,
          token_id: l.token.id,
          symbol: l.token.symbol,
          amount: l.value,
          from_address: l.from,
          to_address: l.wallet.address,
          log_index: l.logIndex,
        });
      }
      await txRepo.lockWallets(trx, ctx.store.dialect, receiptRows.map((r) => r.wallet_id));
      for (const row of receiptRows) await recordReceipt(trx, row, now);

      for (const rec of ours) {
        const r = receipts.get(rec.tx_hash!)!;
        if (rec.status === 'failed') {
          // The chain is the truth: a transfer we took for rejected was mined after all.
          if (!(await txRepo.revive(trx, rec.id, now))) continue;
          this.log.warn({ transaction_id: rec.id, tx_hash: rec.tx_hash, block: number }, 'a transfer marked failed was mined after all; back to pending');
        }
        await txRepo.attachMined(
          trx,
          rec.id,
          {
            block_number: number,
            block_hash: hash,
            block_timestamp: timestampMs,
            gas_used: r.gasUsed,
            cumulative_gas_used: r.cumulativeGasUsed,
            receipt_status: r.status === 'success' ? 1 : 0,
          },
          now,
        );
      }
    });
    if (incoming.length + logs.length + ours.length > 0) {
      this.log.debug({ block: number, receipts: incoming.length + logs.length, mined: ours.length }, 'block recorded');
    }
    return next;
  }

  /** Finds the common ancestor and rolls back everything recorded above it (one transaction). */
  private async rollBack(client: PublicClient, cursor: Cursor, head: number, affected: Set<number>): Promise<Cursor> {
    const { ctx } = this.deps;
    const stored = await wrepo.listBlocks(ctx.store.db, this.networkId, Math.min(cursor.block_number, head));
    let ancestor: Cursor | null = null;
    for (const s of stored) {
      const b = await this.net(client.getBlock({ blockNumber: BigInt(s.block_number) }));
      if (b.hash === s.block_hash) {
        ancestor = { block_number: s.block_number, block_hash: s.block_hash };
        break;
      }
    }
    if (!ancestor) {
      const n = Math.max(0, (stored.at(-1)?.block_number ?? Math.min(cursor.block_number, head)) - 1);
      const b = await this.net(client.getBlock({ blockNumber: BigInt(n) }));
      ancestor = { block_number: n, block_hash: b.hash };
      this.log.error({ from: cursor.block_number, to: n, kept: KEEP_BLOCKS }, 'reorg deeper than the kept block hashes: rolling back all of them');
    }
    const target = ancestor;
    const wallets = await this.fenced(async (trx) => {
      const now = ctx.clock.nowMs();
      if (!(await wrepo.moveCursor(trx, this.networkId, cursor, target, now))) throw new LostLease();
      const touched = await rollBackAbove(trx, ctx.store.dialect, this.networkId, target.block_number, now);
      await wrepo.deleteBlocksAbove(trx, this.networkId, target.block_number);
      return touched;
    });
    for (const w of wallets) affected.add(w);
    this.log.info(
      { from: cursor.block_number, ancestor: target.block_number, depth: cursor.block_number - target.block_number, wallets: wallets.size },
      'reorg: rolled back to the common ancestor',
    );
    return target;
  }

  /** Pending rows with enough confirmations (relative to the cursor) become confirmed or failed. */
  private async settle(network: NetworkRow, affected: Set<number>): Promise<void> {
    const { ctx } = this.deps;
    const cursor = await wrepo.findCursor(ctx.store.db, this.networkId);
    if (!cursor) return;
    const maxBlock = cursor.block_number - Math.max(1, network.confirmations) + 1;
    const ready = await txRepo.listSettleable(ctx.store.db, this.networkId, maxBlock, SETTLE_LIMIT);
    if (ready.length === 0) return;
    const settled = await this.fenced(async (trx) => {
      const now = ctx.clock.nowMs();
      const out = [];
      for (const rec of ready) {
        const after = await settleMined(trx, rec, now);
        if (after) out.push(after);
      }
      return out;
    });
    for (const s of settled) {
      affected.add(s.wallet_id);
      this.log.info({ transaction_id: s.id, tx_hash: s.tx_hash, block: s.block_number, status: s.status, type: s.type }, `transaction ${s.status}`);
    }
  }

  /** Pending transfers not seen in a block: attach if mined, leave if known, else send again. */
  private async checkUnmined(network: NetworkRow, client: PublicClient, affected: Set<number>): Promise<void> {
    const { ctx } = this.deps;
    const db = ctx.store.db;
    const cursor = await wrepo.findCursor(db, this.networkId);
    if (!cursor) return;
    const now = ctx.clock.nowMs();
    const recheck = ctx.config.watcher.recheckMs;
    const all = !this.recoverySweepDone;
    const rows = await txRepo.listDueUnmined(db, this.networkId, { graceBefore: now - recheck, checkedBefore: now - recheck, all, limit: RECHECK_LIMIT });
    // Wallets with a transfer still unmined after this pass: one of them may wait behind a gap.
    const waiting = new Set<number>();
    for (const row of rows) {
      const hash = row.tx_hash as Hex;
      const receipt = await this.net(receiptOrNull(client, hash));
      if (receipt) {
        const n = Number(receipt.blockNumber);
        if (n > cursor.block_number) continue; // the block is processed soon
        const stored = await wrepo.findBlockHash(db, this.networkId, n);
        if (stored !== undefined && stored !== receipt.blockHash) continue; // a reorg the next tick handles
        const block = await this.net(client.getBlock({ blockNumber: receipt.blockNumber }));
        await this.fenced((trx) =>
          txRepo.attachMined(
            trx,
            row.id,
            {
              block_number: n,
              block_hash: receipt.blockHash,
              block_timestamp: Number(block.timestamp) * 1000,
              gas_used: receipt.gasUsed,
              cumulative_gas_used: receipt.cumulativeGasUsed,
              receipt_status: receipt.status === 'success' ? 1 : 0,
            },
            ctx.clock.nowMs(),
          ),
        );
        affected.add(row.wallet_id);
        continue;
      }
      const known = await this.net(nodeKnows(client, hash));
      if (known === null) continue;
      if (known) {
        await txRepo.markBroadcast(db, row.id, ctx.clock.nowMs());
        waiting.add(row.wallet_id);
        continue;
      }
      const outcome = await this.net(broadcastRaw(client, row.raw_tx as Hex, hash));
      if (outcome.kind === 'sent' || outcome.kind === 'known') {
        await txRepo.markBroadcast(db, row.id, ctx.clock.nowMs());
        waiting.add(row.wallet_id);
        this.log.info({ transaction_id: row.id, tx_hash: hash, nonce: row.nonce }, 'transaction re-broadcast (the node did not know it)');
      } else if (outcome.kind === 'rejected') {
        const failed = await this.fenced((trx) =>
          failUnmined(trx, ctx.store.dialect, row.id, { reason: outcome.reason, nonceUsed: outcome.nonceUsed, nowMs: ctx.clock.nowMs() }),
        );
        if (failed) {
          affected.add(row.wallet_id);
          this.log.warn({ transaction_id: row.id, tx_hash: hash, nonce: row.nonce, reason: outcome.reason }, 'transaction dropped: the node rejected it; failed');
        }
      } else {
        this.log.debug({ transaction_id: row.id, outcome: outcome.kind, reason: outcome.reason }, 're-broadcast not confirmed; retrying later');
      }
    }
    for (const walletId of waiting) {
      try {
        await this.net(this.deps.fillNonceGap?.(walletId) ?? Promise.resolve());
      } catch (e) {
        if (e instanceof Stopping) throw e;
        this.log.warn({ wallet_id: walletId, err: e }, 'could not fill a nonce gap; trying again at the next check');
      }
    }

    if (all && rows.length < RECHECK_LIMIT) this.recoverySweepDone = true;
  }

  /** Reads (node) then stores (database, with balance.updated events) each touched wallet's balances. */
  private async refreshBalances(walletIds: Set<number>, shouldStop: () => boolean): Promise<void> {
    if (walletIds.size === 0) return;
    const { ctx, balances } = this.deps;
    const { wallets } = await wrepo.watchedOnNetwork(ctx.store.db, this.networkId).catch(() => ({ wallets: [] as WatchedWallet[] }));
    for (const w of wallets) {
      if (!walletIds.has(w.id) || shouldStop()) continue;
      try {
        const list = await listTokens(ctx.store.db, w.id, { activeOnly: true });
        const fresh = await this.net(balances.readChain(w, list));
        await balances.store(w, list, fresh);
      } catch (e) {
        if (e instanceof Stopping) return;
        this.log.debug({ wallet_id: w.id, err: e }, 'balance refresh failed; the balance route re-reads the chain');
      }
    }
  }
}
