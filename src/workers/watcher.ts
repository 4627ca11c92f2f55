/**
 * The chain follower: every WATCHER_POLL_MS, one tick per registered network (networks added
 * later are picked up), all networks in parallel. It fetches blocks (src/chain/blocks.ts) and
 * hands them to the transactions module (transactions.chain-sync.ts), which decides what they
 * mean; here live the lease, the cursor and the order of the steps.
 *
 * Lease. Each network is watched by exactly one process at a time, the holder of its lease
 * `watcher:<network id>` (src/db/leases.repository.ts); the others try to take the lease every
 * tick, so after a crash another process takes over once the lease expires (WATCHER_LEASE_MS,
 * default 10 s), and at once after a clean stop, which releases it. Every database transaction
 * of a tick is fenced by the lease: a process that lost it rolls its work back.
 *
 * One tick, while this process holds the network's lease:
 *
 * 1. Head and cursor. No cursor yet: start at the current head (blocks before the first start
 *    are not scanned; outgoing transactions are still found through their receipts). The
 *    cursor block's hash no longer on the chain: a reorg. A head below the cursor is a node
 *    that lags (e.g. another node behind a load balancer): the tick waits, it never rolls back
 *    because a number is lower (that would un-confirm transfers and announce them twice).
 * 2. Blocks cursor+1 .. min(head, cursor + WATCHER_MAX_BLOCKS), in batches of BATCH_BLOCKS:
 *    each batch is read from the node first (READ_AHEAD blocks at once, each with its receipts
 *    and logs for the wallets; the next batch is read while this one is recorded), then the blocks that link up from the cursor (each one's parent
 *    hash the previous one's hash) are recorded, their hashes stored and the cursor moved past
 *    the last of them, all in one database transaction. The first block that does not link is a
 *    reorg (step 3). An RPC error stops the tick where it is: the cursor only ever moves past
 *    blocks whose records are committed with it, so an outage misses nothing.
 * 3. Reorg: walk the stored hashes back to the newest block still on the chain (the common
 *    ancestor), then in one database transaction roll back what was recorded from the blocks
 *    above it (`rollBackAbove`: pending again, `transaction.reorged` for what had been settled)
 *    and move the cursor back. The next blocks are the new chain's,
 *    processed as in 2.
 * 3b. Blocks recorded while no endpoint could give their call traces are read again, and their
 *    internal payments and receipts recorded (src/workers/watcher.traces.ts).
 * 4. Settle the pending rows mined deep enough (`settleConfirmed`).
 * 5. Pending transfers never seen in a block are checked with the node (`recheckUnmined`): all
 *    of them on the first tick after start (the crash-recovery pass), later those due (each
 *    with its own backoff from WATCHER_RECHECK_MS, round robin over wallets). Wallets with a
 *    transfer still waiting get a nonce gap filled; a transfer whose re-send the node refused
 *    for its fees is signed again at its nonce with current fees. Receipts a reorg removed that did not come
 *    back are checked too (`recheckReorgedReceipts`). Transfers pending longer than
 *    TX_STUCK_AFTER_S are marked stuck (one warning each).
 * 6. Balances of every wallet touched are refreshed from the chain (balance.updated events).
 *
 * Wake-ups. Besides its poll, the loop ticks at once when the node announces a new head over a
 * WebSocket (WATCHER_FOLLOW_HEADS, src/chain/heads.ts: the lease holder subscribes, where the
 * node allows it), NUDGE_MS later on a chain whose blocks come faster than the polls. The
 * announcement only wakes the tick, which reads the chain over HTTP as above.
 *
 * `stop()` resolves after the ticks in progress have finished their current database
 * transaction; a node call being awaited is abandoned (nothing is lost: the cursor only moves
 * with a committed block).
 */
