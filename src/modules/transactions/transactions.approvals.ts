/**
 * Transfers held for a person's approval (docs/money-out.md,
 * "Approvals"). The create records a transfer over the policy's `approval_above` as
 * `awaiting_approval`: its amount and maximum fee reserved against the balance, no nonce taken,
 * nothing signed or sent, `transaction.approval_required` emitted with it. Then exactly one of:
 *
 *   awaiting_approval ──approve (login token)──▶ pending (signed, sent; transaction.created) ──▶ …as any transfer
 *                     ├──reject (login token)──▶ failed (rejected_by_approver; transaction.failed)
 *                     └──APPROVAL_TTL_S passed──▶ failed (approval_expired; transaction.failed)
 *
 * Each change is taken under the wallet's lock and is conditional on the row still awaiting
 * approval (transactions.approvals.repository.ts): two approvals, an approval and a reject, or
 * an approval and the expiry, racing in one process or several, decide it once; the loser
 * answers 400 `Transaction is not awaiting approval` and nothing is signed twice.
 */
import { getAddress } from 'viem';
import type { AppContext } from '../../context.js';
import type { Executor } from '../../db/index.js';
import { Errors } from '../../errors.js';
import type { FeeLevel } from '../../chain/fees.js';
import { findToken } from '../tokens/tokens.repository.js';
import { lockWallet, type WalletView } from '../wallets/wallets.repository.js';
import * as held from './transactions.approvals.repository.js';
import { findRecord, type ApprovalFailure, type NewTx, type TxRecord } from './transactions.repository.js';
import { AWAITING } from './transactions.create.repository.js';
import type { FeeChoice, TransferInput } from './transactions.schemas.js';
import { announce } from './transactions.state.js';

/** Held rows expired per statement by the expiry pass. */
const EXPIRY_BATCH = 100;

/** The create's fee choice as stored on a held row (wei as decimal strings). */
type StoredFees = { level: FeeLevel } | { max_fee_per_gas: string; max_priority_fee_per_gas: string };

export function storedFees(choice: FeeChoice | undefined): string {
  const s: StoredFees =
    choice === undefined
      ? { level: 'medium' }
      : 'level' in choice
        ? { level: choice.level }
        : { max_fee_per_gas: choice.maxFeePerGas.toString(), max_priority_fee_per_gas: choice.maxPriorityFeePerGas.toString() };
  return JSON.stringify(s);
}

function feeChoiceOf(stored: string | null): FeeChoice | undefined {
  if (stored === null) return undefined;
  const s = JSON.parse(stored) as StoredFees;
  return 'level' in s
    ? { level: s.level }
    : { maxFeePerGas: BigInt(s.max_fee_per_gas), maxPriorityFeePerGas: BigInt(s.max_priority_fee_per_gas) };
}

export class Approvals {
  constructor(private readonly ctx: AppContext) {}

  /** Records the transfer awaiting approval with its event (caller holds the wallet's lock and has checked the balance). */
  async hold(
    trx: Executor,
    wallet: WalletView,
    input: TransferInput,
    row: Omit<NewTx, 'status' | 'nonce' | 'raw_tx' | 'tx_hash'>,
    nowMs: number,
    inTransaction?: (trx: Executor, rec: TxRecord) => Promise<void>,
  ): Promise<TxRecord> {
    const rec = await held.insertHeld(trx, { ...row, requested_fees: storedFees(input.fees) }, nowMs);
    await announce(trx, rec, 'transaction.approval_required', nowMs);
    await inTransaction?.(trx, rec);
    return rec;
  }

  /** Under the wallet's lock: 400 unless the row still awaits approval and its time is not over. */
  async requireAwaiting(trx: Executor, id: number): Promise<void> {
    const rec = await findRecord(trx, id);
    if (!rec || rec.status !== AWAITING || this.isDue(rec)) throw Errors.notAwaitingApproval();
  }

  /** The held row, signed: pending at its nonce (caller holds the wallet's lock). */
  async signed(trx: Executor, wallet: WalletView, id: number, s: held.SignedApproval, nowMs: number): Promise<TxRecord> {
    if (!(await held.approveHeld(trx, wallet.id, id, s, nowMs))) throw Errors.notAwaitingApproval();
    return (await findRecord(trx, id))!;
  }

  /** Before an approval does any network work: 400 when the row is decided; a row past its time is expired now (and 400). */
  async expireIfDue(rec: TxRecord): Promise<void> {
    if (rec.status !== AWAITING) throw Errors.notAwaitingApproval();
    if (!this.isDue(rec)) return;
    await this.decide(rec.id, 'approval_expired');
    throw Errors.notAwaitingApproval();
  }

  /** The transfer a held row asks for, as a create would have given it. */
  async inputOf(rec: TxRecord): Promise<TransferInput> {
    const { db } = this.ctx.store;
    const token = await findToken(db, rec.wallet_id, rec.token_id);
    if (!token) throw Errors.internal(new Error(`token ${rec.token_id} of transaction ${rec.id} missing`));
    const input: TransferInput = { amount: rec.amount, token, to: getAddress(rec.to_address) };
    const fees = feeChoiceOf(await held.findRequestedFees(db, rec.id));
    if (fees) input.fees = fees;
    if (rec.data !== null) input.data = rec.data as `0x${string}`;
    return input;
  }

  /**
   * Reject (login token): failed, `rejected_by_approver`, its reservation released. A row past
   * its time is expired instead (`approval_expired`, and 400), as an approval finds it, whether
   * or not the expiry pass has come by yet.
   */
  async reject(rec: TxRecord): Promise<TxRecord> {
    await this.expireIfDue(rec);
    const after = await this.decide(rec.id, 'rejected_by_approver');
    if (!after) throw Errors.notAwaitingApproval();
    return after;
  }

  /** The expiry pass (the approvals worker): every held row past APPROVAL_TTL_S fails `approval_expired`. Returns how many. */
  async expireDue(): Promise<number> {
    let expired = 0;
    for (;;) {
      const due = await held.listExpiredHeld(this.ctx.store.db, this.ctx.clock.nowMs() - this.ctx.config.approvalTtlS * 1000, EXPIRY_BATCH);
      for (const d of due) if (await this.decide(d.id, 'approval_expired')) expired += 1;
      if (due.length < EXPIRY_BATCH) return expired;
    }
  }

  private isDue(rec: TxRecord): boolean {
    return rec.created_at + this.ctx.config.approvalTtlS * 1000 <= this.ctx.clock.nowMs();
  }

  /** Fails a held row unsigned with its event, under the wallet's lock; null when it was already decided. */
  private decide(id: number, reason: ApprovalFailure): Promise<TxRecord | null> {
    const nowMs = this.ctx.clock.nowMs();
    return this.ctx.store.db.transaction().execute(async (trx) => {
      const before = await findRecord(trx, id);
      if (!before) return null;
      await lockWallet(trx, before.wallet_id);
      if (!(await held.failHeld(trx, id, reason, nowMs))) return null;
      const after = (await findRecord(trx, id))!;
      await announce(trx, after, 'transaction.failed', nowMs);
      this.ctx.log.info(
        { component: 'transactions', transaction_id: id, wallet_id: after.wallet_id, reason },
        'held transaction failed unsigned',
      );
      return after;
    });
  }
}
