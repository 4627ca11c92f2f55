/**
 * Refunds of a charge (docs/money-out.md, "Refunds").
 *
 * - The bound: the refunds of a charge that are not failed or expired (claimable ones included)
 *   never pass what its confirmed payments brought. It is checked early (a clear 400 without
 *   touching the node) and decided under the wallet's lock: for a refund with an address inside
 *   the transaction service's recording transaction (`link`), before the policy, the balance and
 *   the nonce; for a claim in a transaction of its own. Two requests for the whole amount, in
 *   one process or several on PostgreSQL, are decided one after the other: one is written, the
 *   other reads it and answers 400.
 * - A refund with an address is an ordinary transfer of the charge's token from the main
 *   address (reserved, policed, tracked), carrying `refund_id`; its status is its transfer's.
 * - A claim has no transfer until the payer gives an address (`claim`): then the same transfer
 *   is made once. The claim's own row is re-read under the wallet's lock, so two claims cannot
 *   both send; the unique `transactions.refund_id` backs it.
 */
import { randomUUID } from 'node:crypto';
import type { Address } from 'viem';
import type { AppContext } from '../../context.js';
import type { Executor, InTransaction } from '../../db/index.js';
import { Errors } from '../../errors.js';
import type { ChargeRow } from '../charges/charges.repository.js';
import { findToken } from '../tokens/tokens.repository.js';
import { findWalletView, lockWallet, type WalletView } from '../wallets/wallets.repository.js';
import type { TransactionService } from '../transactions/transactions.service.js';
import type { FeeChoice } from '../transactions/transactions.schemas.js';
import * as repo from './refunds.repository.js';
import type { RefundRow } from './refunds.repository.js';
import { committedAmount, refundStatus } from './refunds.views.js';
import { refuseBlocked } from '../screening/screening.js';
import { findTerms } from '../charges/charges.payments.repository.js';
import { worthInToken } from '../charges/charges.decide.js';

export interface RefundInput {
  /** Base units of the charge's token; absent: all that is left to refund. */
  amount?: bigint;
  address?: Address;
  reason?: string;
  fees?: FeeChoice;
}

export class RefundService {
  constructor(
    private readonly ctx: AppContext,
    private readonly transactions: TransactionService,
  ) {}

  nowMs(): number {
    return this.ctx.clock.nowMs();
  }

  async listFor(chargeIds: number[]): Promise<RefundRow[]> {
    return repo.listRefunds(this.ctx.store.db, chargeIds);
  }

  async findByUuid(uuid: string): Promise<RefundRow | undefined> {
    return repo.findRefundByUuid(this.ctx.store.db, uuid.toLowerCase());
  }

  /** A refund of the charge: sent at once with an address, else a claim (`claim_url`). */
  async create(wallet: WalletView, charge: ChargeRow, input: RefundInput, inTransaction?: InTransaction<RefundRow>): Promise<RefundRow> {
    const db = this.ctx.store.db;
    const amount = await this.decide(db, charge, input.amount); // early answer, without the lock
    const row = {
      uuid: randomUUID(),
      charge_id: charge.id,
      wallet_id: wallet.id,
      token_id: charge.token_id,
      amount,
      reason: input.reason ?? null,
    };
    if (input.address === undefined) {
      return db.transaction().execute(async (trx) => {
        await lockWallet(trx, wallet.id);
        const id = await repo.insertRefund(
          trx,
          {
            ...row,
            amount: await this.decide(trx, charge, input.amount),
            address: null,
            claim_expires_at: this.nowMs() + this.ctx.config.refundClaimTtlS * 1000,
          },
          this.nowMs(),
        );
        const refund = (await repo.findRefund(trx, id))!;
        await inTransaction?.(trx, refund);
        return refund;
      });
    }
    const to = input.address;
    refuseBlocked(this.ctx.screening, [to]);
    const token = await this.token(wallet, charge);
    const rec = await this.transactions.create(
      wallet,
      { amount, token, to, ...(input.fees ? { fees: input.fees } : {}) },
      {
        // Decided again under the wallet's lock: `amount` is what the early look found left.
        link: async (trx) => {
          if ((await this.decide(trx, charge, input.amount)) !== amount) throw Errors.refundExceeds();
          return { refund_id: await repo.insertRefund(trx, { ...row, address: to, claim_expires_at: null }, this.nowMs()) };
        },
        inTransaction: inTransaction
          ? async (trx, created) => inTransaction(trx, (await repo.findRefund(trx, created.refund_id!))!)
          : undefined,
      },
    );
    return (await repo.findRefund(db, rec.refund_id!))!;
  }

  /** The payer's address for a claimable refund: its transfer is made, once. */
  async claim(uuid: string, to: Address): Promise<RefundRow> {
    const db = this.ctx.store.db;
    const refund = await this.findByUuid(uuid);
    if (!refund) throw Errors.refundNotFound();
    refuseBlocked(this.ctx.screening, [to]);
    this.requireClaimable(refund);
    const wallet = await findWalletView(db, refund.wallet_id);
    if (!wallet) throw Errors.refundNotFound();
    const token = await findToken(db, wallet.id, refund.token_id);
    if (!token) throw Errors.refundNotFound();
    await this.transactions.create(
      wallet,
      { amount: refund.amount, token, to },
      {
        link: async (trx) => {
          const now = await repo.findRefund(trx, refund.id);
          this.requireClaimable(now!);
          if (!(await repo.setClaimAddress(trx, refund.id, to, this.nowMs()))) throw Errors.refundClaimed();
          return { refund_id: refund.id };
        },
      },
    );
    return (await repo.findRefund(db, refund.id))!;
  }

  private requireClaimable(r: RefundRow): void {
    const status = refundStatus(r, this.nowMs());
    if (status === 'expired') throw Errors.refundExpired();
    if (status !== 'claimable' || r.address !== null) throw Errors.refundClaimed();
  }

  /**
   * The amount of a new refund: the one asked for, or all that is left; 400 when the charge
   * received nothing, or when it would pass what it received.
   */
  private async decide(db: Executor, charge: ChargeRow, asked: bigint | undefined): Promise<bigint> {
    const payments = await repo.confirmedPaymentAmounts(db, charge.id);
    if (payments.length === 0) throw Errors.nothingToRefund();
    // In the charge's token: a price charge's payments in other tokens count at their quotes.
    const terms = (await findTerms(db, charge.id))!;
    const received = worthInToken(terms, payments);
    const left = received - committedAmount(await repo.listRefunds(db, [charge.id]), this.nowMs());
    const amount = asked ?? left;
    if (amount <= 0n || amount > left) throw Errors.refundExceeds();
    return amount;
  }

  /** The charge's token in its wallet (a deactivated one too: the refund is owed in it). */
  private async token(wallet: WalletView, charge: ChargeRow) {
    const token = await findToken(this.ctx.store.db, wallet.id, charge.token_id);
    if (!token) throw Errors.tokenNotFound();
    return token;
  }
}