import { hostname } from 'node:os';
import { randomBytes } from 'node:crypto';
import type { Logger } from 'pino';
import type { AppContext } from '../context.js';
import type { Executor } from '../db/index.js';
import type { NetworkRow } from '../db/types.js';
import { acquireLease, fence, releaseLease } from '../db/leases.repository.js';
import { pipelinedTransaction } from '../db/pipelined.js';
import { onBroadcast } from '../chain/broadcast.js';
import { endpointUrls } from '../chain/endpoints.js';
import { followHeads, type HeadFollower } from '../chain/heads.js';
import { blockAt, ChainMoved, fullBlockAt, headNumber, type FullBlock } from '../chain/blocks.js';
import {
  deleteBlocksAbove,
  findCursor,
  initCursor,
  listBlocks,
  listNetworks,
  moveCursor,
  pruneBlocks,
  saveBlocks,
  type ChainCursor,
} from '../modules/networks/networks.repository.js';
import { listTokens } from '../modules/tokens/tokens.repository.js';
import { hasPendingTransfers } from '../modules/transactions/transactions.watch.repository.js';
import {
  loadWatched,
  readBlockTransfers,
  lookupOurs,
  attachMinedTransfers,
  recordBlockReceipts,
  settleConfirmed,
  settleLocked,
  logSettled,
  walletsOfBlock,
  type SyncScope,
  type Watched,
} from '../modules/transactions/transactions.chain-sync.js';
import { markStuckTransfers, recheckReorgedReceipts, recheckUnmined } from '../modules/transactions/transactions.recheck.js';
import { lockWalletsAndEvents, rollBackAbove } from '../modules/transactions/transactions.state.js';
import {
  anyDepositWatched,
  chargeBlocksCommitted,
  readChargePayments,
  recordChargeBlockTimes,
  rollBackChargePayments,
} from '../modules/charges/charges.chain-sync.js';
import type { TransactionService } from '../modules/transactions/transactions.service.js';
import type { BalanceService } from '../modules/wallets/balances.service.js';
import { findWalletView } from '../modules/wallets/wallets.repository.js';
import type { Worker } from './worker.js';
import { startLoop } from './loop.js';
import { rollBackCheckpoints } from '../modules/reconciliation/reconciliation.repository.js';
import { NetworkTraces, type BlockTraces } from './watcher.traces.js';
import { addPendingTraces, deletePendingTracesAbove } from '../modules/networks/traces.repository.js';

/** Block hashes kept per network for reorg detection: the deepest reorg rolled back exactly. */
const KEEP_BLOCKS = 128;
/**
 * Blocks recorded per database transaction while catching up (one commit, one lease check, the
 * cursor moved once), and blocks read from the node at once (BENCHMARKS.md, "Watcher catch-up":
 * 8 at once caught up faster than 4, and 16 faster than 8, the service's event loop otherwise
 * idle much of the time waiting on the node; a provider's rate limit is met by resting that
 * endpoint, not by reading slower). A batch is two rounds of reads.
 */
const READ_AHEAD = 16;
const BATCH_BLOCKS = 2 * READ_AHEAD;
/**
 * Where blocks come faster than the watcher polls (a tick found two or more new ones: a devnet
 * mining each transaction at once, a chain with sub-second blocks), a transfer this process
 * broadcasts brings the next tick to at most NUDGE_MS later, so its confirmation (what frees the
 * wallet's MAX_PENDING_PER_WALLET places) is not paced by WATCHER_PENDING_POLL_MS. A chain slower
 * than the poll keeps the poll: no node call is added there. FAST_FOR_MS: how long one such tick
 * counts.
 */
const NUDGE_MS = 50;
/**
 * On such a chain a new head the node announces brings the next tick to at most HEAD_NUDGE_MS
 * later (a head on a slower chain: at once). Short: the heads come no faster than the chain makes
 * blocks, and a tick running meanwhile takes every head announced during it, so the window only
 * gathers a burst; 50 ms here left a one-wallet create refused at the 64-pending cap now and
 * then on a devnet, the window holding back the confirmations that free its places (BENCHMARKS.md).
 */
const HEAD_NUDGE_MS = 10;
const FAST_FOR_MS = 10_000;

const leaseName = (networkId: number) => `watcher:${networkId}`;

