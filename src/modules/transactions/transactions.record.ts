/**
 * Step 3 of the create flow (transactions.service.ts): under the wallet's lock, reserve, take the
 * nonce, sign and record, with the `transaction.created` event in the same transaction. One path
 * for every create (`recordBatch`): a hot wallet's plain creates recorded together, any other a
 * batch of one.
 */
import { keccak256, type Hex } from 'viem';
import type { AppContext } from '../../context.js';
import type { Executor } from '../../db/index.js';
import type { WalletTokenRow } from '../../db/types.js';
import { Errors } from '../../errors.js';
import { feeFields } from '../../chain/fees.js';
import { allocateNonce } from '../../chain/nonce.js';
import { recordEvent } from '../events/outbox.js';
import { enforceCallPolicy, enforcePolicy, isUnpoliced, type HoldReason } from '../policies/policies.check.js';
import { findToken } from '../tokens/tokens.repository.js';
import { Batcher } from '../../lib/batcher.js';
import { pipelinedTransaction, type EndWith } from '../../db/pipelined.js';
import type { WalletView } from '../wallets/wallets.repository.js';
import * as repo from './transactions.repository.js';
import type { TxRecord } from './transactions.repository.js';
import * as createRepo from './transactions.create.repository.js';
import { Approvals } from './transactions.approvals.js';
import type { SignedApproval } from './transactions.approvals.repository.js';
import { transactionEventPayload, type TxEventFields } from './transactions.views.js';
import type { Prepared } from './transactions.prepare.js';

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
   * where its own amount and fee count instead; a payout batch takes over its items' (a list).
   */
  spends?: number | readonly number[];
}

/** What a transfer pays, stored on its row. */
export interface TxLink {
  refund_id?: number;
  payout_id?: number;
  reference?: string | null;
}

/** Records the creates of the service's wallets (a wallet's plain creates in this process together). */
export class Recorder {
  /** Per wallet with creates under way in this process: the batch being recorded and those waiting for it (`recordTogether`). */
  private readonly hot = new Map<number, { batcher: Batcher<Queued, Outcome>; creates: number }>();

  constructor(
    private readonly ctx: AppContext,
    private readonly approvals: Approvals,
  ) {}

  /** Step 3 for one create alone: a batch of one (`recordBatch`). */
  async recordAlone(wallet: WalletView, q: Queued): Promise<Recorded> {
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
  async recordTogether(wallet: WalletView, q: Queued): Promise<Recorded> {
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
   * several, whether it sets anything for their tokens; for one, its decision), the outgoing
   * rows and the next nonce; a create's `link` is written first, and the reads follow it. Then,
   * in memory, each create in its order is checked and given its nonce against the rows and the
   * creates before it (`allot`); then the rows, their `transaction.created` events and the
   * commit (`writeBatch`).
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
          repo.findNextNonce(trx, wallet.id),
        ]);
      const early = opts.link === undefined ? reads() : undefined;
      early?.catch(() => undefined);
      if (!(await locking)) throw Errors.internal(new Error(`wallet ${wallet.id} missing`));
      const link = (await opts.link?.(trx)) ?? {};
      const [policy, rows, nextNonce] = await (early ?? reads());
      if (one && policy !== null && !Array.isArray(policy))
        return [await this.holdOne(trx, wallet, one, rows, { ...link, ...policy }, now)];
      const unpoliced = new Set(Array.isArray(policy) ? tokenIds.filter((_, i) => policy[i]) : tokenIds);
      const ids = await drawing;
      const { results, signed } = await this.allot(wallet, items, { nextNonce, rows, unpoliced, ids, link });
      if (one && results[0] !== undefined && results[0] !== 'alone' && !results[0].ok) throw results[0].error;
      if (signed.length === 0) return results;
      if (opts.approving !== undefined) return [await this.signHeld(trx, end, wallet, one!, signed[0]!, now)];
      const recs = await writeBatch(trx, end, wallet, items, signed, now);
      signed.forEach((s, i) => (results[s.k] = { ok: true, value: { rec: recs[i]!, raw: s.raw, together: signed.length } }));
      return results;
    });
  }

  /**
   * A create alone that the policy holds: recorded awaiting approval when the balance covers it
   * (reserved, nothing signed), the rule that held it written by the same insert (`held`).
   */
  private async holdOne(
    trx: Executor,
    wallet: WalletView,
    { p, opts }: Queued,
    rows: createRepo.OutgoingRows,
    held: TxLink & HeldFields,
    now: number,
  ): Promise<Outcome> {
    const state = createRepo.outgoingStateOf(rows, p.snap.minedNonce, opts.approving ?? opts.spends);
    if (!p.enough(state.reservations, p.fee)) throw Errors.insufficientBalance();
    const rec = await this.approvals.hold(trx, wallet, p.input, { ...heldFields(wallet, p), ...held }, now, opts.inTransaction);
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
      // A required nonce below `next` (a gap filled) leaves `next` where it was.
      next = Math.max(next ?? 0, nonce + 1);
      signed.push({ k, nonce, next, raw, row: sentRow(wallet, p, nonce, raw, at.link, at.ids?.[signed.length]) });
      taken.push({ token_id: p.input.token.id, amount: p.input.amount, fee_reserved: p.fee });
      nonces.push(nonce);
    }
    return { results, signed };
  }

  /**
   * Under the wallet's lock: the rule that holds the transfer for approval, as its row keeps it,
   * or null when it is sent; throws its 400 when the policy refuses it. An approval checks that
   * the row still awaits one (the policy was applied at its create); the service's own movements
   * are not policed.
   */
  private async policyDecision(
    trx: Executor,
    wallet: WalletView,
    p: Prepared,
    opts: CreateOptions & { approving?: number },
    nowMs: number,
  ): Promise<HeldFields | null> {
    if (opts.approving !== undefined) {
      await this.approvals.requireAwaiting(trx, opts.approving);
      return null;
    }
    if (opts.exemptFromPolicy) return null;
    const decision =
      p.input.data === undefined
        ? await enforcePolicy(trx, { walletId: wallet.id, tokenId: p.input.token.id, amount: p.input.amount, to: p.input.to }, nowMs)
        : await enforceCallPolicy(
            trx,
            { walletId: wallet.id, nativeTokenId: p.input.token.id, value: p.input.amount, contract: p.input.to, tokenCall: p.tokenCall },
            nowMs,
          );
    if (decision === 'send' || opts.approvalDecided) return null;
    return heldBy(trx, wallet, p, decision);
  }
}

