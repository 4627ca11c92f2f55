/**
 * Transactions: create (validate, quote, reserve, sign, record, broadcast), list and show.
 *
 * The create flow, and why it cannot overspend (docs/transactions.md has the long form):
 *
 * 1. Validate the body (422 with the contract's wording): at the edge, `parseCreateInput` in
 *    transactions.schemas.ts, which gives this service a typed `TransferInput`.
 * 2. (transactions.prepare.ts) Outside any database transaction, ask the node (all at once): the head block B, the
 *    balances and the address's transaction count at B (native, and the token's for an ERC-20),
 *    the address's pending nonce, the fees (a fee market read shared for a second) and the gas
 *    estimate. No network call ever happens inside a database transaction.
 * 3. (transactions.record.ts) In one database transaction holding the wallet's row lock (PostgreSQL `FOR UPDATE`;
 *    SQLite `BEGIN IMMEDIATE`, the single writer): subtract from the balances at B what the
 *    wallet's own transfers not yet in them still take (`createRepo.reservations`: those with a
 *    nonce at or above the count at B, each its amount and its maximum fee gas × gas price); refuse
 *    with 400 if the rest does not cover amount + maximum fee; allocate the nonce; sign
 *    locally; insert the row (status pending, the signed raw transaction kept) and the
 *    `transaction.created` event; commit. Two creates for one wallet, in any number of
 *    processes, run this step one after the other, and the second sees the first's row.
 * 4. After the commit, broadcast (its first send was counted with the row). The node's definitive rejection makes the row failed (its
 *    reservation released, its nonce given back) and the request answers 400; an unreachable
 *    node leaves it pending and the watcher sends it later. A crash between 3 and 4 loses
 *    nothing: the watcher re-sends recorded transactions the node does not know.
 */
import { getAddress, type Hex, type PublicClient } from 'viem';
import type { Logger } from 'pino';
import type { AppContext } from '../../context.js';
import type { Executor, InTransaction } from '../../db/index.js';
import type { WalletTokenRow } from '../../db/types.js';
import { Errors } from '../../errors.js';
import { broadcastRaw } from '../../chain/broadcast.js';
import { mapChainError } from '../../chain/errors.js';
import { estimateGas, feeMarket, l1Fee, maxFee, type Fees } from '../../chain/fees.js';
import { chainPendingNonce } from '../../chain/nonce.js';
import { findNetwork } from '../networks/networks.repository.js';
import { findToken, listTokens } from '../tokens/tokens.repository.js';
import type { WalletView } from '../wallets/wallets.repository.js';
import type { WalletService } from '../wallets/wallets.service.js';
import * as repo from './transactions.repository.js';
import { listPage, listPageJson, type JsonListPage, type ListPage, type ListQuery } from './transactions.list.repository.js';
import type { TxRecord } from './transactions.repository.js';
import * as createRepo from './transactions.create.repository.js';
import * as watchRepo from './transactions.watch.repository.js';
import type { TransferInput } from './transactions.schemas.js';
import { failUnmined } from './transactions.state.js';
import { ReplaceService, type Replacement } from './transactions.replace.js';
import { Approvals } from './transactions.approvals.js';
import { type FeePreview } from './transactions.views.js';
import { isPlain, Recorder, type CreateOptions, type Queued } from './transactions.record.js';
import { Quoter, transferCall } from './transactions.prepare.js';

export type { CreateOptions, TxLink } from './transactions.record.js';

/** The smallest amount (1 wei) a gap filler sends to the wallet's own address. */
const GAP_FILLER_WEI = 1n;

export class TransactionService {
  private readonly marks: BroadcastMarks;
  /** Transfers held for approval: reject and the expiry pass (the routes and the approvals worker call them here). */
  readonly approvals: Approvals;
  private readonly quoter: Quoter;
  private readonly recorder: Recorder;

  constructor(
    private readonly ctx: AppContext,
    private readonly wallets: WalletService,
  ) {
    this.marks = new BroadcastMarks(ctx);
    this.approvals = new Approvals(ctx);
    this.quoter = new Quoter(ctx, wallets);
    this.recorder = new Recorder(ctx, this.approvals);
  }