class LostLease extends Error {
  constructor() {
    super('watcher lease lost');
  }
}

/** The worker is stopping: the node call being awaited is abandoned (never inside a database transaction). */
class Stopping extends Error {
  constructor() {
    super('watcher stopping');
  }
}

export function startWatcherWorker(ctx: AppContext, deps: { balances: BalanceService; transactions?: TransactionService }): Worker {
  const holder = `${hostname()}:${process.pid}:${randomBytes(4).toString('hex')}`;
  const log = ctx.log.child({ component: 'watcher' });
  const watchers = new Map<number, NetworkWatcher>();
  // Rejected on stop: node calls in flight are abandoned (a node that hangs cannot hold a
  // shutdown open); database transactions in progress still finish.
  let abort!: () => void;
  const stopped = new Promise<never>((_, reject) => {
    abort = () => reject(new Stopping());
  });
  stopped.catch(() => undefined);

  const { fillNonceGap, reprice } = transferRepairs(ctx, deps.transactions);
  // What every network's watcher shares (`loop` is there by the time a head arrives).
  const onHead = (fast: boolean) => loop.nudge(fast ? HEAD_NUDGE_MS : 0);
  const shared = { ctx, balances: deps.balances, holder, stopped, fillNonceGap, reprice, onHead };

  log.info({ holder }, 'chain watcher started');
  const offBroadcast = onBroadcast(() => {
    for (const w of watchers.values()) if (w.fast) return loop.nudge(NUDGE_MS);
  });
  const loop = startLoop({
    name: 'watcher',
    intervalMs: ctx.config.watcher.pollIntervalMs,
    log,
    // A network whose follower is behind the head is worked on again at once: a backlog
    // is not paced by WATCHER_POLL_MS.
    // While a transfer is unconfirmed, the next tick comes after WATCHER_PENDING_POLL_MS: its
    // confirmation is what a sender (a payout's next items, a user) waits for.
    soonMs: ctx.config.watcher.pendingPollMs,
    tick: async (stopping) => {
      const networks = await listNetworks(ctx.store.db);
      const states = await Promise.all(
        networks.map((n) => {
          let w = watchers.get(n.id);
          if (!w) watchers.set(n.id, (w = new NetworkWatcher(shared, n.id)));
          return w.tick(n, stopping);
        }),
      );
      if (states.includes('behind')) return true;
      return states.includes('pending') ? 'soon' : false;
    },
    onStopRequested: () => {
      offBroadcast();
      abort();
    },
    onStop: async () => {
      await Promise.all([...watchers.values()].map((w) => w.release()));
    },
  });
  return loop;
}

/** The transfer service's repairs the watcher asks for, by wallet id (none without the service). */
function transferRepairs(
  ctx: AppContext,
  transactions: TransactionService | undefined,
): Pick<NetworkWatcherDeps, 'fillNonceGap' | 'reprice'> {
  if (!transactions) return {};
  return {
    fillNonceGap: async (walletId) => {
      const wallet = await findWalletView(ctx.store.db, walletId);
      if (wallet) await transactions.fillNonceGap(wallet);
    },
    reprice: async (walletId, txId) => {
      const wallet = await findWalletView(ctx.store.db, walletId);
      if (wallet) await transactions.reprice(wallet, txId);
    },
  };
}

interface NetworkWatcherDeps {
  ctx: AppContext;
  balances: BalanceService;
  /** This process's lease holder id. */
  holder: string;
  /** Rejects with `Stopping` when the worker stops: node calls in flight are abandoned. */
  stopped: Promise<never>;
  /** Fills a freed nonce that later pending transfers of the wallet wait behind (TransactionService.fillNonceGap). */
  fillNonceGap?: (walletId: number) => Promise<void>;
  /** Signs again, with current fees, a transfer whose re-send the node refused for its fees (TransactionService.reprice). */
  reprice?: (walletId: number, txId: number) => Promise<void>;
  /** The node announced a new head (`fast`: the network makes blocks faster than the polls). */
  onHead: (fast: boolean) => void;
}

