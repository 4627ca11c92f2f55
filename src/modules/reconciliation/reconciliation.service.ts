/**
 * Reconciliation (docs/reconciliation.md):
 * for the wallet's main address and the deposit addresses of its charges, per token, the chain
 * balance at the confirmed head H against the checkpoint balance plus what the service's own
 * records say moved since:
 *
 *   difference = chain_balance − checkpoint_balance − recorded_change
 *
 * Each movement is counted once on each side, by the block it was mined in, when that block is
 * in (checkpoint_block, H]:
 * - main: receipts in (a payer's transfer, a charge sweep arriving: the follower records both as
 *   `receipt` rows); its own transfers out (the amount when it succeeded and was not a cancel,
 *   the fee always: reverted, cancels, gap fillers, gas top-ups all pay gas);
 * - a deposit address: the charge's payments in, the main address's native transfers to it in
 *   (gas top-ups; the charge follower never counts those as payments), its sweeps out (the
 *   amount when it succeeded, the fee always). A sweep still in flight is looked up on the node
 *   (its receipt), so the race with the sweeper's tracking counts it exactly once.
 *
 * Chain balances are read at H, never at latest. An `ok` answer moves every checkpoint to H;
 * `accept` records the differences as adjustments and moves them too. Nothing here is sent
 * over the network inside a database transaction.
 */
import { getAddress, type Address, type Hex, type PublicClient } from 'viem';
import type { AppContext } from '../../context.js';
import type { NetworkRow, WalletTokenRow } from '../../db/types.js';
import { confirmedHeight, receiptOrNull } from '../../chain/blocks.js';
import { NATIVE_CONTRACT, readBalance } from '../../chain/erc20.js';
import { outcomeKey, sweepOutcomes } from '../../chain/sweeper.js';
import { mapChainError } from '../../chain/errors.js';
import { receiptFee } from '../../chain/receipt-fee.js';
import { Errors } from '../../errors.js';
import { findBlockHash, findCursor, findNetwork } from '../networks/networks.repository.js';
import * as pay from '../charges/charges.payments.repository.js';
import { listTokens } from '../tokens/tokens.repository.js';
import { findWalletView, lockWallet, type WalletView } from '../wallets/wallets.repository.js';
import * as repo from './reconciliation.repository.js';
import type { AdjustmentRow, DepositRow, SweepMovement } from './reconciliation.repository.js';

/** Balance reads (and receipt look-ups) sent to the node at once; adjustments listed. */
const READ_CONCURRENCY = 8;
const ADJUSTMENTS_LISTED = 100;
/** Accept tries again when a checkpoint moved under it (another answer or accept at once). */
const ACCEPT_ATTEMPTS = 3;

export interface TokenLine {
  token: WalletTokenRow;
  checkpointBlock: number;
  checkpointBalance: bigint;
  /** A reorg moved the checkpoint back to the common ancestor: its balance is read there (`readChain`). */
  checkpointStale: boolean;
  recorded: bigint;
  chain: bigint;
  difference: bigint;
  /** A settled charge's address whose watch had ended at the height, holding more than the records explain: money sent there later. */
  afterWatch: boolean;
}

export interface AddressLine {
  address: string;
  kind: 'main' | 'deposit';
  chargeId: number | null;
  tokens: TokenLine[];
}

export interface UnsweptLine {
  address: string;
  chargeId: number;
  token: WalletTokenRow;
  amount: bigint;
  reason: string;
}

export interface Reconciliation {
  walletId: number;
  blockNumber: number;
  ok: boolean;
  addresses: AddressLine[];
  unswept: UnsweptLine[];
  adjustments: AdjustmentRow[];
  /** Every token of the wallet by id (removed ones too), to name an adjustment's token. */
  tokensById: Map<number, WalletTokenRow>;
}

/** What one address is compared in, and the charge it belongs to. */
interface Slot {
  line: AddressLine;
  deposit: DepositRow | null;
  /** The charge's payment rows when the records were read (an arrival is recorded only if none was added since). */
  paymentRows: number;
}

