/**
 * Payouts (docs/money-out.md, "Payouts").
 *
 * - Create: the whole is checked before anything is sent, under the wallet's lock in one
 *   database transaction that then records the payout and its items: the references (unique per
 *   wallet: 422 on `items.N.reference`), the policy as a whole (`enforceBatchPolicy`: each item's
 *   per-transaction limit and allowlist, the total's daily limit; the total over
 *   `approval_above` holds the payout for a person), and the balance (the total and every item's
 *   maximum fee: 400 `Insufficient balance for payout`). Nothing is signed in it. From then on,
 *   held or being sent, each unsent item reserves its amount and that maximum fee against the
 *   wallet's balance (payouts.repository.ts `unsentItemReservations`), as a held transfer does:
 *   no other transfer or payout takes what the payout was checked to have; its reject or expiry
 *   releases it.
 * - Sending (`send`, from the route right after the create and from the payouts worker): items
 *   go out one at a time in item order, each an ordinary create (reserved, policed again, signed
 *   at the wallet's next nonce, broadcast) carrying `payout_id` and `reference`, and taking
 *   over the item's own reservation (`spends`: left out of its balance checks). The item is
 *   claimed inside that create's recording transaction, under the wallet's lock (`link`): an
 *   item already sent, by this process or another, rolls the create back before anything is
 *   signed, so no item is ever sent twice. A create refused for the item itself (balance,
 *   policy) fails that item (`refused`) and the next goes on; a node fault or the wallet's
 *   pending limit stops the pass, and the next pass takes it up again.
 * - Approval: approve (login token) lets the items go out; reject, or APPROVAL_TTL_S without a
 *   decision, fails the payout with nothing sent.
 */
import type { AppContext } from '../../context.js';
import type { InTransaction } from '../../db/index.js';
import { AppError, Errors, fieldError } from '../../errors.js';
import { isTransient } from '../../chain/errors.js';
import { enforceBatchPolicy } from '../policies/policies.check.js';
import { findToken } from '../tokens/tokens.repository.js';
import { findWalletView, lockWallet, type WalletView } from '../wallets/wallets.repository.js';
import type { TransactionService } from '../transactions/transactions.service.js';
import * as repo from './payouts.repository.js';
import type { ItemRow, PayoutRow } from './payouts.repository.js';
import type { PayoutInput } from './payouts.schemas.js';
import { refuseBlocked } from '../screening/screening.js';
import { BatchTaken, PayoutBatches } from './payouts.batches.js';

export interface PayoutWithItems {
  payout: PayoutRow;
  items: ItemRow[];
}

/** Create refusals that end an item (its own fault); anything else stops the pass and is tried again. */
const ITEM_REFUSALS = new Set([
  'INSUFFICIENT_BALANCE',
  'POLICY_PER_TRANSACTION',
  'POLICY_DAILY',
  'POLICY_ALLOWLIST',
  'CHAIN_REJECTED',
  'WOULD_REVERT',
]);

class ItemTaken extends Error {
  constructor() {
    super('this payout item was sent by another pass');
  }
}

export class PayoutService {
  /** Payouts being sent by this process (one pass a payout at a time). */
  private readonly sending = new Set<number>();
  private readonly batches: PayoutBatches;

  constructor(
    private readonly ctx: AppContext,
    private readonly transactions: TransactionService,
  ) {
    this.batches = new PayoutBatches(ctx, transactions);
  }

  /** Batched items follow their batch (the payouts worker's tick): how many changed. */
  trackBatches(): Promise<number> {
    return this.batches.track();
  }

  async find(walletId: number, ref: string): Promise<PayoutWithItems | undefined> {
    if (!/^[1-9][0-9]{0,14}$/.test(ref)) return undefined;
    const payout = await repo.findPayout(this.ctx.store.db, walletId, Number(ref));
    return payout ? { payout, items: await repo.listItems(this.ctx.store.db, [payout.id]) } : undefined;
  }

  async list(walletId: number, page: number, limit: number): Promise<{ items: PayoutWithItems[]; total: number }> {
    const db = this.ctx.store.db;
    const [payouts, total] = await Promise.all([
      repo.listPayouts(db, walletId, { offset: (page - 1) * limit, limit }),
      repo.countPayouts(db, walletId),
    ]);
    const items = await repo.listItems(
      db,
      payouts.map((p) => p.id),
    );
    return { items: payouts.map((payout) => ({ payout, items: items.filter((i) => i.payout_id === payout.id) })), total };
  }