/** The follower of one network. */
class NetworkWatcher {
  private readonly log: Logger;
  private readonly lease: string;
  private hasLease = false;
  private recoverySweepDone = false;
  private failing = false;
  /** Until when this network counts as making blocks faster than the watcher polls (NUDGE_MS). */
  private fastUntil = 0;
  /** The node's new heads, followed while this process holds the lease (WATCHER_FOLLOW_HEADS). */
  private heads: HeadFollower | null = null;
  /** The endpoints `heads` follows (a network's endpoints may change while it runs). */
  private headsOf = '';
  /** Wallets whose balances the next refresh reads (the batches' affected wallets, gathered while one runs). */
  private readonly toRefresh = new Set<number>();
  /** The balance refresh running beside the ticks, if any (release waits for it). */
  private refreshing: Promise<void> | null = null;
  /** The blocks' call traces: read once a block, and again later for those no endpoint gave. */
  private readonly traces: NetworkTraces;

  constructor(
    private readonly deps: NetworkWatcherDeps,
    readonly networkId: number,
  ) {
    this.log = deps.ctx.log.child({ component: 'watcher', network_id: networkId });
    this.lease = leaseName(networkId);
    this.traces = new NetworkTraces(networkId, this.log);
  }

  /** Blocks came faster than the polls lately (a tick found two or more new ones). */
  get fast(): boolean {
    return this.deps.ctx.clock.nowMs() < this.fastUntil;
  }

  /**
   * One tick (bounded work). Never throws: errors are logged and the next tick retries.
   * `behind`: the cursor is still behind the node's head (more to read at once); `pending`: a
   * transfer of the network is unconfirmed (the next tick soon); else `idle`.
   */
  async tick(network: NetworkRow, shouldStop: () => boolean): Promise<'behind' | 'pending' | 'idle'> {
    if (!(await this.holdLease())) {
      this.stopHeads();
      return 'idle';
    }
    this.followHeads(network);
    const affected = new Set<number>();
    const s = this.scope(network, affected);
    let behind = false;
    try {
      behind = await this.advance(s, network, shouldStop);
      await this.traces.reread(s, network);
      await this.settle(s, network);
      await this.checkUnmined(s, network);
      await this.settle(s, network);
      await markStuckTransfers(s);
      if (this.failing) this.log.info('watcher recovered');
      this.failing = false;
    } catch (e) {
      this.tickFailed(e);
    } finally {
      this.queueRefresh(affected, shouldStop);
    }
    if (behind) return 'behind';
    return (await this.hasUnconfirmed(network.id)) ? 'pending' : 'idle';
  }

  /** A transfer of the network not yet confirmed or failed (false when the database cannot say). */
  private async hasUnconfirmed(networkId: number): Promise<boolean> {
    try {
      return await hasPendingTransfers(this.deps.ctx.store.db, networkId);
    } catch {
      return false;
    }
  }

  /** Subscribes to the node's new heads (once per endpoint list), when WATCHER_FOLLOW_HEADS. */
  private followHeads(network: NetworkRow): void {
    if (!this.deps.ctx.config.watcher.followHeads) return;
    const urls = endpointUrls(network);
    const key = urls.join(' ');
    if (this.heads !== null && this.headsOf === key) return;
    this.heads?.stop();
    this.headsOf = key;
    this.heads = followHeads({ urls, log: this.log, onHead: () => this.deps.onHead(this.fast) });
  }

  private stopHeads(): void {
    this.heads?.stop();
    this.heads = null;
  }

  /** Gives the lease up (on a clean stop), so another process takes over at once. */
  async release(): Promise<void> {
    this.stopHeads();
    await this.refreshing;
    if (!this.hasLease) return;
    this.hasLease = false;
    try {
      await releaseLease(this.deps.ctx.store.db, this.lease, this.deps.holder);
    } catch (e) {
      this.log.warn({ err: e }, 'could not release the lease; it expires by itself');
    }
  }