  /** Speed-up or cancel at the transaction's nonce (transactions.replace.ts); `inTransaction` runs in the transaction recording it. */
  replace(wallet: WalletView, rec: TxRecord, r: Replacement, inTransaction?: InTransaction<TxRecord>): Promise<TxRecord> {
    return new ReplaceService(this.ctx, this.wallets).replace(wallet, rec, r, inTransaction);
  }

  /**
   * A pending transfer whose re-send the node refused for its fees (the watcher's recheck): the
   * same transfer (to, value, data, gas) signed again at its nonce with current fees, at least
   * the replacement minimum over its latest version, recorded and broadcast as a speed-up is
   * (transaction_broadcasts). Its versions share one nonce: whichever mines is the one payment.
   * Null when it is no longer replaceable (mined, settled) or cannot be re-signed now (e.g. the
   * higher fees do not fit in the wallet): the next check tries again.
   */
  async reprice(wallet: WalletView, txId: number): Promise<TxRecord | null> {
    const log = this.ctx.log.child({ component: 'transactions', wallet_id: wallet.id, transaction_id: txId });
    const rec = await repo.findRecord(this.ctx.store.db, txId);
    if (!rec || rec.wallet_id !== wallet.id || rec.status !== 'pending' || rec.block_number !== null) return null;
    try {
      const after = await this.replace(wallet, rec, { kind: 'speed-up' });
      log.info(
        { nonce: rec.nonce, replaced: rec.tx_hash, tx_hash: after.tx_hash },
        'refused transfer signed again at its nonce with current fees',
      );
      return after;
    } catch (e) {
      log.warn({ nonce: rec.nonce, err: e }, 'could not sign the refused transfer again; trying again at its next check');
      return null;
    }
  }

  /**
   * A payout's balance check as a whole (payouts.service.ts): one transfer of the whole
   * `input.amount` is quoted as a create quotes it (gas, fees at its level, the node's balances
   * and the wallet's reservations); the returned check, run under the wallet's lock in the
   * caller's transaction, tells whether the balance less the reservations then covers that
   * amount and `count` times the transfer's maximum fee (`fee`, which the payout reserves for
   * each item it has not sent).
   */
  async quoteBatch(
    wallet: WalletView,
    input: TransferInput,
    count: number,
  ): Promise<{ fits: (trx: Executor) => Promise<boolean>; fee: bigint }> {
    const p = await this.quoter.prepare(wallet, input);
    return {
      fits: async (trx) =>
        p.enough((await createRepo.outgoingState(trx, wallet.id, p.snap.minedNonce)).reservations, p.fee * BigInt(count)),
      fee: p.fee,
    };
  }

  /** The tokens a create body may name: the wallet's active ones. */
  activeTokens(wallet: WalletView): Promise<WalletTokenRow[]> {
    return listTokens(this.ctx.store.db, wallet.id, { activeOnly: true });
  }

  /**
   * Steps 2 to 4 of the create flow (above): quote, then reserve, sign and record, then
   * broadcast. A transfer the policy holds for approval is recorded `awaiting_approval` in step
   * 3 (reserved, nothing signed) and not broadcast.
   */
  async create(wallet: WalletView, input: TransferInput, opts: CreateOptions = {}): Promise<TxRecord> {
    const log = this.ctx.log.child({ component: 'transactions', wallet_id: wallet.id });
    const prepared = await this.quoter.prepare(wallet, input, opts.spends);
    const q: Queued = { p: prepared, opts };
    const {
      rec,
      raw,
      together = 1,
    } = isPlain(opts) ? await this.recorder.recordTogether(wallet, q) : await this.recorder.recordAlone(wallet, q);
    if (raw === undefined) {
      log.info({ transaction_id: rec.id, symbol: input.token.symbol }, 'transaction held for approval');
      return rec;
    }
    log.info(
      { transaction_id: rec.id, tx_hash: rec.tx_hash, nonce: rec.nonce, symbol: input.token.symbol, together },
      'transaction recorded',
    );
    await this.broadcast(prepared.client, rec, raw, log);
    // The row as recorded: a broadcast that returns leaves it as it was (only a final refusal,
    // which throws, changes it; `broadcast_at` is written later and not shown).
    return rec;
  }

