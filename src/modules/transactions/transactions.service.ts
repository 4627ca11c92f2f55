/**
 * Transactions: create (validate, quote, reserve, sign, record, broadcast), list and show.
 *
 * The create flow, and why it cannot overspend (docs/transactions.md has the long form):
 *
 * 1. Validate the body (422 with the contract's wording): at the edge, `parseCreateInput` in
 *    transactions.schemas.ts, which gives this service a typed `TransferInput`.
 * 2. Outside any database transaction, ask the node (all at once): the head block B, the
 *    balances and the address's transaction count at B (native, and the token's for an ERC-20),
 *    the address's pending nonce, the fees (a fee market read shared for a second) and the gas
 *    estimate. No network call ever happens inside a database transaction.
 * 3. In one database transaction holding the wallet's row lock (PostgreSQL `FOR UPDATE`;
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
import {
  BaseError,
  decodeErrorResult,
  ExecutionRevertedError,
  getAddress,
  keccak256,
  RpcRequestError,
  type Address,
  type Hex,
  type PublicClient,
} from 'viem';
import type { Logger } from 'pino';
import type { AppContext } from '../../context.js';
import type { Executor, InTransaction } from '../../db/index.js';
import type { WalletTokenRow } from '../../db/types.js';
import { AppError, Errors, fieldError } from '../../errors.js';
import { broadcastRaw, nodeMessage } from '../../chain/broadcast.js';
import { ERC20_ABI, erc20TransferData } from '../../chain/erc20.js';
import { isTransient, mapChainError } from '../../chain/errors.js';
import { atHead } from '../../chain/blocks.js';
import {
  estimateGas,
  explicitFees,
  feeFields,
  feeMarket,
  l1Fee,
  maxFee,
  recentFeeMarket,
  recentQuote,
  type Fees,
} from '../../chain/fees.js';
import { requireWithinCap } from './transactions.fees.js';
import { allocateNonce, chainPendingNonce } from '../../chain/nonce.js';
import type { TransactionSigner } from '../../chain/keys.js';
import { recordEvent } from '../events/outbox.js';
import { findNetwork } from '../networks/networks.repository.js';
import { enforceCallPolicy, enforcePolicy, isUnpoliced } from '../policies/policies.check.js';
import { decodeTokenCall, type TokenCall } from '../policies/token-calls.js';
import { refuseBlocked } from '../screening/screening.js';
import { Batcher } from '../../lib/batcher.js';
import { pipelinedTransaction, type EndWith } from '../../db/pipelined.js';
import { findToken, listTokens } from '../tokens/tokens.repository.js';
import type { WalletView } from '../wallets/wallets.repository.js';
import type { WalletService } from '../wallets/wallets.service.js';
import * as repo from './transactions.repository.js';
import { listPage, listPageJson, type JsonListPage, type ListPage, type ListQuery } from './transactions.list.repository.js';
import type { TxRecord } from './transactions.repository.js';
import * as createRepo from './transactions.create.repository.js';
import * as watchRepo from './transactions.watch.repository.js';
import type { FeeChoice, TransferInput } from './transactions.schemas.js';
import { failUnmined } from './transactions.state.js';
import { ReplaceService, type Replacement } from './transactions.replace.js';
import { Approvals } from './transactions.approvals.js';
import type { SignedApproval } from './transactions.approvals.repository.js';
import { transactionEventPayload, type FeePreview, type TxEventFields } from './transactions.views.js';

export interface CreateOptions {
  /** Runs inside the database transaction that records the new transaction (e.g. to store the idempotent response atomically). */
  inTransaction?: (trx: Executor, rec: TxRecord) => Promise<void>;
  /** Sign only with exactly this nonce; any other allocation rolls back with nothing recorded. */
  requireNonce?: number;
  /** The service's own movement (a charge's gas top-up, a gap filler): the wallet's spending policy does not apply. */
  exemptFromPolicy?: true;
  /**
   * Runs first under the wallet's lock, in the recording transaction, before the policy, the
   * balance or the nonce: what ties the new row to its cause (a refund's bound checked and its
   * row written here, so two refunds of one charge are decided one after the other). Throwing
   * refuses the transfer with nothing recorded or signed.
   */
  link?: (trx: Executor) => Promise<TxLink>;
  /** A payout's item: the policy's limits and allowlist apply, its approval was decided for the payout as a whole. */
  approvalDecided?: true;
  /**
   * The id of the reservation this transfer takes over (a payout item's, which reserves until it
   * is sent: payouts.repository.ts `unsentItemReservations`): left out of its balance checks,
   * where its own amount and fee count instead.
   */
  spends?: number;
}

/** What a transfer pays, stored on its row. */
export interface TxLink {
  refund_id?: number;
  payout_id?: number;
  reference?: string | null;
}