interface Scope {
  wallet: WalletView;
  network: NetworkRow;
  client: PublicClient;
  height: number;
  native: WalletTokenRow;
  slots: Slot[];
  /** address (lower case) : token id → its line. */
  lines: Map<string, TokenLine>;
  tokensById: Map<number, WalletTokenRow>;
}

class CheckpointMoved extends Error {}

const key = (address: string, tokenId: number) => `${address.toLowerCase()}:${tokenId}`;

export class ReconciliationService {
  constructor(private readonly ctx: AppContext) {}

  /**
   * The answer for the wallet now; an `ok` one moves every checkpoint of the wallet to its block.
   * Money found on a settled charge's address after its watch ended is listed in `unswept` as
   * `after_watch`; with `sweepLateMoney` (the daily run) it is also recorded as a late payment
   * and the address made due a sweep (`recordArrivals`). An answer through the API or the CLI
   * only lists it: the daily run or the sweep route moves it.
   */
  async reconcile(wallet: WalletView, opts: { sweepLateMoney?: boolean } = {}): Promise<Reconciliation> {
    const scope = await this.compare(wallet);
    if (opts.sweepLateMoney) await this.recordArrivals(scope);
    const result = await this.answer(scope);
    const now = this.ctx.clock.nowMs();
    await this.ctx.store.db.transaction().execute(async (trx) => {
      for (const { line } of scope.slots) {
        for (const t of line.tokens) {
          const move = result.ok ? { block_number: scope.height, balance: t.chain } : undefined;
          const upTo = result.ok ? scope.height : t.checkpointBlock;
          await repo.writeCheckpoint(
            trx,
            wallet.id,
            {
              address: line.address,
              token_id: t.token.id,
              charge_id: line.chargeId,
              move,
              unreconciled: t.difference !== 0n,
              checked_block: scope.height,
              checked_balance: t.chain,
              upTo,
            },
            now,
          );
        }
      }
      // A flagged line no longer compared (its token removed) stops counting in /metrics.
      const stale = (await repo.listUnreconciled(trx, wallet.id)).filter((c) => !scope.lines.has(key(c.address, c.token_id)));
      await repo.clearUnreconciled(
        trx,
        stale.map((c) => c.id),
        now,
      );
    });
    return result;
  }

  /**
   * Records every difference as an adjustment with the note and moves the checkpoints to the
   * answer's block, under the wallet's lock; a checkpoint another answer moved meanwhile makes
   * it compare again. 400 when there is no difference to accept.
   */
  async accept(wallet: WalletView, note: string): Promise<Reconciliation> {
    for (let attempt = 1; ; attempt++) {
      const scope = await this.compare(wallet);
      await this.recordArrivals(scope); // late money is a payment to sweep, never an adjustment
      const lines = [...scope.lines.entries()];
      if (lines.every(([, t]) => t.difference === 0n)) throw Errors.badRequest('Nothing to accept: every difference is zero');
      try {
        await this.recordAccept(scope, note);
      } catch (e) {
        if (e instanceof CheckpointMoved && attempt < ACCEPT_ATTEMPTS) continue;
        throw e;
      }
      for (const t of scope.lines.values()) {
        Object.assign(t, {
          checkpointBlock: scope.height,
          checkpointBalance: t.chain,
          checkpointStale: false,
          recorded: 0n,
          difference: 0n,
        });
      }
      return this.answer(scope);
    }
  }

