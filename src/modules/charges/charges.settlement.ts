/**
 * Settlement, from the payments the chain follower recorded (charges.chain-sync.ts) and its
 * cursor, without asking the node (one best-effort balance read before an expiry feeds a
 * warning, never the decision): the rule itself is `decide` (charges.decide.ts).
 *
 * Per network and tick, bounded work with nothing starved:
 *
 * 1. The confirmed height is the follower's cursor − confirmations + 1, and its time the
 *    timestamp of that block (`charge_blocks`). Nothing recorded yet: nothing expires.
 * 2. Payments newly at or below the confirmed height (oldest first, PAYMENT_BATCH): marked
 *    confirmed and their charges decided again in the same transaction, so a charge whose
 *    confirmed payments reach the amount is `paid` at once; each payment is taken once.
 * 3. Pending charges whose `expires_at` is behind the confirmed time (earliest due first,
 *    EXPIRY_BATCH): every one of them is decidable and leaves the pending set, so the next tick
 *    takes the next ones, however many there are. Only up to the block below the lowest one
 *    whose call traces are still to be read (`trace_pending`, src/workers/watcher.traces.ts):
 *    an internal payment there is not known yet, so no expiry is decided across it.
 * 4. Late payments of settled charges not yet announced: `charge.delayed`, once each (a
 *    conditional update of the payment's `notified` with the event in one transaction), and
 *    the address is made due for a sweep.
 * 5. Screened payments (a sender on the SCREENING_FILE list, charges.chain-sync.ts) confirmed
 *    and not yet announced: `charge.screened`, once each, as step 4 does (its own flag,
 *    `screened_notified`, and its own record against a reorg's bringing it back). A late screened
 *    payment is told by both events: it is late, and it is screened.
 *
 * Each final move is one conditional UPDATE (WHERE status = 'pending') with its event in the
 * same transaction: several processes may run this, each move happens once. A settlement a
 * reorg undid (charges.chain-sync.ts: `charge.reopened`) is decided again and its outcome's event
 * written again, whatever the outcome (docs/charges.md, "Reorgs").
 */
import type { Address } from 'viem';
import type { Logger } from 'pino';
import type { AppContext } from '../../context.js';
import type { Executor } from '../../db/index.js';
import type { NetworkRow } from '../../db/types.js';
import { confirmedHeight } from '../../chain/blocks.js';
import { readBalance } from '../../chain/erc20.js';
import { lockEventsOf, recordEvent } from '../events/outbox.js';
import { findCursor, listNetworks } from '../networks/networks.repository.js';
import { lowestPendingTrace } from '../networks/traces.repository.js';
import { findWalletView, type WalletView } from '../wallets/wallets.repository.js';
import * as repo from './charges.repository.js';
import * as pay from './charges.payments.repository.js';
import { decide } from './charges.decide.js';
import { chargeDelayedPayload, chargeFinishedPayload, chargeScreenedPayload } from './charges.views.js';

const PAYMENT_BATCH = 500;
const EXPIRY_BATCH = 200;
const LATE_BATCH = 200;
const SCREENED_BATCH = 200;

/** Network id → the confirmed height a settlement tick used. */
export type ConfirmedHeights = Map<number, number>;

/** The follower's confirmed height on a network and that block's timestamp (null: none recorded). */
interface Confirmed {
  height: number;
  timeMs: number | null;
}

export class ChargeSettlement {
  private readonly log: Logger;

  constructor(private readonly ctx: AppContext) {
    this.log = ctx.log.child({ component: 'charges' });
  }

  /**
   * Returns the confirmed height it settled each network at: the sweeps of the same tick are
   * confirmed at no more than that (charges.sweeps.ts), so a sweep is never shown confirmed
   * before the payment it swept, which sits in an earlier block.
   */
  async tick(stopping: () => boolean = () => false): Promise<ConfirmedHeights> {
    const heights: ConfirmedHeights = new Map();
    for (const network of await listNetworks(this.ctx.store.db)) {
      if (stopping()) break;
      const at = await this.confirmed(network);
      if (!at) continue;
      await this.confirmPayments(network, at);
      await this.expireDue(network, at);
      await this.announceLate(network.id);
      await this.announceScreened(network.id);
      heights.set(network.id, at.height);
    }
    return heights;
  }

  private async confirmed(network: NetworkRow): Promise<Confirmed | null> {
    const cursor = await findCursor(this.ctx.store.db, network.id);
    if (!cursor) return null;
    const height = confirmedHeight(cursor.block_number, network.confirmations);
    return { height, timeMs: await pay.blockTimeAtOrBelow(this.ctx.store.db, network.id, height) };
  }