/** The smallest amount (1 wei) a gap filler sends to the wallet's own address. */
const GAP_FILLER_WEI = 1n;

/** The node's view at the head block B, read before any database transaction. */
/** Snapshot reads under way, by node client, then address and token contract (TransactionService.snapshot). */
const SNAPSHOTS_IN_FLIGHT = new WeakMap<PublicClient, Map<string, Promise<Snapshot>>>();

interface Snapshot {
  /** The address's transaction count at B: its transfers below it are in the balances. */
  minedNonce: number;
  native: bigint;
  token: bigint;
  pendingNonce: number;
}

/** What the wallet can still spend: balances at the snapshot's block minus its transfers not yet in them. */
function available(rows: createRepo.Reservation[], nativeTokenIds: Set<number>, tokenId: number, snap: Snapshot) {
  let native = snap.native;
  let token = snap.token;
  for (const r of rows) {
    native -= r.fee_reserved;
    if (nativeTokenIds.has(r.token_id)) native -= r.amount;
    else if (r.token_id === tokenId) token -= r.amount;
  }
  return { native, token };
}

/** A transfer ready to record: the node's view, the call, its gas and fee, and the signer. */
interface Prepared {
  input: TransferInput;
  chainId: number;
  client: PublicClient;
  from: Address;
  call: { to: Address; value: bigint; data: Hex | undefined };
  /** A contract call to one of the wallet's token contracts: what it does with that token (policed and reserved as it). */
  tokenCall: TokenCall | null;
  snap: Snapshot;
  gas: bigint;
  fees: Fees;
  /** The OP-stack L1 data fee reserved (0 elsewhere). */
  l1Fee: bigint;
  /** The most it can cost in fees: gas × max fee per gas + the L1 fee. */
  fee: bigint;
  /** Can the wallet pay the amount and `fee` with these reservations held against the snapshot? */
  enough: (rows: createRepo.Reservation[], fee: bigint) => boolean;
  signer: TransactionSigner;
}

/** The call a transaction makes: a contract call, a value transfer, or the token contract's `transfer`. */
function transferCall(input: TransferInput): Prepared['call'] {
  if (input.data !== undefined) return { to: input.to, value: input.amount, data: input.data };
  return input.token.is_native === 1
    ? { to: input.to, value: input.amount, data: undefined }
    : { to: getAddress(input.token.contract), value: 0n, data: erc20TransferData(input.to, input.amount) };
}

export class TransactionService {
  private readonly marks: BroadcastMarks;
  /** Transfers held for approval: reject and the expiry pass (the routes and the approvals worker call them here). */
  readonly approvals: Approvals;
  /** Per wallet with creates under way in this process: the batch being recorded and those waiting for it (`recordTogether`). */
  private readonly hot = new Map<number, { batcher: Batcher<Queued, Outcome>; creates: number }>();

  constructor(
    private readonly ctx: AppContext,
    private readonly wallets: WalletService,
  ) {
    this.marks = new BroadcastMarks(ctx);
    this.approvals = new Approvals(ctx);
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
    const p = await this.prepare(wallet, input);
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
    const prepared = await this.prepare(wallet, input, opts.spends);
    const q: Queued = { p: prepared, opts };
    const { rec, raw, together = 1 } = isPlain(opts) ? await this.recordTogether(wallet, q) : await this.recordAlone(wallet, q);
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
    const prepared = await this.prepare(wallet, input, held.id);
    const { rec, raw } = await this.recordAlone(wallet, { p: prepared, opts: { approving: held.id } });
    log.info({ transaction_id: rec.id, tx_hash: rec.tx_hash, nonce: rec.nonce }, 'held transaction approved, signed and recorded');
    await this.broadcast(prepared.client, rec, raw!, log);
    return rec;
  }