  async create(wallet: WalletView, input: PayoutInput, inTransaction?: InTransaction<PayoutWithItems>): Promise<PayoutWithItems> {
    refuseBlocked(
      this.ctx.screening,
      input.items.map((i) => i.address),
    ); // every item, before anything is recorded
    const total = input.items.reduce((s, i) => s + i.amount, 0n);
    let quote: Awaited<ReturnType<TransactionService['quoteBatch']>>;
    try {
      quote = await this.transactions.quoteBatch(
        wallet,
        { token: input.token, amount: total, to: input.items[0]!.address, ...(input.fees ? { fees: input.fees } : {}) },
        input.items.length,
      );
    } catch (e) {
      throw e instanceof AppError && e.code === 'INSUFFICIENT_BALANCE' ? Errors.insufficientBalanceForPayout() : e;
    }
    const now = this.ctx.clock.nowMs();
    const created = await this.ctx.store.db.transaction().execute(async (trx) => {
      await lockWallet(trx, wallet.id);
      await this.requireFreeReferences(trx, wallet.id, input);
      const decision = await enforceBatchPolicy(
        trx,
        { walletId: wallet.id, tokenId: input.token.id, items: input.items.map((i) => ({ amount: i.amount, to: i.address })) },
        now,
      );
      if (!(await quote.fits(trx))) throw Errors.insufficientBalanceForPayout();
      const fee_level = input.fees && 'level' in input.fees ? input.fees.level : null;
      const id = await repo.insertPayout(
        trx,
        {
          wallet_id: wallet.id,
          token_id: input.token.id,
          total,
          item_fee_reserved: quote.fee,
          fee_level,
          state: decision === 'send' ? 'sending' : 'approval',
          // The rule that held it, written with the payout (a payout's only hold is its total over `approval_above`).
          held_limit: decision !== 'send' && decision.rule === 'approval_above' ? decision.limit : null,
        },
        input.items,
        now,
      );
      const result = { payout: (await repo.findPayoutById(trx, id))!, items: await repo.listItems(trx, [id]) };
      await inTransaction?.(trx, result);
      return result;
    });
    this.ctx.log.info(
      { component: 'payouts', wallet_id: wallet.id, payout_id: created.payout.id, items: input.items.length, state: created.payout.state },
      'payout recorded',
    );
    return created;
  }

  private async requireFreeReferences(trx: Parameters<InTransaction<unknown>>[0], walletId: number, input: PayoutInput): Promise<void> {
    const refs = input.items.map((i) => i.reference).filter((r): r is string => r !== null);
    const taken = await repo.takenReferences(trx, walletId, refs);
    const n = input.items.findIndex((i) => i.reference !== null && taken.has(i.reference));
    if (n >= 0) throw fieldError(`items.${n}.reference`, `The items.${n}.reference has already been taken.`);
  }

  /** Approve (login token): its items may go out; 400 unless it awaits approval within APPROVAL_TTL_S. */
  async approve(wallet: WalletView, payoutId: number): Promise<void> {
    await this.expireDue();
    // An item's recipient listed since the payout was held: it stays held, to be rejected.
    const held = await repo.findPayoutById(this.ctx.store.db, payoutId);
    if (held?.state === 'approval')
      refuseBlocked(
        this.ctx.screening,
        (await repo.listItems(this.ctx.store.db, [payoutId])).map((i) => i.address),
      );
    if (!(await repo.moveState(this.ctx.store.db, payoutId, 'approval', 'sending', this.ctx.clock.nowMs())))
      throw Errors.payoutNotAwaitingApproval();
    this.ctx.log.info({ component: 'payouts', wallet_id: wallet.id, payout_id: payoutId }, 'payout approved');
  }

  async reject(wallet: WalletView, payoutId: number): Promise<void> {
    await this.expireDue();
    if (!(await repo.moveState(this.ctx.store.db, payoutId, 'approval', 'rejected', this.ctx.clock.nowMs())))
      throw Errors.payoutNotAwaitingApproval();
    this.ctx.log.info({ component: 'payouts', wallet_id: wallet.id, payout_id: payoutId }, 'payout rejected');
  }

  /** Payouts not decided within APPROVAL_TTL_S fail (`approval_expired`); the count. */
  async expireDue(): Promise<number> {
    const now = this.ctx.clock.nowMs();
    let n = 0;
    for (const p of await repo.listApprovalExpired(this.ctx.store.db, now - this.ctx.config.approvalTtlS * 1000, 100)) {
      if (await repo.moveState(this.ctx.store.db, p.id, 'approval', 'expired', now)) n++;
    }
    return n;
  }