  /**
   * The confirmed height as it holds when the settling transaction commits: read again inside
   * it, under the cursor's lock, because a reorg rollback may have committed since `at` was read
   * (its payments deleted, its cursor moved back). Null when it moved back below `at`: the
   * candidates read at `at` are stale, and the next tick starts again from the new cursor.
   */
  private async confirmedIn(trx: Executor, network: NetworkRow, at: Confirmed): Promise<Confirmed | null> {
    const cursor = await pay.lockedCursorHeight(trx, network.id);
    if (cursor === undefined) return null;
    const height = confirmedHeight(cursor, network.confirmations);
    if (height < at.height) {
      this.log.info(
        { network_id: network.id, read: at.height, now: height },
        'the confirmed height moved back (a reorg) while settling: decided again next tick',
      );
      return null;
    }
    return { height, timeMs: await pay.blockTimeAtOrBelow(trx, network.id, height) };
  }

  /** Step 2. */
  private async confirmPayments(network: NetworkRow, at: Confirmed): Promise<void> {
    const rows = await pay.listNewlyConfirmed(this.ctx.store.db, network.id, at.height, PAYMENT_BATCH);
    if (rows.length === 0) return;
    await this.ctx.store.db.transaction().execute(async (trx) => {
      const now = await this.confirmedIn(trx, network, at);
      if (!now) return;
      await pay.markConfirmed(
        trx,
        rows.map((r) => r.id),
      );
      for (const chargeId of new Set(rows.map((r) => r.charge_id))) await this.decideOne(trx, chargeId, now);
    });
  }

  /** Step 3. */
  private async expireDue(network: NetworkRow, confirmed: Confirmed): Promise<void> {
    const at = await this.tracesKnown(this.ctx.store.db, network, confirmed);
    if (at.timeMs === null) return;
    const ids = await pay.listExpirable(this.ctx.store.db, network.id, at.timeMs, EXPIRY_BATCH);
    for (const id of ids) {
      await this.warnUnseenFunds(network, id, at.height);
      await this.ctx.store.db.transaction().execute(async (trx) => {
        const now = await this.confirmedIn(trx, network, at);
        if (now) await this.decideOne(trx, id, await this.tracesKnown(trx, network, now));
      });
    }
  }

  /**
   * `at`, or the block below the lowest one whose call traces are still to be read when that is
   * lower: an expiry decided above it could miss a payment made through a contract before it.
   */
  private async tracesKnown(db: Executor, network: NetworkRow, at: Confirmed): Promise<Confirmed> {
    const lowest = await lowestPendingTrace(db, network.id);
    if (lowest === null || lowest > at.height) return at;
    return { height: lowest - 1, timeMs: await pay.blockTimeAtOrBelow(db, network.id, lowest - 1) };
  }

  /**
   * Money that reached a pending charge's address without a transfer the follower can see (a
   * contract's internal transaction on a node without the trace API, charges.chain-sync.ts
   * `internalNative`; or coin a contract left there without a call) is not a payment; it is
   * swept with the rest. Said in a warning so that an operator can tell why a
   * charge expired or failed with more on its address. Best effort: no node, no check.
   */
  private async warnUnseenFunds(network: NetworkRow, chargeId: number, height: number): Promise<void> {
    const db = this.ctx.store.db;
    try {
      const charge = await repo.findChargeById(db, chargeId);
      if (!charge) return;
      const seen = (await pay.listPayments(db, [chargeId], { confirmedOnly: false }))
        .filter((p) => p.block_number <= height)
        .reduce((a, p) => a + p.amount, 0n);
      const balance = await readBalance(this.ctx.chains.get(network), charge.contract, charge.address as Address, BigInt(height));
      if (balance <= seen) return;
      const fields = {
        charge_id: chargeId,
        address: charge.address,
        balance: balance.toString(),
        payments: seen.toString(),
        block: height,
      };
      this.log.warn(
        fields,
        'a charge deposit address holds more than the transfers seen (an internal transaction on a node without traces?): settled on the transfers seen; the balance is swept',
      );
    } catch (e) {
      this.log.debug({ err: e, charge_id: chargeId }, 'could not compare a deposit address balance with its payments');
    }
  }