  /**
   * Step 2: the node, before any database transaction (with an early balance check, without the
   * lock). Every read that does not need another's answer runs at once: the snapshot (and the
   * early reservations read after it), the gas estimate, the fees (shared for a second,
   * `recentFeeMarket`), the wallet's tokens and its key. Errors are reported in the order the
   * reads used to run one after the other: contract check, node, balance, estimate, fees.
   */
  private async prepare(wallet: WalletView, input: TransferInput, approving?: number): Promise<Prepared> {
    const { db } = this.ctx.store;
    const { token, amount } = input;
    const isNative = token.is_native === 1;
    // The wallet's tokens and key do not need the network: read them meanwhile.
    const ownReads = [listTokens(db, wallet.id), this.wallets.signer(wallet.id)] as const;
    for (const r of ownReads) r.catch(() => undefined); // reported below, or moot if the network is missing
    const network = await findNetwork(db, wallet.network_id);
    if (!network) throw Errors.internal(new Error(`network ${wallet.network_id} missing`));
    const client = this.ctx.chains.get(network);
    const from = getAddress(wallet.address);
    const call = transferCall(input);
    // A contract call to a token contract of the wallet: its token's balance is read and checked too.
    const tokenCall = input.data === undefined ? null : decodeTokenCall(await ownReads[0], from, input.to, input.data);
    // A token call pays its recipient or spender: screened as a transfer's address is (the route screens the contract).
    if (tokenCall !== null) refuseBlocked(this.ctx.screening, [tokenCall.to]);
    const snapRead = this.snapshot(client, from, isNative ? (tokenCall?.contract ?? null) : getAddress(token.contract));
    const [code, snapshot, early, estimate, quote, tokens, key] = await Promise.allSettled([
      input.data !== undefined ? requireContract(client, input.to) : Promise.resolve(),
      snapRead,
      snapRead.then((s) => createRepo.reservations(db, wallet.id, s.minedNonce, approving)),
      estimateGas(client, { from, ...call }),
      quoteFor(client, input.fees),
      ...ownReads,
    ]);
    const nativeTokenIds = new Set(
      valueOf(tokens)
        .filter((t) => t.is_native === 1)
        .map((t) => t.id),
    );
    valueOf(code);
    const snap = valueOf(snapshot);
    const enough = (rows: createRepo.Reservation[], fee: bigint) => {
      const a = available(rows, nativeTokenIds, tokenCall?.tokenId ?? token.id, snap);
      return isNative ? a.native >= amount + fee && a.token >= (tokenCall?.spend ?? 0n) : a.token >= amount && a.native >= fee;
    };
    // Early answer without the lock (the decisive check is repeated under it).
    if (!enough(valueOf(early), 0n)) throw Errors.insufficientBalance();
    if (estimate.status === 'rejected')
      throw await this.estimationFailure(estimate.reason, client, from, wallet.id, input, nativeTokenIds, approving);
    const gas = estimate.value;
    const fees = valueOf(quote);
    const l1 = await l1FeeFor(client, { chainId: network.chain_id, nonce: snap.pendingNonce, gas, ...call }, fees);
    const fee = maxFee(gas, fees, l1);
    return {
      input,
      chainId: network.chain_id,
      client,
      from,
      call,
      tokenCall,
      snap,
      gas,
      fees,
      l1Fee: l1,
      fee,
      enough,
      signer: valueOf(key),
    };
  }

  /** Step 3 for one create alone: a batch of one (`recordBatch`). */
  private async recordAlone(wallet: WalletView, q: Queued): Promise<Recorded> {
    const [outcome] = await this.recordBatch(wallet, [q]);
    if (!outcome!.ok) throw outcome!.error;
    return outcome!.value;
  }

  /**
   * Step 3 for a hot wallet: while a transaction recording the wallet's creates is under way in
   * this process, the creates that become ready wait for it here rather than each at the
   * database's lock, and are then recorded together (`recordBatch`: one grant of the lock, one
   * commit). A lone create waits for nobody: a batch of one. The wallet's other writers (the
   * watcher, another process) still take its lock in the database, so the batch is one holder
   * among them.
   */
  private async recordTogether(wallet: WalletView, q: Queued): Promise<Recorded> {
    let hot = this.hot.get(wallet.id);
    if (!hot) {
      hot = { batcher: new Batcher((items) => this.recordBatch(wallet, items), 1, MAX_TOGETHER), creates: 0 };
      this.hot.set(wallet.id, hot);
    }
    hot.creates += 1;
    try {
      const outcome = await hot.batcher.submit(q);
      if (!outcome.ok) throw outcome.error;
      return outcome.value;
    } finally {
      // Every batch of this batcher has ended once none of its creates is waiting.
      if (--hot.creates === 0) this.hot.delete(wallet.id);
    }
  }

  /**
   * Step 3, the one way a create is recorded: `items` (creates of one wallet; several only when
   * each is plain, `isPlain`) in one transaction (`recordBatchOnce`). A create whose stored
   * response could not be written (its Idempotency-Key taken over: `Refused`) fails alone: the
   * transaction rolled back before its commit, so nothing of the batch was written, and the rest
   * is recorded again without it. Any other failure fails them all, as it would fail each alone.
   * A create of a token the wallet's policy limits, in a batch of several, is recorded afterwards
   * in a batch of one (the policy's reads and writes are per transfer).
   */
  private async recordBatch(wallet: WalletView, items: Queued[]): Promise<Outcome[]> {
    const out = new Array<Outcome>(items.length);
    let todo = items.map((_, i) => i);
    const alone: number[] = [];
    while (todo.length > 0) {
      try {
        const results = await this.recordBatchOnce(
          wallet,
          todo.map((i) => items[i]!),
        );
        results.forEach((o, k) => (o === 'alone' ? alone.push(todo[k]!) : (out[todo[k]!] = o)));
        todo = [];
      } catch (error) {
        if (!(error instanceof Refused)) {
          for (const i of todo) out[i] = { ok: false, error };
          return out;
        }
        out[todo[error.index]!] = { ok: false, error: error.reason };
        if (todo.length > 1)
          this.ctx.log.warn(
            { component: 'transactions', wallet_id: wallet.id, err: error.reason, batch: todo.length },
            'a create of the batch could not store its response; the others are recorded without it',
          );
        todo = todo.filter((_, k) => k !== error.index);
      }
    }
    for (const i of alone.sort((a, b) => a - b)) out[i] = (await this.recordBatch(wallet, [items[i]!]))[0]!;
    return out;
  }