  private async recordAccept(scope: Scope, note: string): Promise<void> {
    const { wallet, height } = scope;
    const now = this.ctx.clock.nowMs();
    await this.ctx.store.db.transaction().execute(async (trx) => {
      await lockWallet(trx, wallet.id);
      for (const { line } of scope.slots) {
        for (const t of line.tokens) {
          if ((await repo.findCheckpointBlock(trx, wallet.id, line.address, t.token.id)) !== t.checkpointBlock) throw new CheckpointMoved();
          if (t.difference !== 0n)
            await repo.insertAdjustment(
              trx,
              { wallet_id: wallet.id, address: line.address, token_id: t.token.id, amount: t.difference, block_number: height, note },
              now,
            );
          await repo.writeCheckpoint(
            trx,
            wallet.id,
            {
              address: line.address,
              token_id: t.token.id,
              charge_id: line.chargeId,
              move: { block_number: height, balance: t.chain },
              unreconciled: false,
              checked_block: height,
              checked_balance: t.chain,
              upTo: height,
            },
            now,
          );
        }
      }
    });
    this.ctx.log.warn({ wallet_id: wallet.id, block: height, note }, 'reconciliation differences accepted as adjustments');
  }

  /** The wallet by id (CLI, housekeeping). */
  findWallet(walletId: number): Promise<WalletView | undefined> {
    return findWalletView(this.ctx.store.db, walletId);
  }

  listWalletIds(): Promise<number[]> {
    return repo.listWalletIds(this.ctx.store.db);
  }

  countUnreconciledAddresses(): Promise<number> {
    return repo.countUnreconciledAddresses(this.ctx.store.db);
  }

  /**
   * For the sweep route: records the money found on one charge's address after its watch ended
   * (as an answer would) and makes the charge due a sweep if it holds any; writes no checkpoint.
   */
  async recordLateMoney(wallet: WalletView, chargeId: number): Promise<void> {
    await this.recordArrivals(await this.compare(wallet, chargeId));
  }

  /** Builds the lines, counts the records and reads the chain; writes nothing. `chargeId`: that charge's address only (with the main address). */
  private async compare(wallet: WalletView, chargeId?: number): Promise<Scope> {
    const scope = await this.scopeOf(wallet, chargeId);
    await this.countTransactions(scope);
    await this.countCharges(scope);
    await this.readChain(scope);
    for (const t of scope.lines.values()) t.difference = t.chain - t.checkpointBalance - t.recorded;
    await this.markAfterWatch(scope);
    return scope;
  }

  /**
   * Flags what a settled charge's address holds beyond the records once its watch had ended at
   * the height (the height's block stamped after `watch_until`: the chain follower saw no
   * payment in the blocks after that): money sent there later, which no one else sees.
   */
  private async markAfterWatch(scope: Scope): Promise<void> {
    const db = this.ctx.store.db;
    const timeMs = (await pay.blockTimeAtOrBelow(db, scope.network.id, scope.height)) ?? this.ctx.clock.nowMs();
    for (const { line, deposit } of scope.slots) {
      if (!deposit || deposit.status === 'pending' || timeMs <= deposit.watch_until) continue;
      for (const t of line.tokens) t.afterWatch = t.chain > 0n && t.difference > 0n;
    }
  }

  /**
   * Each charge whose address holds money sent after its watch: the part of its own token's
   * balance the records do not explain is recorded as a payment (`recordFoundPayment`: late,
   * announced by `charge.delayed`, at the height), and the charge is due a sweep now (another
   * token found there is swept too, as during the watch, without being a payment). Under the
   * charge's lock, and only if no payment was recorded for it since its records were read
   * (another answer at the same time), so an arrival is recorded once. The lines then count it.
   */
  private async recordArrivals(scope: Scope): Promise<void> {
    const db = this.ctx.store.db;
    const found = scope.slots.filter((s) => s.deposit && s.line.tokens.some((t) => t.afterWatch));
    if (found.length === 0) return;
    const now = this.ctx.clock.nowMs();
    const block = {
      block: scope.height,
      blockHash: (await findBlockHash(db, scope.network.id, scope.height)) ?? null,
      blockTimestampMs: (await pay.blockTimeAtOrBelow(db, scope.network.id, scope.height)) ?? now,
    };
    for (const slot of found) {
      const d = slot.deposit!;
      const own = slot.line.tokens.find((t) => t.afterWatch && t.token.id === d.token_id);
      const amount = own ? (own.difference < own.chain ? own.difference : own.chain) : 0n;
      const recorded = await db.transaction().execute(async (trx) => {
        await pay.lockCharge(trx, d.charge_id);
        if (((await pay.countPaymentRows(trx, [d.charge_id])).get(d.charge_id) ?? 0) !== slot.paymentRows) return false;
        if (amount > 0n)
          await pay.recordFoundPayment(
            trx,
            { chargeId: d.charge_id, networkId: scope.network.id, tokenId: d.token_id, amount, ...block },
            now,
          );
        else await pay.makeSweepDue(trx, d.charge_id, now);
        return true;
      });
      if (!recorded) continue;
      if (own && amount > 0n) Object.assign(own, { recorded: own.recorded + amount, difference: own.difference - amount });
      const held = slot.line.tokens.filter((t) => t.afterWatch).map((t) => ({ symbol: t.token.symbol, balance: t.chain.toString() }));
      this.ctx.log.warn(
        {
          wallet_id: scope.wallet.id,
          charge_id: d.charge_id,
          address: slot.line.address,
          block: scope.height,
          held,
          payment: amount.toString(),
        },
        'money found on a charge deposit address after its watch ended: recorded as a late payment and due a sweep',
      );
    }
  }