/** The rule that held a transfer, as its row keeps it (migration 039). */
type HeldFields = Required<Pick<repo.NewTx, 'held_rule' | 'held_limit' | 'held_symbol' | 'held_decimals'>>;

/**
 * The row's record of why it is held: for `approval_above` the threshold with its token's symbol
 * and decimals (the transfer's own token, or the token a contract call's calldata moves, read
 * under the lock), as the approver is to see them whatever the policy or token says later.
 */
async function heldBy(trx: Executor, wallet: WalletView, p: Prepared, reason: HoldReason): Promise<HeldFields> {
  if (reason.rule === 'contract_call') return { held_rule: reason.rule, held_limit: null, held_symbol: null, held_decimals: null };
  const token = reason.tokenId === p.input.token.id ? p.input.token : await findToken(trx, wallet.id, reason.tokenId);
  if (!token) throw Errors.internal(new Error(`token ${reason.tokenId} of wallet ${wallet.id} missing`));
  return { held_rule: reason.rule, held_limit: reason.limit, held_symbol: token.symbol, held_decimals: token.decimals };
}

/**
 * The nonce for a new transfer (caller holds the wallet lock): the allocation (chain/nonce.ts).
 * A `required` nonce (the gap filler's) must be the lowest that the chain's counts (`floor`) and
 * the rows of ours (`held`) leave free, even below `next`: the gap it fills is one that `next`
 * went past (a heal overtaken, a node that counted a pool transaction it never mined), and only
 * the chain and the rows say whether a nonce is free. Else 409, nothing signed.
 */
function takeNonce(next: number | null, floor: number, held: ReadonlySet<number>, required: number | undefined): number {
  if (required === undefined) return allocateNonce(next, floor, held);
  const free = allocateNonce(null, floor, held);
  if (required !== free) throw Errors.nonceMoved(required, free);
  return required;
}

/** The most creates of one wallet recorded in one transaction (the default pending cap: more would be refused). */
const MAX_TOGETHER = 64;

/** A create's terms when recorded: its options, or the held row an approval signs. */
type RecordOptions = CreateOptions & { approving?: number };

/** A create to record: its quote and its terms (among them the response to store with it, Idempotency-Key). */
export interface Queued {
  p: Prepared;
  opts: RecordOptions;
}

/** A recorded create: its row, its signed bytes (none when held for approval), and how many were recorded in its transaction. */
export interface Recorded {
  rec: TxRecord;
  raw?: Hex;
  together?: number;
}

type Outcome = { ok: true; value: Recorded } | { ok: false; error: unknown };

/** A create of a batch signed under the lock: its place in the batch, nonce, the wallet's next nonce after it, bytes, row. */
interface Signed {
  k: number;
  nonce: number;
  next: number;
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
export function isPlain(opts: CreateOptions): boolean {
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
    repo.insertSentTransfer(t, s.row, s.next, now),
    event(t, newRowEventFields(s.row, s.row.id!, items[s.k]!.p.input.token)),
  ];
  const responses = signed.filter((s) => items[s.k]!.opts.inTransaction !== undefined);
  const drawn = signed[0]!.row.id !== undefined;
  if (drawn && responses.length === 0) return rowsOf(await end((t) => Promise.all(signed.flatMap((s) => both(t, s)))));
  const recs: TxRecord[] = [];
  if (drawn) recs.push(...rowsOf(await Promise.all(signed.flatMap((s) => both(trx, s)))));
  else {
    for (const [i, s] of signed.entries()) {
      const rec = await repo.insertSentTransfer(trx, s.row, s.next, now);
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