  /**
   * One transaction for a batch of creates of one wallet, under its lock: reserve, take the
   * nonces, sign and record. Sent with the lock statement (src/db/pipelined.ts, run as soon as it
   * is granted): the ids (PostgreSQL: `drawTransactionId`), the policy's reads (for a batch of
   * several, whether it sets anything for their tokens; for one, its decision) and the outgoing
   * rows; a create's `link` is written first, and the reads follow it. Then, in memory, each
   * create in its order is checked and given its nonce against the rows and the creates before it
   * (`allot`); then the rows, their `transaction.created` events and the commit (`writeBatch`).
   * In a batch of several a create refused (balance, the pending cap) is answered with its error
   * and takes nothing; one of a policed token is left `'alone'`. A create alone that is refused
   * rolls back (its link's writes too); one the policy holds is recorded awaiting approval
   * (reserved; no nonce, nothing signed); one `approving` a held row signs that row. The first
   * send is counted with the row (`broadcast_attempts` 1): from its commit on the row counts as
   * possibly sent, so a crash before the send can only make a later refusal non-final.
   */
  private async recordBatchOnce(wallet: WalletView, items: Queued[]): Promise<Array<Outcome | 'alone'>> {
    const now = this.ctx.clock.nowMs();
    const one = items.length === 1 ? items[0]! : null;
    const opts: RecordOptions = one?.opts ?? {};
    const minedFrom = Math.min(...items.map((q) => q.p.snap.minedNonce));
    const tokenIds = [...new Set(items.map((q) => q.p.input.token.id))];
    return pipelinedTransaction(this.ctx.store.db, async (trx, end) => {
      const locking = createRepo.lockWalletForCreate(trx, wallet.id);
      const drawing =
        opts.link === undefined && opts.approving === undefined ? createRepo.drawTransactionIds(trx, items.length) : undefined;
      drawing?.catch(() => undefined);
      const reads = () =>
        Promise.all([
          one ? this.policyDecision(trx, wallet, one.p, one.opts, now) : Promise.all(tokenIds.map((id) => isUnpoliced(trx, wallet.id, id))),
          createRepo.outgoingRowsFrom(trx, wallet.id, minedFrom),
        ]);
      const early = opts.link === undefined ? reads() : undefined;
      early?.catch(() => undefined);
      const locked = await locking;
      if (!locked) throw Errors.internal(new Error(`wallet ${wallet.id} missing`));
      const link = (await opts.link?.(trx)) ?? {};
      const [policy, rows] = await (early ?? reads());
      if (one && policy === true) return [await this.holdOne(trx, wallet, one, rows, link, now)];
      const unpoliced = new Set(Array.isArray(policy) ? tokenIds.filter((_, i) => policy[i]) : tokenIds);
      const ids = await drawing;
      const { results, signed } = await this.allot(wallet, items, { nextNonce: locked.nextNonce, rows, unpoliced, ids, link });
      if (one && results[0] !== undefined && results[0] !== 'alone' && !results[0].ok) throw results[0].error;
      if (signed.length === 0) return results;
      if (opts.approving !== undefined) return [await this.signHeld(trx, end, wallet, one!, signed[0]!, now)];
      const recs = await writeBatch(trx, end, wallet, items, signed, now);
      signed.forEach((s, i) => (results[s.k] = { ok: true, value: { rec: recs[i]!, raw: s.raw, together: signed.length } }));
      return results;
    });
  }

  /** A create alone that the policy holds: recorded awaiting approval when the balance covers it (reserved, nothing signed). */
  private async holdOne(
    trx: Executor,
    wallet: WalletView,
    { p, opts }: Queued,
    rows: createRepo.OutgoingRows,
    link: TxLink,
    now: number,
  ): Promise<Outcome> {
    const state = createRepo.outgoingStateOf(rows, p.snap.minedNonce, opts.approving ?? opts.spends);
    if (!p.enough(state.reservations, p.fee)) throw Errors.insufficientBalance();
    const rec = await this.approvals.hold(trx, wallet, p.input, { ...heldFields(wallet, p), ...link }, now, opts.inTransaction);
    return { ok: true, value: { rec } };
  }