  /** The height, the addresses and tokens compared, and their checkpoints. */
  private async scopeOf(wallet: WalletView, chargeId?: number): Promise<Scope> {
    const db = this.ctx.store.db;
    const network = await findNetwork(db, wallet.network_id);
    const cursor = network ? await findCursor(db, network.id) : undefined;
    if (!network || !cursor) throw Errors.badRequest('The network is not followed yet: no confirmed block to reconcile at');
    const all = await listTokens(db, wallet.id);
    const active = all.filter((t) => t.is_active === 1);
    const native = all.find((t) => t.is_native === 1);
    if (!native) throw new Error(`wallet ${wallet.id} has no native token`);
    const checkpoints = new Map((await repo.listCheckpoints(db, wallet.id)).map((c) => [key(c.address, c.token_id), c]));
    const deposits = await repo.listDeposits(db, wallet.id, chargeId);
    const tokensById = new Map(all.map((t) => [t.id, t]));
    const lines = new Map<string, TokenLine>();
    const lineOf = (address: string, token: WalletTokenRow): TokenLine => {
      const c = checkpoints.get(key(address, token.id));
      const t = {
        token,
        checkpointBlock: c?.block_number ?? 0,
        checkpointBalance: c?.balance ?? 0n,
        checkpointStale: c?.stale ?? false,
        recorded: 0n,
        chain: 0n,
        difference: 0n,
        afterWatch: false,
      };
      lines.set(key(address, token.id), t);
      return t;
    };
    const main = getAddress(wallet.address);
    const slots: Slot[] = [
      { line: { address: main, kind: 'main', chargeId: null, tokens: active.map((t) => lineOf(main, t)) }, deposit: null, paymentRows: 0 },
    ];
    for (const d of deposits) {
      const address = getAddress(d.address);
      const own = active.some((t) => t.id === d.token_id) ? [] : [tokensById.get(d.token_id)!].filter(Boolean);
      slots.push({
        line: { address, kind: 'deposit', chargeId: d.charge_id, tokens: [...active, ...own].map((t) => lineOf(address, t)) },
        deposit: d,
        paymentRows: 0,
      });
    }
    // A checkpoint above the head (moved by an answer before a reorg): compare at the checkpoint.
    const height = Math.max(
      0,
      confirmedHeight(cursor.block_number, network.confirmations),
      ...[...lines.values()].map((t) => t.checkpointBlock),
    );
    return { wallet, network, client: this.ctx.chains.get(network), height, native, slots, lines, tokensById };
  }

  /** Adds `delta` to the line when the block is after its checkpoint and at or below the height. */
  private add(scope: Scope, address: string, tokenId: number, block: number, delta: bigint): void {
    const t = scope.lines.get(key(address, tokenId));
    if (t && block > t.checkpointBlock && block <= scope.height) t.recorded += delta;
  }