  /** Takes or renews the network's lease; false when another process holds it (or the check failed). */
  private async holdLease(): Promise<boolean> {
    const { ctx, holder } = this.deps;
    let acquired: boolean;
    try {
      acquired = await acquireLease(ctx.store.db, this.lease, holder, ctx.clock.nowMs(), ctx.config.watcher.leaseTtlMs);
    } catch (e) {
      this.log.warn({ err: e }, 'lease check failed');
      return false;
    }
    if (!acquired) {
      if (this.hasLease) this.log.info('lease lost to another process');
      this.hasLease = false;
      this.recoverySweepDone = false;
      return false;
    }
    if (!this.hasLease) this.log.info({ holder }, 'lease acquired; watching');
    this.hasLease = true;
    return true;
  }

  private tickFailed(e: unknown): void {
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
  }

  private scope(network: NetworkRow, affected: Set<number>): SyncScope {
    const { ctx } = this.deps;
    return {
      ctx,
      networkId: this.networkId,
      client: ctx.chains.get(network),
      log: this.log,
      net: (p) => this.net(p),
      fenced: (fn) => this.fenced(fn),
      affected,
    };
  }

  /**
   * Awaits a node call unless the worker stops first. Only node calls are abandoned this way:
   * no database transaction of the watcher ever waits on the network, so a stop never cuts one.
   */
  private net<T>(p: Promise<T>): Promise<T> {
    return Promise.race([p, this.deps.stopped]);
  }

  /** A database transaction that only commits while this process still holds the lease. */
  private fenced<T>(fn: (trx: Executor) => Promise<T>): Promise<T> {
    const { ctx } = this.deps;
    // Pipelined (src/db/pipelined.ts): statements a step issues together travel together.
    return pipelinedTransaction(ctx.store.db, async (trx) => {
      if (!(await fence(trx, this.lease, this.deps.holder, ctx.clock.nowMs(), ctx.config.watcher.leaseTtlMs))) throw new LostLease();
      return fn(trx);
    });
  }

  /** Steps 1 to 3: from the cursor towards the head, a bounded number of blocks; true when still behind it. */
  private async advance(s: SyncScope, network: NetworkRow, shouldStop: () => boolean): Promise<boolean> {
    const { ctx } = this.deps;
    const head = await this.net(headNumber(s.client));
    let cursor = await findCursor(ctx.store.db, this.networkId);
    if (!cursor) {
      await this.startAtHead(s, head);
      return false;
    }

    // A head below the cursor is a node that lags (another node behind a load balancer, or one
    // catching up), not a reorg: wait for it. Only a stored block hash that differs from the
    // chain's at that height rolls anything back (a node without that block throws: retried).
    if (head < cursor.block_number) {
      this.log.debug({ head, cursor: cursor.block_number }, 'node head below the cursor; waiting');
      return false;
    }
    if ((await this.net(blockAt(s.client, cursor.block_number))).hash !== cursor.block_hash) {
      cursor = await this.rollBack(s, cursor, head);
    }

    const to = Math.min(head, cursor.block_number + ctx.config.watcher.maxBlocksPerTick);
    if (to <= cursor.block_number) return false;
    if (head - cursor.block_number >= 2) this.fastUntil = ctx.clock.nowMs() + FAST_FOR_MS;
    // Read after the head: a wallet (or token) created after this read can only receive in
    // blocks mined after it, which are above `head`, so this tick cannot miss a transfer to it.
    const watched = await loadWatched(ctx.store.db, this.networkId);
    // The next batch is read from the node while this one is recorded (reading records nothing:
    // a batch read ahead of a reorg, or of a stop, is dropped unrecorded).
    const readFrom = (n: number) => {
      const p = this.net(readBlocks(s, n, Math.min(to, n + BATCH_BLOCKS - 1), watched, this.traces));
      p.catch(() => undefined); // awaited below, unless dropped
      return p;
    };
    let ahead = readFrom(cursor.block_number + 1);
    for (let n = cursor.block_number + 1; n <= to && !shouldStop();) {
      const read = await ahead;
      n += read.length;
      if (n <= to && !shouldStop()) ahead = readFrom(n);
      // Only an unbroken chain from the cursor is recorded; a break is a reorg (or a node that
      // answered from two forks): what links is kept, then the rollback finds the ancestor.
      const linked: BlockRead[] = [];
      for (const r of read) {
        if (r.block.parentHash !== (linked.at(-1)?.found.hash ?? cursor.block_hash)) break;
        linked.push(r);
      }
      if (linked.length > 0) cursor = await this.recordBlocks(network, linked, cursor);
      if (linked.length < read.length) {
        await this.rollBack(s, cursor, head);
        return false; // the new chain is processed from the ancestor on the next tick (paced: a flapping node cannot spin the loop)
      }
    }
    this.log.debug({ head, cursor: cursor.block_number }, 'tick');
    return cursor.block_number < head;
  }