  /**
   * Approves a transfer held for approval (login token only, at the route): quoted again now
   * (gas, fees at the level or explicit fees it was created with), then under the wallet's lock
   * the balance is checked again without its own reservation, a nonce taken, and it is signed,
   * recorded pending (`transaction.created`) and broadcast as a create is. 400 `Transaction is
   * not awaiting approval` once it is decided (approved, rejected, expired), also when two
   * approvals race: the second finds it pending. The policy's limits are not applied again (it
   * passed them when created, and it is in the daily sum since).
   */
  async approve(wallet: WalletView, held: TxRecord): Promise<TxRecord> {
    const log = this.ctx.log.child({ component: 'transactions', wallet_id: wallet.id });
    await this.approvals.expireIfDue(held);
    const input = await this.approvals.inputOf(held);
    const prepared = await this.quoter.prepare(wallet, input, held.id);
    const { rec, raw } = await this.recorder.recordAlone(wallet, { p: prepared, opts: { approving: held.id } });
    log.info({ transaction_id: rec.id, tx_hash: rec.tx_hash, nonce: rec.nonce }, 'held transaction approved, signed and recorded');
    await this.broadcast(prepared.client, rec, raw!, log);
    return rec;
  }

  /** Step 4, after the commit: a definitive rejection fails the row and answers 400. */
  private async broadcast(client: PublicClient, rec: TxRecord, raw: Hex, log: Logger): Promise<void> {
    const { db } = this.ctx.store;
    const outcome = await broadcastRaw(client, raw, rec.tx_hash as Hex);
    const sentAt = this.ctx.clock.nowMs();
    switch (outcome.kind) {
      case 'sent':
      case 'known':
        this.marks.mark(rec.id);
        break;
      case 'rejected': {
        // Only a refusal of the very first send (never accepted anywhere) is final: this one
        // was counted at insert, so it is the first unless the watcher has sent it meanwhile.
        // A pool that holds another transaction at its nonce makes no refusal final: that one
        // may never mine (this one is sent again) or mine (this one is then dropped), and
        // giving the nonce back would let later transfers pass it and wait behind it for ever.
        if (outcome.nonceHeld) {
          log.warn(
            { transaction_id: rec.id, tx_hash: rec.tx_hash, nonce: rec.nonce, reason: outcome.reason },
            'broadcast refused: a pool holds another transaction at its nonce; it stays pending (sent again, or dropped once its nonce is used)',
          );
          break;
        }
        const first = (await repo.findRecord(db, rec.id))?.broadcast_attempts === 1;
        if (!first) {
          log.warn(
            { transaction_id: rec.id, tx_hash: rec.tx_hash, reason: outcome.reason },
            'broadcast refused after an earlier send; the transaction stays pending until its nonce is used',
          );
          break;
        }
        await db
          .transaction()
          .execute((trx) =>
            failUnmined(trx, rec.id, { reason: outcome.reason, failure: 'rejected', nonceUsed: outcome.nonceUsed, nowMs: sentAt }),
          );
        log.warn({ transaction_id: rec.id, tx_hash: rec.tx_hash, reason: outcome.reason }, 'broadcast rejected; transaction failed');
        throw Errors.chainRejected(`The blockchain node rejected the transaction: ${outcome.reason}`);
      }
      default:
        log.warn(
          { transaction_id: rec.id, tx_hash: rec.tx_hash, outcome: outcome.kind, reason: outcome.reason },
          'broadcast not confirmed; the watcher will send it again',
        );
    }
  }

  /**
   * Unsticks transfers waiting behind a freed nonce. When the node rejected a transfer for good
   * (its nonce given back) while later transfers were already signed, those wait in the node's
   * queue until something uses the freed nonce. If the node's next nonce P is held by no pending
   * transfer of ours while one of ours above P is pending, this sends 1 wei to the wallet's own
   * address with exactly nonce P, through the normal create flow (reserved, recorded, reported
   * as a `transfer`), even when the wallet's next nonce is past P (`takeNonce` in
   * transactions.record.ts). Returns the filler, or null when there is no gap.
   */
  async fillNonceGap(wallet: WalletView): Promise<TxRecord | null> {
    const { db } = this.ctx.store;
    const held = await createRepo.heldNonces(db, wallet.id, 0);
    if (held.size === 0) return null;
    const network = await findNetwork(db, wallet.network_id);
    if (!network) return null;
    const next = await chainPendingNonce(this.ctx.chains.get(network), getAddress(wallet.address));
    if (held.has(next) || ![...held].some((n) => n > next)) return null;
    const native = (await listTokens(db, wallet.id)).find((t) => t.is_native === 1 && t.is_active === 1);
    if (!native) return null;
    this.ctx.log.warn(
      { wallet_id: wallet.id, nonce: next, waiting: [...held].filter((n) => n > next).sort((a, b) => a - b) },
      'nonce gap: sending a 1 wei self-transfer to fill it',
    );
    return this.create(
      wallet,
      { amount: GAP_FILLER_WEI, token: native, to: getAddress(wallet.address) },
      { requireNonce: next, exemptFromPolicy: true },
    );
  }