  /** Decides one pending charge from its payments; a final outcome is written with its event. */
  private async decideOne(trx: Executor, chargeId: number, at: Confirmed): Promise<void> {
    const terms = await pay.findTerms(trx, chargeId);
    if (!terms || terms.status !== 'pending') return;
    const d = decide(terms, await pay.listPayments(trx, [chargeId], { confirmedOnly: false }), at.height, at.timeMs);
    const now = this.ctx.clock.nowMs();
    if (d.status === 'pending') return pay.setPaidAmount(trx, chargeId, { amount: d.paid, fraction: d.fraction }, now);
    const won = await pay.settleCharge(trx, chargeId, {
      status: d.status,
      paid: d.paid,
      fraction: d.fraction,
      paidAt: d.paidAtMs,
      block: at.height,
      nowMs: now,
    });
    if (!won) return;
    const charge = (await repo.findChargeById(trx, chargeId))!;
    this.log.info(
      { charge_id: chargeId, wallet_id: charge.wallet_id, status: d.status, paid_amount: d.paid.toString(), block: at.height },
      'charge settled',
    );
    const wallet = (await findWalletView(trx, charge.wallet_id))!;
    const payload = chargeFinishedPayload(charge, d.status, d.paidAtMs ?? now);
    await recordEvent(trx, { userId: wallet.user_id, walletId: wallet.id, name: `charge.${d.status}`, payload, nowMs: now });
  }

  /**
   * Step 4: late payments, each told once by `charge.delayed` (`announceEach`), its address made
   * due for a sweep. A payment announced before a reorg removed it and brought it back is not
   * announced again (`recordAnnouncement`); its address is made due for a sweep all the same.
   */
  private async announceLate(networkId: number): Promise<void> {
    const payments = await pay.listUnannouncedLate(this.ctx.store.db, networkId, LATE_BATCH);
    await this.announceEach(networkId, payments, async (trx, p, wallet, now) => {
      if (!(await pay.markNotified(trx, p.id))) return;
      await pay.makeSweepDue(trx, p.charge_id, now);
      if (p.tx_hash !== null && !(await pay.recordAnnouncement(trx, { ...p, tx_hash: p.tx_hash }, now))) return;
      const current = (await repo.findChargeById(trx, p.charge_id))!;
      const payload = chargeDelayedPayload(current, p);
      await recordEvent(trx, { userId: wallet.user_id, walletId: wallet.id, name: 'charge.delayed', payload, nowMs: now });
      const fields = { charge_id: p.charge_id, tx_hash: p.tx_hash, amount: p.amount.toString(), status: current.status };
      this.log.info(fields, 'late payment to a settled charge');
    });
  }

  /**
   * Step 5: payments from a screened address, each told once by `charge.screened` and never
   * counted, whatever the charge's status; its money is swept with the address (docs/charges.md,
   * "Screened payments").
   */
  private async announceScreened(networkId: number): Promise<void> {
    const payments = await pay.listUnannouncedScreened(this.ctx.store.db, networkId, SCREENED_BATCH);
    await this.announceEach(networkId, payments, async (trx, p, wallet, now) => {
      if (!(await pay.markScreenedNotified(trx, p.id))) return;
      if (p.tx_hash !== null && !(await pay.recordScreenedAnnouncement(trx, { ...p, tx_hash: p.tx_hash }, now))) return;
      const current = (await repo.findChargeById(trx, p.charge_id))!;
      const payload = chargeScreenedPayload(current, p);
      await recordEvent(trx, { userId: wallet.user_id, walletId: wallet.id, name: 'charge.screened', payload, nowMs: now });
      const fields = {
        charge_id: p.charge_id,
        tx_hash: p.tx_hash,
        from: p.from_address,
        amount: p.amount.toString(),
        status: current.status,
      };
      this.log.warn(fields, 'payment from an address blocked by screening: told by charge.screened, not counted');
    });
  }

  /**
   * Each payment announced in its own transaction, its locks taken in the one order of the
   * follower's transactions (a reorg's rollback among them: the cursor, the wallets, the users'
   * event orders, then the rows): the network's cursor, the user's event order, then (in
   * `announce`) the payment's row. The other way round (the payment's row, then the event order)
   * deadlocked on PostgreSQL with a rollback holding that event order and deleting the payment.
   */
  private async announceEach(
    networkId: number,
    payments: pay.PaymentRow[],
    announce: (trx: Executor, p: pay.PaymentRow, wallet: WalletView, now: number) => Promise<void>,
  ): Promise<void> {
    const db = this.ctx.store.db;
    for (const p of payments) {
      const charge = await repo.findChargeById(db, p.charge_id);
      const wallet = charge ? await findWalletView(db, charge.wallet_id) : undefined; // a wallet's user never changes
      if (!charge || !wallet) continue;
      await db.transaction().execute(async (trx) => {
        await pay.lockedCursorHeight(trx, networkId);
        await lockEventsOf(trx, [wallet.user_id]);
        await announce(trx, p, wallet, this.ctx.clock.nowMs());
      });
    }
  }
}