  private async startAtHead(s: SyncScope, head: number): Promise<void> {
    const b = await this.net(blockAt(s.client, head));
    const start: ChainCursor = { block_number: head, block_hash: b.hash };
    await this.fenced(async (trx) => {
      const now = this.deps.ctx.clock.nowMs();
      await initCursor(trx, this.networkId, start, now);
      await saveBlocks(trx, this.networkId, [{ number: head, hash: b.hash, parentHash: b.parentHash }], now);
    });
    this.log.info({ block: head }, 'no cursor yet: watching from the current head');
  }

  /**
   * Records consecutive blocks (already read from the node) and moves the cursor past the last
   * of them, in one database transaction: the cursor names exactly the last block whose
   * transfers are recorded, and one commit serves the whole batch.
   */
  private async recordBlocks(network: NetworkRow, blocks: BlockRead[], cursor: ChainCursor): Promise<ChainCursor> {
    const lastFound = blocks.at(-1)!.found;
    const next: ChainCursor = { block_number: lastFound.number, block_hash: lastFound.hash };
    // The wallets of the batch's receipts, to the main addresses and to permanent deposit addresses.
    const owners = new Map(blocks.flatMap((b) => [...walletsOfBlock(b.found), ...b.charges.owners]));
    const locked = new Set(owners.keys());
    const founds = blocks.map((b) => b.found);
    const chargeBlocks = blocks.map((b) => b.charges);
    const settled = await this.fenced(async (trx) => {
      const now = this.deps.ctx.clock.nowMs();
      // What touches no wallet's rows goes first: the cursor, the batch's hashes and times, the
      // pruning of old hashes (only this lease's holder writes them). Then the whole batch's
      // wallets, then their users' event orders (one lock order). All issued together (on
      // PostgreSQL one round trip), so the wallets, a hot one among them whose creates queue for
      // it, are locked only for what needs them (test/transactions/watcher-lock-hold.pg.test.ts).
      const [moved] = await Promise.all([
        moveCursor(trx, this.networkId, cursor, next, now),
        saveBlocks(
          trx,
          this.networkId,
          blocks.map(({ block, found }) => ({ number: found.number, hash: found.hash, parentHash: block.parentHash })),
          now,
        ),
        pruneBlocks(trx, this.networkId, lastFound.number, KEEP_BLOCKS),
        recordChargeBlockTimes(trx, this.networkId, chargeBlocks),
        addPendingTraces(
          trx,
          this.networkId,
          this.traces.pendingOf(blocks.map((b) => ({ ...b.found, traces: b.traces }))),
          this.traces.firstRereadAt(),
          now,
        ),
        lockWalletsAndEvents(trx, owners),
      ]);
      if (!moved) throw new LostLease();
      // Our transfers' blocks first, together (they emit nothing); then each block's receipts and charge payments in order.
      await attachMinedTransfers(trx, founds, now, this.log);
      for (const { found, charges } of blocks) {
        await recordBlockReceipts(trx, found, { settledNow: network.confirmations <= 1, nowMs: now });
        await charges.record(trx, now);
      }
      // One confirmation: our transfers the batch mined are final now, settled under the locks held.
      const ours = blocks.some((b) => b.found.ours.length > 0);
      return network.confirmations <= 1 && ours ? settleLocked(trx, this.deps.ctx, this.networkId, next.block_number, locked, now) : [];
    });
    logSettled(this.log, settled);
    chargeBlocksCommitted(chargeBlocks);
    for (const { found } of blocks) {
      const receipts = found.incoming.length + found.tokenLogs.length;
      if (receipts + found.ours.length > 0) {
        this.log.debug({ block: found.number, receipts, mined: found.ours.length }, 'block recorded');
      }
    }
    return next;
  }