  /** An approval: the held row signed at its nonce, its `transaction.created` event sent with the commit. */
  private async signHeld(trx: Executor, end: EndWith, wallet: WalletView, { p, opts }: Queued, s: Signed, now: number): Promise<Outcome> {
    const rec = await this.approvals.signed(trx, wallet, opts.approving!, signedFields(p, s.nonce, s.raw), now);
    await end((t) => createdEvent(t, wallet, rec, now));
    return { ok: true, value: { rec, raw: s.raw } };
  }

  /**
   * `recordBatchOnce`'s decisions, under the lock: each create refused, left alone (a policed
   * token or a contract call in a batch of several), or given its nonce and signed. A create
   * alone brings its own terms: the reservation it takes over left out (`approving`, `spends`),
   * the nonce it requires (exempt from the pending cap: the gap filler unsticks the others).
   */
  private async allot(
    wallet: WalletView,
    items: Queued[],
    at: {
      nextNonce: number | null;
      rows: createRepo.OutgoingRows;
      unpoliced: Set<number>;
      ids: number[] | undefined;
      link: TxLink;
    },
  ): Promise<{ results: Array<Outcome | 'alone'>; signed: Signed[] }> {
    const results = new Array<Outcome | 'alone'>(items.length);
    const signed: Signed[] = [];
    // What the creates before this one in the batch take: as their rows will once inserted.
    const taken: createRepo.Reservation[] = [];
    const nonces: number[] = [];
    let next = at.nextNonce;
    for (let k = 0; k < items.length; k++) {
      const { p, opts } = items[k]!;
      // A contract call is policed by what it does (`policyDecision`), and reserves what a token call spends: alone.
      if (items.length > 1 && (!at.unpoliced.has(p.input.token.id) || p.input.data !== undefined)) {
        results[k] = 'alone';
        continue;
      }
      const state = createRepo.outgoingStateOf(at.rows, p.snap.minedNonce, opts.approving ?? opts.spends);
      if (!p.enough([...state.reservations, ...taken], p.fee)) {
        results[k] = { ok: false, error: Errors.insufficientBalance() };
        continue;
      }
      if (opts.requireNonce === undefined && state.pendingCount + signed.length >= this.ctx.config.maxPendingPerWallet) {
        results[k] = { ok: false, error: Errors.tooManyPending() };
        continue;
      }
      // Never below the snapshot's mined count, nor on a nonce a row of ours holds or used
      // (`usedNonces`: on PostgreSQL `nextNonce` may predate the commit this create waited for).
      const floor = Math.max(p.snap.pendingNonce, p.snap.minedNonce);
      const nonce = takeNonce(next, floor, new Set([...state.usedNonces, ...nonces]), opts.requireNonce);
      const raw = await signAt(p, nonce);
      signed.push({ k, nonce, raw, row: sentRow(wallet, p, nonce, raw, at.link, at.ids?.[signed.length]) });
      taken.push({ token_id: p.input.token.id, amount: p.input.amount, fee_reserved: p.fee });
      nonces.push(nonce);
      next = nonce + 1;
    }
    return { results, signed };
  }