  /** The wallet's transactions rows: receipts in, its own transfers and fees out, top-ups into deposit addresses. */
  private async countTransactions(scope: Scope): Promise<void> {
    const main = scope.slots[0]!.line.address;
    const from = Math.min(...[...scope.lines.values()].map((t) => t.checkpointBlock));
    for (let after = 0; ;) {
      const page = await repo.listTxMovements(this.ctx.store.db, scope.wallet.id, from, scope.height, after);
      for (const r of page) {
        if (r.type === 'receipt') {
          // Into the address it reached: the main address, or a permanent deposit address (whose
          // receipts are its payments in; its line is there as its charge row's).
          this.add(scope, r.to_address, r.token_id, r.block_number, r.amount);
          continue;
        }
        const moved = r.receipt_status === 1 && r.broadcast_kind !== 'cancel';
        if (moved) this.add(scope, main, r.token_id, r.block_number, -r.amount);
        // A token call's transfer out of the wallet (`transfer`, `transferFrom` from it): that token out.
        // (A payout batch's spend is its items': their rows count what each moved.)
        if (moved && !r.payout_batch && r.call_token_id !== null && r.call_spend > 0n)
          this.add(scope, main, r.call_token_id, r.block_number, -r.call_spend);
        this.add(scope, main, scope.native.id, r.block_number, -r.fee);
        // Native from the main address to a deposit address (a gas top-up): in there. (To the
        // main address itself, a gap filler: its receipt row is the way in.)
        const toDeposit = r.to_address.toLowerCase() !== main.toLowerCase();
        if (moved && toDeposit && r.token_id === scope.native.id) this.add(scope, r.to_address, r.token_id, r.block_number, r.amount);
      }
      if (page.length < repo.SCAN_PAGE) return;
      after = page[page.length - 1]!.id;
    }
  }

  /** The deposit addresses' payments in and sweeps out (a sweep in flight or without its fee: its receipt from the node). */
  private async countCharges(scope: Scope): Promise<void> {
    const deposits = scope.slots.filter((s) => s.deposit !== null);
    const ids = deposits.map((s) => s.deposit!.charge_id);
    const addressOf = new Map(deposits.map((s) => [s.deposit!.charge_id, s.line.address]));
    const from = Math.min(...[...scope.lines.values()].map((t) => t.checkpointBlock));
    const db = this.ctx.store.db;
    const rows = await pay.countPaymentRows(db, ids);
    for (const s of deposits) s.paymentRows = rows.get(s.deposit!.charge_id) ?? 0;
    for (const p of await repo.listPaymentMovements(db, ids, from, scope.height)) {
      this.add(scope, addressOf.get(p.charge_id)!, p.token_id, p.block_number, p.amount);
    }
    const sweeps = await repo.listSweepMovements(db, ids, from, scope.height);
    const mined = await inBatches(sweeps, READ_CONCURRENCY, (s) => this.sweepOutcome(scope, s, addressOf.get(s.charge_id)!));
    for (const m of mined) {
      if (!m) continue;
      const address = addressOf.get(m.sweep.charge_id)!;
      if (m.success) this.add(scope, address, m.sweep.token_id, m.block, -m.amount);
      this.add(scope, address, scope.native.id, m.block, -m.fee);
    }
  }