  /** Finds the common ancestor and rolls back everything recorded above it (one transaction). */
  private async rollBack(s: SyncScope, cursor: ChainCursor, head: number): Promise<ChainCursor> {
    const target = await this.findAncestor(s, cursor, head);
    const wallets = await this.fenced(async (trx) => {
      const now = this.deps.ctx.clock.nowMs();
      if (!(await moveCursor(trx, this.networkId, cursor, target, now))) throw new LostLease();
      const touched = await rollBackAbove(trx, this.networkId, target.block_number, now);
      await rollBackChargePayments(trx, this.networkId, target.block_number, now, this.log);
      await deletePendingTracesAbove(trx, this.networkId, target.block_number);
      await deleteBlocksAbove(trx, this.networkId, target.block_number);
      await rollBackCheckpoints(trx, this.networkId, target.block_number, now);
      return touched;
    });
    for (const w of wallets) s.affected.add(w);
    this.log.info(
      { from: cursor.block_number, ancestor: target.block_number, depth: cursor.block_number - target.block_number, wallets: wallets.size },
      'reorg: rolled back to the common ancestor',
    );
    return target;
  }

  /** The newest stored block still on the chain; below all of them when none is (logged). */
  private async findAncestor(s: SyncScope, cursor: ChainCursor, head: number): Promise<ChainCursor> {
    const stored = await listBlocks(this.deps.ctx.store.db, this.networkId, Math.min(cursor.block_number, head));
    for (const b of stored) {
      if ((await this.net(blockAt(s.client, b.block_number))).hash === b.block_hash)
        return { block_number: b.block_number, block_hash: b.block_hash };
    }
    const n = Math.max(0, (stored.at(-1)?.block_number ?? Math.min(cursor.block_number, head)) - 1);
    const b = await this.net(blockAt(s.client, n));
    this.log.error(
      { from: cursor.block_number, to: n, kept: KEEP_BLOCKS },
      'reorg deeper than the kept block hashes: rolling back all of them',
    );
    return { block_number: n, block_hash: b.hash };
  }

  /** Step 4, relative to the cursor. */
  private async settle(s: SyncScope, network: NetworkRow): Promise<void> {
    const cursor = await findCursor(this.deps.ctx.store.db, this.networkId);
    if (!cursor) return;
    await settleConfirmed(s, cursor.block_number, network.confirmations);
  }

  /** Step 5: the unmined transfers, then the nonce gaps of the wallets still waiting on one. */
  private async checkUnmined(s: SyncScope, network: NetworkRow): Promise<void> {
    const cursor = await findCursor(this.deps.ctx.store.db, this.networkId);
    if (!cursor) return;
    const all = !this.recoverySweepDone;
    const { waiting, underpriced, allChecked } = await recheckUnmined(s, cursor, all, network.confirmations);
    await recheckReorgedReceipts(s, cursor, network.confirmations);
    for (const { id, wallet_id } of underpriced) {
      await this.net(this.deps.reprice?.(wallet_id, id) ?? Promise.resolve());
      s.affected.add(wallet_id);
    }
    for (const walletId of waiting) {
      try {
        await this.net(this.deps.fillNonceGap?.(walletId) ?? Promise.resolve());
      } catch (e) {
        if (e instanceof Stopping) throw e;
        this.log.warn({ wallet_id: walletId, err: e }, 'could not fill a nonce gap; trying again at the next check');
      }
    }
    if (all && allChecked) this.recoverySweepDone = true;
  }