  /**
   * Under the wallet's lock: true when the policy holds the transfer for approval; throws its
   * 400 when it refuses it. An approval checks that the row still awaits one (the policy was
   * applied at its create); the service's own movements are not policed.
   */
  private async policyDecision(
    trx: Executor,
    wallet: WalletView,
    p: Prepared,
    opts: CreateOptions & { approving?: number },
    nowMs: number,
  ): Promise<boolean> {
    if (opts.approving !== undefined) {
      await this.approvals.requireAwaiting(trx, opts.approving);
      return false;
    }
    if (opts.exemptFromPolicy) return false;
    const decision =
      p.input.data === undefined
        ? await enforcePolicy(trx, { walletId: wallet.id, tokenId: p.input.token.id, amount: p.input.amount, to: p.input.to }, nowMs)
        : await enforceCallPolicy(
            trx,
            { walletId: wallet.id, nativeTokenId: p.input.token.id, value: p.input.amount, contract: p.input.to, tokenCall: p.tokenCall },
            nowMs,
          );
    return decision === 'hold' && !opts.approvalDecided;
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
   * The wallet's chain state at the node's head. Creates of one wallet that arrive while a read of
   * it is under way share that read instead of making their own: it began less than one read's
   * time before they arrived, and it is as good for them as a read of their own: the
   * reservations are read against its mined nonce (any transfer of ours it does not show mined is
   * reserved), and the balance check is repeated under the wallet's lock against them. A hot
   * wallet so makes fewer node calls a create (four or five each before).
   */
  private snapshot(client: PublicClient, from: Address, contract: Address | null): Promise<Snapshot> {
    let reads = SNAPSHOTS_IN_FLIGHT.get(client);
    if (!reads) SNAPSHOTS_IN_FLIGHT.set(client, (reads = new Map<string, Promise<Snapshot>>()));
    const key = `${from}:${contract ?? ''}`;
    let read = reads.get(key);
    if (!read) {
      read = this.readSnapshot(client, from, contract).finally(() => reads.delete(key));
      reads.set(key, read);
    }
    return read;
  }

  /** The snapshot at one head (read again at a new one when no endpoint has it any longer: `atHead`). */
  private async readSnapshot(client: PublicClient, from: Address, contract: Address | null): Promise<Snapshot> {
    try {
      return await atHead(client, (head) => this.readAt(client, from, contract, head));
    } catch (e) {
      throw mapChainError(e);
    }
  }

  private async readAt(client: PublicClient, from: Address, contract: Address | null, head: bigint): Promise<Snapshot> {
    const [minedNonce, native, token, pendingNonce] = await Promise.all([
      client.getTransactionCount({ address: from, blockNumber: head }),
      client.getBalance({ address: from, blockNumber: head }),
      contract === null
        ? Promise.resolve(0n)
        : client.readContract({ address: contract, abi: ERC20_ABI, functionName: 'balanceOf', args: [from], blockNumber: head }),
      chainPendingNonce(client, from),
    ]);
    return { minedNonce, native, token, pendingNonce };
  }

  /**
   * eth_estimateGas failed. A transient fault (unreachable, rate-limited: `isTransient`): 503. Otherwise the call would fail on chain; when the
   * wallet (now, with its reservations but the one this transfer takes over: `excludeId`)
   * cannot cover the amount, that is the reason (400 Insufficient balance), else the node's
   * reason (400).
   */
  private async estimationFailure(
    err: unknown,
    client: PublicClient,
    from: Address,
    walletId: number,
    input: TransferInput,
    nativeTokenIds: Set<number>,
    excludeId?: number,
  ): Promise<AppError> {
    if (isTransient(err)) return Errors.chainUnavailable(err);
    if (input.data !== undefined && err instanceof BaseError && err.walk((e) => e instanceof ExecutionRevertedError)) {
      return Errors.wouldRevert(revertReason(err), err);
    }
    const isNative = input.token.is_native === 1;
    try {
      const snap = await this.snapshot(client, from, isNative ? null : getAddress(input.token.contract));
      const a = available(
        await createRepo.reservations(this.ctx.store.db, walletId, snap.minedNonce, excludeId),
        nativeTokenIds,
        input.token.id,
        snap,
      );
      if ((isNative ? a.native : a.token) < input.amount) return Errors.insufficientBalance();
    } catch {
      // fall through to the node's reason
    }
    return Errors.chainRejected(`The transaction would fail: ${nodeMessage(err)}`, err);
  }

  /**
   * Unsticks transfers waiting behind a freed nonce. When the node rejected a transfer for good
   * (its nonce given back) while later transfers were already signed, those wait in the node's
   * queue until something uses the freed nonce. If the node's next nonce P is held by no pending
   * transfer of ours while one of ours above P is pending, this sends 1 wei to the wallet's own
   * address with exactly nonce P, through the normal create flow (reserved, recorded, reported
   * as a `transfer`). Returns the filler, or null when there is no gap.
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
      throw await this.estimationFailure(e, client, from, wallet.id, input, nativeTokenIds);
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

/** The nonce for a new transfer (caller holds the wallet lock); 409 when `required` is not the one allocated. */
function takeNonce(next: number | null, pendingNonce: number, held: ReadonlySet<number>, required: number | undefined): number {
  const nonce = allocateNonce(next, pendingNonce, held);
  if (required !== undefined && nonce !== required) {
    throw Errors.nonceMoved(required, nonce);
  }
  return nonce;
}

/** The most creates of one wallet recorded in one transaction (the default pending cap: more would be refused). */
const MAX_TOGETHER = 64;

/** A create's terms when recorded: its options, or the held row an approval signs. */
type RecordOptions = CreateOptions & { approving?: number };

/** A create to record: its quote and its terms (among them the response to store with it, Idempotency-Key). */
interface Queued {
  p: Prepared;
  opts: RecordOptions;
}

/** A recorded create: its row, its signed bytes (none when held for approval), and how many were recorded in its transaction. */
interface Recorded {
  rec: TxRecord;
  raw?: Hex;
  together?: number;
}

type Outcome = { ok: true; value: Recorded } | { ok: false; error: unknown };

/** A create of a batch signed under the lock: its place in the batch, nonce, bytes and row. */
interface Signed {
  k: number;
  nonce: number;
  raw: Hex;
  row: repo.NewTx;
}

/** The create at `index` of a batch could not store its response: the batch's transaction is rolled back, and recorded again without it. */
class Refused extends Error {
  constructor(
    readonly index: number,
    readonly reason: unknown,
  ) {
    super('a create of the batch could not store its response');
  }
}

/** The creates `recordTogether` may batch: no link to write first, no nonce of their own, policed as any transfer. */
function isPlain(opts: CreateOptions): boolean {
  return (
    opts.link === undefined &&
    opts.requireNonce === undefined &&
    opts.exemptFromPolicy === undefined &&
    opts.approvalDecided === undefined &&
    opts.spends === undefined
  );
}

/** The prepared transfer signed at `nonce`. */
function signAt(p: Prepared, nonce: number): Promise<Hex> {
  return p.signer.signTransaction({
    chainId: p.chainId,
    nonce,
    gas: p.gas,
    ...feeFields(p.fees),
    to: p.call.to,
    value: p.call.value,
    data: p.call.data,
  });
}

/** The `transaction.created` event of a new row, in the outbox of `t` (the row's own transaction). */
function createdEvent(t: Executor, wallet: WalletView, fields: TxEventFields, now: number) {
  return recordEvent(t, {
    userId: wallet.user_id,
    walletId: wallet.id,
    name: 'transaction.created',
    payload: transactionEventPayload(fields, 'transaction.created', now),
    nowMs: now,
  });
}

/**
 * The signed creates' rows and `transaction.created` events, in the batch's order. On PostgreSQL
 * (ids drawn) every insert and event leaves with the commit in one round trip, unless a create
 * stores its response (Idempotency-Key): then the responses are written once the rows are
 * answered, and the commit follows; a response that cannot be written throws `Refused` before
 * the commit. Otherwise (SQLite; a create with a link) one after the other, the last event sent
 * with the commit when no response is to be stored.
 */
async function writeBatch(
  trx: Executor,
  end: EndWith,
  wallet: WalletView,
  items: Queued[],
  signed: Signed[],
  now: number,
): Promise<TxRecord[]> {
  const event = (t: Executor, fields: TxEventFields) => createdEvent(t, wallet, fields, now);
  const both = (t: Executor, s: Signed) => [
    repo.insertSentTransfer(t, s.row, s.nonce + 1, now),
    event(t, newRowEventFields(s.row, s.row.id!, items[s.k]!.p.input.token)),
  ];
  const responses = signed.filter((s) => items[s.k]!.opts.inTransaction !== undefined);
  const drawn = signed[0]!.row.id !== undefined;
  if (drawn && responses.length === 0) return rowsOf(await end((t) => Promise.all(signed.flatMap((s) => both(t, s)))));
  const recs: TxRecord[] = [];
  if (drawn) recs.push(...rowsOf(await Promise.all(signed.flatMap((s) => both(trx, s)))));
  else {
    for (const [i, s] of signed.entries()) {
      const rec = await repo.insertSentTransfer(trx, s.row, s.nonce + 1, now);
      if (i === signed.length - 1 && responses.length === 0) await end((t) => event(t, rec));
      else await event(trx, rec);
      recs.push(rec);
    }
    if (responses.length === 0) return recs;
  }
  const stored = await Promise.allSettled(signed.map((s, i) => Promise.resolve(items[s.k]!.opts.inTransaction?.(trx, recs[i]!))));
  const failed = stored.findIndex((r) => r.status === 'rejected');
  if (failed >= 0) throw new Refused(signed[failed]!.k, (stored[failed] as PromiseRejectedResult).reason);
  return recs;
}

/** The rows of `[row, event id, row, event id, …]`. */
function rowsOf(answers: Array<TxRecord | number>): TxRecord[] {
  return answers.filter((_, i) => i % 2 === 0) as TxRecord[];
}

/** The value of a settled read, or its error thrown. */
function valueOf<T>(r: PromiseSettledResult<T>): T {
  if (r.status === 'rejected') throw r.reason;
  return r.value;
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

/** The row of a new outgoing transfer, but what signing gives it (status, nonce, hash, signed bytes). */
function heldFields(wallet: WalletView, p: Prepared): Omit<repo.NewTx, 'status' | 'nonce' | 'raw_tx' | 'tx_hash'> {
  const { token, amount, to } = p.input;
  return {
    wallet_id: wallet.id,
    token_id: token.id,
    symbol: token.symbol,
    type: p.input.data === undefined ? 'transfer' : 'contract',
    amount,
    fee_reserved: p.fee,
    from_address: p.from,
    to_address: to,
    log_index: -1,
    block_number: null,
    block_hash: null,
    block_timestamp: null,
    gas: p.gas,
    gas_price: p.fees.maxFeePerGas,
    tx_kind: p.fees.kind,
    max_fee_per_gas: p.fees.kind === 'eip1559' ? p.fees.maxFeePerGas : null,
    max_priority_fee_per_gas: p.fees.kind === 'eip1559' ? p.fees.maxPriorityFeePerGas : null,
    data: p.input.data ?? null,
    l1_fee: p.l1Fee,
    call_token_id: p.tokenCall?.tokenId ?? null,
    call_amount: p.tokenCall?.amount ?? null,
    call_spend: p.tokenCall?.spend ?? null,
    gas_used: null,
    cumulative_gas_used: null,
    receipt_status: null,
    confirmed_at: null,
  };
}

/** What an approval writes on the held row: the version signed now. */
function signedFields(p: Prepared, nonce: number, raw: Hex): SignedApproval {
  return {
    nonce,
    txHash: keccak256(raw),
    raw,
    gas: p.gas,
    gasPrice: p.fees.maxFeePerGas,
    txKind: p.fees.kind,
    maxFeePerGas: p.fees.kind === 'eip1559' ? p.fees.maxFeePerGas : null,
    maxPriorityFeePerGas: p.fees.kind === 'eip1559' ? p.fees.maxPriorityFeePerGas : null,
    l1Fee: p.l1Fee,
    feeReserved: p.fee,
  };
}

/** The signed transfer's row, pending (with `id`, the id drawn for it). */
function sentRow(wallet: WalletView, p: Prepared, nonce: number, raw: Hex, link: TxLink, id?: number): repo.NewTx {
  // The create sends it right after the commit: its first send is counted with the row.
  return {
    ...(id === undefined ? {} : { id }),
    ...heldFields(wallet, p),
    ...link,
    status: 'pending',
    nonce,
    raw_tx: raw,
    tx_hash: keccak256(raw),
    broadcast_attempts: 1,
  };
}

/** What a transfer's event shows of a row about to be inserted with `id` (as its record will read). */
function newRowEventFields(row: repo.NewTx, id: number, token: WalletTokenRow): TxEventFields {
  return {
    id,
    wallet_id: row.wallet_id,
    amount: row.amount,
    decimals: token.decimals,
    symbol: token.symbol,
    tx_hash: row.tx_hash,
    block_number: row.block_number,
    status: row.status,
    type: row.type,
    failure_reason: null,
    refund_id: row.refund_id ?? null,
    payout_id: row.payout_id ?? null,
    reference: row.reference ?? null,
  };
}

/** 422 on `address` when it holds no code (a contract call needs a contract). */
async function requireContract(client: PublicClient, address: Address): Promise<void> {
  let code: Hex | undefined;
  try {
    code = await client.getCode({ address });
  } catch (e) {
    throw mapChainError(e);
  }
  if (code === undefined || code === '0x') throw fieldError('address', 'The address field must be a contract.');
}

/** The fees to sign with: the level's, or the caller's (on the network's kind, within the cap), from the recent fee market. */
async function quoteFor(client: PublicClient, choice: FeeChoice | undefined): Promise<Fees> {
  if (choice === undefined || !('maxFeePerGas' in choice)) {
    try {
      return await recentQuote(client, choice?.level);
    } catch (e) {
      throw mapChainError(e);
    }
  }
  let market;
  try {
    market = await recentFeeMarket(client);
  } catch (e) {
    throw mapChainError(e);
  }
  requireWithinCap(choice.maxFeePerGas, market);
  return explicitFees(market.kind, choice.maxFeePerGas, choice.maxPriorityFeePerGas);
}

/** The L1 data fee to reserve with these fees (0 without a GasPriceOracle, known after the first call). */
async function l1FeeFor(client: PublicClient, call: Parameters<typeof l1Fee>[1], fees: Fees): Promise<bigint> {
  try {
    return await l1Fee(client, call, fees);
  } catch (e) {
    throw mapChainError(e);
  }
}

/** The revert reason the node gave (its message, else the decoded `Error(string)` / `Panic`), or null. */
function revertReason(err: BaseError): string | null {
  const reverted = err.walk((e) => e instanceof ExecutionRevertedError) as ExecutionRevertedError | null;
  const said = reverted?.shortMessage.match(/with reason: (.*)\.$/)?.[1]?.trim();
  if (said) return said;
  const rpc = err.walk((e) => e instanceof RpcRequestError) as RpcRequestError | null;
  const data = (rpc as { data?: unknown } | null)?.data;
  if (typeof data !== 'string' || !data.startsWith('0x') || data.length < 10) return null;
  try {
    const decoded = decodeErrorResult({ abi: [], data: data as Hex });
    return decoded.args?.length ? String(decoded.args[0]) : decoded.errorName;
  } catch {
    return null;
  }
}
