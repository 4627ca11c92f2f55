/**
 * The follower's reading of call traces (docs/charges.md, "Internal
 * transfers"): native coin a contract sends inside a transaction reaches an address
 * with no transaction addressed to it, and only the block's call traces show it. The follower
 * reads them once per block (`read`), for the deposit addresses (internal payments) and the
 * wallets' main addresses (internal receipts) alike.
 *
 * - Each trace is asked of every endpoint that offers the trace API, in turn
 *   (src/chain/traces.ts, `TraceRoute`): one endpoint refusing it, or lacking the block, is not
 *   the answer.
 * - A block whose traces no endpoint could give (each refused the method, or failed) is recorded
 *   with the rest of the block, and with a row in `trace_pending` in the same transaction: its
 *   internal transfers are unknown, never "none". `reread` asks again, oldest first, each row
 *   backing off from 1 s, doubling to TRACES_OFF_MAX_MS; an answer to any trace call makes every
 *   pending row due at once. Read, its internal payments and receipts are recorded as the
 *   block's would have been (watched addresses as at the block's time) and its row removed, in
 *   one transaction; a reorg removes the rows above the common ancestor with the rest.
 * - A network without traces: when every endpoint refuses the method and none has answered a
 *   trace call for TRACES_KEPT_MS (or ever: `network_traces`), the block is recorded without
 *   internal transfers and no row is kept (warned once every TRACES_OFF_MAX_MS): such money is
 *   not seen (docs/charges.md). So `trace_pending` holds at most TRACES_KEPT_MS of blocks; a
 *   row older than that is given up (logged as an error, with its block).
 *
 * Times here are wall-clock (as the endpoints' rests), not the service clock.
 */
import type { Logger } from 'pino';
import type { Hex } from 'viem';
import type { NetworkRow } from '../db/types.js';
import type { FullBlock } from '../chain/blocks.js';
import { internalTransfers, TracesUnsupported, TRACES_OFF_MAX_MS, type InternalTransfer } from '../chain/traces.js';
import * as repo from '../modules/networks/traces.repository.js';
import { chargeBlocksCommitted, readInternalChargePayments } from '../modules/charges/charges.chain-sync.js';
import {
  loadWatched,
  readInternalReceipts,
  recordBlockReceipts,
  walletsOfBlock,
  type SyncScope,
  type Watched,
} from '../modules/transactions/transactions.chain-sync.js';
import { lockWalletsAndEvents } from '../modules/transactions/transactions.state.js';

/** How long after an endpoint last answered a trace the network still counts as having traces. */
export const TRACES_KEPT_MS = 24 * 3_600_000;
/** Pending blocks read again per tick, oldest first. */
const REREAD_PER_TICK = 16;
const REREAD_FIRST_MS = 1_000;
/** How often the last answer's time is written (it need only be right to within this). */
const SAVE_ANSWERED_EVERY_MS = 60_000;
/** How often rows older than TRACES_KEPT_MS are looked for. */
const GIVE_UP_EVERY_MS = 60_000;

/** A block's internal transfers as the follower read them. */
export interface BlockTraces {
  /** Null when not read: not needed (nothing watched), pending, or a network without traces. */
  moves: InternalTransfer[] | null;
  /** No endpoint could give them now: recorded in `trace_pending` with the block. */
  pending: boolean;
}

const NOT_READ: BlockTraces = { moves: null, pending: false };

/** Delay before the next read of a pending block that was read `attempts` times. */
export function rereadBackoffMs(attempts: number): number {
  return Math.min(REREAD_FIRST_MS * 2 ** Math.min(attempts, 20), TRACES_OFF_MAX_MS);
}

/** The call traces of one network's follower. */
export class NetworkTraces {
  /** When an endpoint last answered a trace (undefined: not read from the database yet). */
  private answeredAtMs: number | null | undefined = undefined;
  private savedAtMs = 0;
  private warnedAtMs = 0;
  private givenUpAtMs = 0;
  /** A trace failed since the last answer (or none was answered yet in this process). */
  private failing = true;
  /** A trace was answered after a failure since the last `reread`: every pending row is due. */
  private healed = false;
  /** A block was recorded pending since the last answer (logged at info once per streak). */
  private toldPending = false;

  constructor(
    private readonly networkId: number,
    private readonly log: Logger,
  ) {}

  /** The block's internal transfers (node calls; a database read the first time). `needed`: some address is watched. */
  async read(s: SyncScope, block: FullBlock, needed: boolean): Promise<BlockTraces> {
    if (!needed) return NOT_READ;
    if (block.transactions.length === 0) return { moves: [], pending: false };
    const got = await this.trace(s, block.hash);
    if ('moves' in got) return { moves: got.moves, pending: false };
    if (got.err instanceof TracesUnsupported && !(await this.hasTraces(s))) {
      this.warnNoTraces(got.err.cause);
      return NOT_READ;
    }
    // Once per streak of failures (a block of them follows while it lasts).
    const fields = { block: Number(block.number), err: got.err };
    if (this.toldPending) this.log.debug(fields, 'no endpoint gave the block’s call traces: read again later');
    else
      this.log.info(fields, 'no endpoint gave the block’s call traces: recorded without them for now, read again later (traces_pending)');
    this.toldPending = true;
    return { moves: null, pending: true };
  }