  /**
   * Step 6, beside the ticks: the recorded wallets' balances are read and stored beside the ticks, not inside them: on a
   * hot wallet a refresh after every batch made each tick measurably longer, and a
   * transfer's confirmation waits on average half a tick (BENCHMARKS.md). One refresh
   * runs at a time; the wallets of the batches recorded meanwhile are read by the next, so a
   * wallet's readings are still stored in the order they were taken (and `store` keeps a later
   * block's reading over an older one).
   */
  private queueRefresh(walletIds: Set<number>, shouldStop: () => boolean): void {
    for (const id of walletIds) this.toRefresh.add(id);
    if (this.refreshing || this.toRefresh.size === 0) return;
    this.refreshing = (async () => {
      while (this.toRefresh.size > 0 && !shouldStop()) {
        const batch = new Set(this.toRefresh);
        this.toRefresh.clear();
        await this.refreshBalances(batch, shouldStop);
      }
    })()
      .catch((e: unknown) => this.log.warn({ err: e }, 'balance refresh failed; the balance route re-reads the chain'))
      .finally(() => {
        this.refreshing = null;
      });
  }

  /** Reads (node) then stores (database, with balance.updated events) each touched wallet's balances. */
  private async refreshBalances(walletIds: Set<number>, shouldStop: () => boolean): Promise<void> {
    if (walletIds.size === 0) return;
    const { ctx, balances } = this.deps;
    const wallets = await loadWatched(ctx.store.db, this.networkId).then(
      (w) => w.wallets,
      () => [],
    );
    for (const w of wallets) {
      if (!walletIds.has(w.id) || shouldStop()) continue;
      try {
        const list = await listTokens(ctx.store.db, w.id, { activeOnly: true });
        const reading = await this.net(balances.readChain(w, list));
        await balances.store(w, list, reading);
      } catch (e) {
        if (e instanceof Stopping) return;
        this.log.debug({ wallet_id: w.id, err: e }, 'balance refresh failed; the balance route re-reads the chain');
      }
    }
  }
}

/** A block read from the node with everything recorded from it. */
interface BlockRead {
  block: FullBlock;
  found: Awaited<ReturnType<typeof readBlockTransfers>>;
  charges: Awaited<ReturnType<typeof readChargePayments>>;
  traces: BlockTraces;
}

/**
 * Blocks `from`..`to` with their transfers and charge payments, READ_AHEAD of them in flight at
 * once, in block order. Reading only: nothing is recorded here.
 */
async function readBlocks(s: SyncScope, from: number, to: number, watched: Watched, traces: NetworkTraces): Promise<BlockRead[]> {
  const round = async (numbers: number[]): Promise<BlockRead[]> => {
    const blocks = await Promise.all(numbers.map((n) => fullBlockAt(s.client, n)));
    // The round's database reads once, not once a block: our transfers among its blocks, and
    // whether any charge address is watched from its earliest stamp on.
    const earliestMs = Math.min(...blocks.map((b) => Number(b.timestamp) * 1000));
    const [ours, anyWatched] = await Promise.all([lookupOurs(s, blocks, watched), anyDepositWatched(s, earliestMs)]);
    // The block's call traces first (one read serves the deposit and the main addresses).
    const tracesNeeded = anyWatched || watched.nativeToken.size > 0;
    return Promise.all(
      blocks.map(async (block) => {
        const t = await traces.read(s, block, tracesNeeded);
        const [found, charges] = await Promise.all([
          readBlockTransfers(s, block, watched, ours, t.moves),
          readChargePayments(s, block, anyWatched, t.moves),
        ]);
        return { block, found, charges, traces: t };
      }),
    );
  };
  const out: BlockRead[] = [];
  for (let n = from; n <= to; n += READ_AHEAD) {
    out.push(...(await round(Array.from({ length: Math.min(READ_AHEAD, to - n + 1) }, (_, i) => n + i))));
  }
  return out;
}