  /** One pass over the payouts with items to send (the worker's tick). */
  async sendDue(stopping: () => boolean = () => false): Promise<void> {
    for (const id of await repo.listSending(this.ctx.store.db, 20)) {
      if (stopping()) return;
      await this.send(id, stopping);
    }
  }

  /** Sends a payout's unsent items in order until none is left, or a fault or the pending limit stops the pass. */
  async send(payoutId: number, stopping: () => boolean = () => false): Promise<void> {
    if (this.sending.has(payoutId)) return;
    this.sending.add(payoutId);
    try {
      const payout = await repo.findPayoutById(this.ctx.store.db, payoutId);
      const wallet = payout?.state === 'sending' ? await findWalletView(this.ctx.store.db, payout.wallet_id) : undefined;
      const token = wallet ? await findToken(this.ctx.store.db, wallet.id, payout!.token_id) : undefined;
      if (!payout || !wallet || !token) return;
      const sweeper = await this.batches.sweeperFor(wallet, token);
      const next = () => (sweeper ? this.sendBatch(payout, wallet, token, sweeper) : this.sendNext(payout, wallet, token));
      while (!stopping() && (await next())) {
        /* next item or batch */
      }
    } finally {
      this.sending.delete(payoutId);
    }
  }

  /**
   * Sends the next batch of unsent items (payouts.batches.ts); false when none is left or the
   * pass must stop. A batch refused as a whole for what its items ask (the balance, a reverting
   * estimate) is sent item by item instead, so each item meets its own refusal.
   */
  private async sendBatch(
    payout: PayoutRow,
    wallet: WalletView,
    token: NonNullable<Awaited<ReturnType<typeof findToken>>>,
    sweeper: `0x${string}`,
  ): Promise<boolean> {
    try {
      return await this.batches.sendNext(payout, wallet, token, sweeper);
    } catch (e) {
      if (e instanceof BatchTaken) return true;
      if (e instanceof AppError && ITEM_REFUSALS.has(e.code) && !isTransient(e)) {
        this.ctx.log.warn(
          { component: 'payouts', wallet_id: wallet.id, payout_id: payout.id, reason: e.message },
          'payout batch refused; its next item is sent alone',
        );
        return this.sendNext(payout, wallet, token);
      }
      if (e instanceof AppError && e.code === 'TOO_MANY_PENDING') return false;
      this.ctx.log.warn({ component: 'payouts', payout_id: payout.id, err: e }, 'payout batch not sent now; the next pass tries again');
      return false;
    }
  }

  /** Sends the next unsent item; false when none is left or the pass must stop. */
  private async sendNext(
    payout: PayoutRow,
    wallet: WalletView,
    token: NonNullable<Awaited<ReturnType<typeof findToken>>>,
  ): Promise<boolean> {
    const db = this.ctx.store.db;
    const [item] = await repo.nextUnsentMany(db, payout.id, 1);
    if (!item) return false;
    const log = this.ctx.log.child({ component: 'payouts', wallet_id: wallet.id, payout_id: payout.id, item_id: item.id });
    const fees = payout.fee_level === null ? {} : { fees: { level: payout.fee_level as 'low' | 'medium' | 'high' } };
    try {
      await this.transactions.create(
        wallet,
        { token, amount: item.amount, to: item.address as `0x${string}`, ...fees },
        {
          approvalDecided: true,
          spends: repo.itemReservationId(item.id),
          link: async (trx) => {
            if (!(await repo.isUnsent(trx, item.id))) throw new ItemTaken();
            return { payout_id: payout.id, reference: item.reference };
          },
          inTransaction: async (trx, rec) => {
            if (!(await repo.setItemTransaction(trx, item.id, rec.id))) throw new ItemTaken();
          },
        },
      );
      return true;
    } catch (e) {
      if (e instanceof ItemTaken) return true;
      if (e instanceof AppError && ITEM_REFUSALS.has(e.code) && !isTransient(e)) {
        // Refused before anything was recorded (balance, policy, a reverting estimate): the item
        // fails with the reason. A first send the node refused left the item its failed
        // transaction, and this writes nothing.
        await repo.refuseItem(db, item.id, e.message, this.ctx.clock.nowMs());
        log.warn({ reason: e.message }, 'payout item refused; the next one goes on');
        return !(await repo.isUnsent(db, item.id)); // never the same item again in this pass
      }
      // The wallet's pending limit is a wait, not a fault: the next pass goes on once some confirm.
      if (e instanceof AppError && e.code === 'TOO_MANY_PENDING') log.debug('payout waits for the wallet’s pending transfers to confirm');
      else log.warn({ err: e }, 'payout item not sent now; the next pass tries again');
      return false;
    }
  }
}