  /**
   * A sweep's block, success, amount and fee: from its row when final with its fee, else from
   * its receipt (null: not mined at or below the height). A batch's part (a keyless address):
   * from the wallet transaction's receipt, its own outcome in the Sweeper's logs (what left the
   * address); its fee is the main address's, counted there with the wallet's transaction.
   */
  private async sweepOutcome(
    scope: Scope,
    s: SweepMovement,
    deposit: string,
  ): Promise<{ sweep: SweepMovement; block: number; success: boolean; amount: bigint; fee: bigint } | null> {
    if (!s.live && s.block_number !== null && s.fee_paid !== null)
      return { sweep: s, block: s.block_number, success: s.status === 'confirmed', amount: s.amount, fee: s.fee_paid };
    const hash = s.kind === 'batch' ? s.batch_tx_hash : s.tx_hash;
    if (!hash) return null;
    const r = await this.chainRead(() => receiptOrNull(scope.client, hash as Hex));
    if (!r || Number(r.blockNumber) > scope.height) return null;
    if (s.kind === 'sweep')
      return { sweep: s, block: Number(r.blockNumber), success: r.status === 'success', amount: s.amount, fee: receiptFee(r) };
    const token = scope.tokensById.get(s.token_id);
    const contract = token === undefined || token.is_native === 1 ? NATIVE_CONTRACT : token.contract;
    const outcome = sweepOutcomes(r.logs, getAddress(s.sweeper!), getAddress(scope.wallet.address)).get(outcomeKey(deposit, contract));
    return { sweep: s, block: Number(r.blockNumber), success: outcome?.moved === true, amount: outcome?.amount ?? 0n, fee: 0n };
  }

  /**
   * Every line's chain balance at the height; and, where a reorg moved the checkpoint back to the
   * common ancestor, the balance at the checkpoint (its stored one was the old chain's).
   */
  private async readChain(scope: Scope): Promise<void> {
    const at = BigInt(scope.height);
    const jobs = scope.slots.flatMap(({ line }) => line.tokens.map((t) => ({ address: line.address as Address, t })));
    await inBatches(jobs, READ_CONCURRENCY, async ({ address, t }) => {
      t.chain = await this.chainRead(() => readBalance(scope.client, t.token.contract, address, at));
      if (t.checkpointStale)
        t.checkpointBalance = await this.chainRead(() => readBalance(scope.client, t.token.contract, address, BigInt(t.checkpointBlock)));
    });
  }

  private async chainRead<T>(fn: () => Promise<T>): Promise<T> {
    try {
      return await fn();
    } catch (e) {
      throw mapChainError(e);
    }
  }

  /** The answer: `ok`, the unswept funds, the adjustments. */
  private async answer(scope: Scope): Promise<Reconciliation> {
    const unswept = scope.slots.flatMap((s) => unsweptOf(s));
    const ok = unswept.length === 0 && [...scope.lines.values()].every((t) => t.difference === 0n);
    const adjustments = await repo.listAdjustments(this.ctx.store.db, scope.wallet.id, ADJUSTMENTS_LISTED);
    return {
      walletId: scope.wallet.id,
      blockNumber: scope.height,
      ok,
      addresses: scope.slots.map((s) => s.line),
      unswept,
      adjustments,
      tokensById: scope.tokensById,
    };
  }
}

/**
 * A settled charge's address holding funds with no sweep in flight or due (when the records
 * were read): `after_watch` for money sent there after its watch ended, else why the sweeper
 * left them.
 */
function unsweptOf(s: Slot): UnsweptLine[] {
  const d = s.deposit;
  if (!d || d.status === 'pending' || d.live || d.sweep_due_at !== null) return [];
  return s.line.tokens
    .filter((t) => t.chain > 0n)
    .map((t) => ({
      address: s.line.address,
      chargeId: d.charge_id,
      token: t.token,
      amount: t.chain,
      reason: t.afterWatch ? 'after_watch' : whyLeft(d, t.token),
    }));
}

/**
 * Why the sweeper left a balance: on a keyed address the native coin below its own transfer's
 * fee is dust and a token is left when its transfer would revert; a keyless address pays no fee
 * of its own (its batch's fee is the main address's), so anything left there was refused.
 */
function whyLeft(d: DepositRow, token: WalletTokenRow): string {
  if (d.kind === 'keyless') return 'not swept: the Sweeper call left it there (refused, or its batch failed)';
  return token.is_native === 1 ? 'dust: below the fee of sweeping it' : 'not swept: its transfer from the address would revert';
}

async function inBatches<T, R>(items: T[], size: number, fn: (item: T) => Promise<R>): Promise<R[]> {
  const out: R[] = [];
  for (let i = 0; i < items.length; i += size) out.push(...(await Promise.all(items.slice(i, i + size).map(fn))));
  return out;
}