  /** The blocks of a batch whose traces are pending, for `trace_pending` (in the batch's transaction). */
  pendingOf(blocks: ReadonlyArray<{ number: number; hash: string; traces: BlockTraces }>): Array<{ number: number; hash: string }> {
    return blocks.filter((b) => b.traces.pending).map((b) => ({ number: b.number, hash: b.hash }));
  }

  /** When the pending rows of a batch are first read again. */
  firstRereadAt(): number {
    return Date.now() + REREAD_FIRST_MS;
  }

  /** Reads again the pending blocks that are due (at most REREAD_PER_TICK) and records what they held. */
  async reread(s: SyncScope, network: NetworkRow): Promise<void> {
    const db = s.ctx.store.db;
    await this.giveUpOld(s);
    if (this.healed) await repo.makePendingTracesDue(db, this.networkId, Date.now());
    this.healed = false;
    const due = await repo.listDuePendingTraces(db, this.networkId, Date.now(), REREAD_PER_TICK);
    let watched: Watched | null = null;
    for (const row of due) {
      const got = await this.trace(s, row.block_hash as Hex);
      const block =
        'moves' in got
          ? await s.net(s.client.getBlock({ blockHash: row.block_hash as Hex, includeTransactions: true }).catch(() => null))
          : null;
      if (!('moves' in got) || block === null) {
        await repo.postponePendingTraces(db, this.networkId, row.block_number, Date.now() + rereadBackoffMs(row.attempts + 1));
        if (got && 'err' in got && got.err instanceof TracesUnsupported) break; // no endpoint offers traces now: the others wait their turn
        continue;
      }
      watched ??= await loadWatched(db, this.networkId);
      const [receipts, charges] = await Promise.all([
        readInternalReceipts(s, block, watched, got.moves),
        readInternalChargePayments(s, block, got.moves),
      ]);
      const owners = new Map([...walletsOfBlock(receipts), ...charges.owners]);
      const recorded = await s.fenced(async (trx) => {
        const now = s.ctx.clock.nowMs();
        if (!(await repo.takePendingTraces(trx, this.networkId, row.block_number, row.block_hash))) return false;
        await lockWalletsAndEvents(trx, owners);
        await recordBlockReceipts(trx, receipts, { settledNow: network.confirmations <= 1, nowMs: now });
        await charges.record(trx, now);
        return true;
      });
      if (!recorded) continue;
      chargeBlocksCommitted([charges]);
      this.log.info(
        { block: row.block_number, attempts: row.attempts + 1, payments: charges.payments.length, receipts: receipts.internal.length },
        'call traces of a pending block read: its internal transfers recorded',
      );
    }
  }

  /** The block's internal transfers, or the error that kept every endpoint from giving them (a stop still throws). */
  private async trace(s: SyncScope, blockHash: Hex): Promise<{ moves: InternalTransfer[] } | { err: unknown }> {
    const got = await s.net(
      internalTransfers(s.client, blockHash).then(
        (moves) => ({ moves }),
        (err: unknown) => ({ err }),
      ),
    );
    if ('moves' in got) await this.answered(s);
    else this.failing = true;
    return got;
  }

  private async answered(s: SyncScope): Promise<void> {
    const now = Date.now();
    if (this.failing) this.healed = true;
    this.failing = false;
    this.toldPending = false;
    this.answeredAtMs = now;
    if (now - this.savedAtMs < SAVE_ANSWERED_EVERY_MS) return;
    this.savedAtMs = now;
    await repo.saveTracesAnsweredAt(s.ctx.store.db, this.networkId, now).catch((e: unknown) => {
      this.savedAtMs = 0;
      this.log.debug({ err: e }, 'could not record the time of the last trace answer; next answer');
    });
  }

  /** An endpoint of the network answered a trace within TRACES_KEPT_MS (in this process, or recorded by another). */
  private async hasTraces(s: SyncScope): Promise<boolean> {
    if (this.answeredAtMs === undefined) this.answeredAtMs = await repo.findTracesAnsweredAt(s.ctx.store.db, this.networkId);
    return this.answeredAtMs !== null && Date.now() - this.answeredAtMs < TRACES_KEPT_MS;
  }

  private warnNoTraces(cause: unknown): void {
    const now = Date.now();
    if (now - this.warnedAtMs < TRACES_OFF_MAX_MS) return;
    this.warnedAtMs = now;
    this.log.warn(
      { err: cause },
      'the node has no trace API (debug_traceBlockByHash) on any endpoint: money reaching deposit or wallet addresses through a contract is not seen',
    );
  }

  private async giveUpOld(s: SyncScope): Promise<void> {
    const now = Date.now();
    if (now - this.givenUpAtMs < GIVE_UP_EVERY_MS) return;
    this.givenUpAtMs = now;
    const dropped = await repo.dropPendingTracesBefore(s.ctx.store.db, this.networkId, now - TRACES_KEPT_MS);
    if (dropped.length > 0) {
      this.log.error(
        { blocks: dropped.length, first: dropped[0], last: dropped.at(-1) },
        'call traces of blocks recorded over TRACES_KEPT_MS ago never read: given up (money sent to watched addresses through a contract in them is not recorded; reconciliation shows it)',
      );
    }
  }
}