  /** The fee preview: the call's gas and the most it would cost at each level; nothing is sent. */
  async previewFees(wallet: WalletView, input: TransferInput): Promise<FeePreview> {
    const { db } = this.ctx.store;
    const network = await findNetwork(db, wallet.network_id);
    if (!network) throw Errors.internal(new Error(`network ${wallet.network_id} missing`));
    const client = this.ctx.chains.get(network);
    const from = getAddress(wallet.address);
    const call = transferCall(input);
    let gas: bigint;
    try {
      gas = await estimateGas(client, { from, ...call });
    } catch (e) {
      const nativeTokenIds = new Set((await listTokens(db, wallet.id)).filter((t) => t.is_native === 1).map((t) => t.id));
      throw await this.quoter.estimationFailure(e, client, from, wallet.id, input, nativeTokenIds);
    }
    try {
      const [market, nonce] = await Promise.all([feeMarket(client), chainPendingNonce(client, from)]);
      const l1 = await l1Fee(client, { chainId: network.chain_id, nonce, gas, ...call }, market.levels.medium);
      const level = (fees: Fees) => ({ fees, maxFee: maxFee(gas, fees, l1) });
      return {
        baseFee: market.baseFee,
        gas,
        l1Fee: l1,
        levels: { low: level(market.levels.low), medium: level(market.levels.medium), high: level(market.levels.high) },
      };
    } catch (e) {
      throw mapChainError(e);
    }
  }

  /** A page of the wallet's list, newest first (transactions.list.repository.ts). */
  list(wallet: WalletView, q: ListQuery): Promise<ListPage> {
    return listPage(this.ctx.store.db, wallet.id, q);
  }

  /** The same page with each item as its JSON, where the database writes it (null: use `list`). */
  listJson(wallet: WalletView, q: ListQuery): Promise<JsonListPage | null> {
    return listPageJson(this.ctx.store.db, wallet.id, q);
  }

  find(wallet: WalletView, id: number): Promise<TxRecord | undefined> {
    return repo.findRecordForWallet(this.ctx.store.db, wallet.id, id);
  }

  async tokenOf(rec: TxRecord): Promise<WalletTokenRow> {
    return (await findToken(this.ctx.store.db, rec.wallet_id, rec.token_id))!;
  }
}

/** How long a `broadcast_at` mark may wait to be written with others. */
const MARK_BATCH_MS = 25;

/**
 * Writes `broadcast_at` after a create's send, in batches: the marks of MARK_BATCH_MS go out in
 * one statement (one commit, where each used to cost its own fsync on the request path). The
 * create does not wait for it: `broadcast_at` is informational (neither the API nor the re-send
 * queue reads it; the queue keys on `created_at` and `next_check_at`), so a mark lost to a
 * crash changes nothing but that column. A failed write is logged and dropped.
 */
class BroadcastMarks {
  private queue: number[] = [];
  private timer: NodeJS.Timeout | null = null;

  constructor(private readonly ctx: AppContext) {}

  mark(id: number): void {
    this.queue.push(id);
    if (this.timer === null) {
      this.timer = setTimeout(() => void this.flush(), MARK_BATCH_MS);
      this.timer.unref();
    }
  }

  private async flush(): Promise<void> {
    this.timer = null;
    const ids = this.queue.splice(0, this.queue.length);
    try {
      for (let i = 0; i < ids.length; i += 500)
        await watchRepo.markBroadcastMany(this.ctx.store.db, ids.slice(i, i + 500), this.ctx.clock.nowMs());
    } catch (err) {
      this.ctx.log.debug({ component: 'transactions', err, count: ids.length }, 'broadcast_at not recorded');
    }
  }
}
