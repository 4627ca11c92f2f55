/**
 * The public side of a charge: what the checkout page and its JSON show to anyone holding the
 * charge's uuid (a random v4 uuid: the link is the capability, as with a hosted invoice).
 */
import { isUuid } from '../../lib/uuid.js';
import type { AppContext } from '../../context.js';
import { Errors } from '../../errors.js';
import { fundFromDevnet, NotDevnet } from '../networks/devnet-fund.js';
import { findNetwork } from '../networks/networks.repository.js';
import { devnetPayable } from './checkout.page.js';
import { findCheckoutCharge, listCheckoutPayments, listCheckoutRefunds, type CheckoutRow } from './checkout.repository.js';
import { dueIn, nativeQuote, seenPayments, seenShare, sentRefunds, type SeenPayment, type SentRefund } from './checkout.state.js';

export class CheckoutService {
  constructor(private readonly ctx: AppContext) {}

  /** The charge with this uuid; undefined when there is none or `uuid` is not a uuid. */
  find(uuid: string): Promise<CheckoutRow | undefined> {
    if (!isUuid(uuid)) return Promise.resolve(undefined);
    return findCheckoutCharge(this.ctx.store.db, uuid.toLowerCase());
  }

  /** The payments seen on the charge's address, confirmed or not, late or not (none screened). */
  async payments(c: CheckoutRow): Promise<SeenPayment[]> {
    return seenPayments(c, await listCheckoutPayments(this.ctx.store.db, c.id));
  }

  /** The refunds sent back to the payer (a claim not yet used is not one). */
  async refunds(c: CheckoutRow): Promise<SentRefund[]> {
    return sentRefunds(await listCheckoutRefunds(this.ctx.store.db, c.id));
  }

  /**
   * Pays what a devnet charge still asks from the devnet's dev account, in a real transfer the
   * service then sees like any payment, in the network's coin (a price charge: what is due at its
   * native quote); 400 on any other charge or network, and once the page no longer offers payment
   * (expired by the clock, or paid in full while confirming): the button never makes a late
   * payment (devnet-fund.ts checks the node is anvil too).
   */
  async payFromDevnet(c: CheckoutRow): Promise<string> {
    const network = await findNetwork(this.ctx.store.db, c.network_id);
    const payments = await this.payments(c);
    if (network && c.status === 'pending' && this.nowMs() >= c.expires_at)
      throw Errors.badRequest('The payment request has expired; nothing was sent');
    if (!network || !devnetPayable(c, payments, this.nowMs()))
      throw Errors.badRequest('Only a pending native charge on the local devnet can be paid from the devnet');
    try {
      return (await fundFromDevnet(network, c.address, dueIn(nativeQuote(c)!, seenShare(c, payments)))).tx_hash;
    } catch (e) {
      if (e instanceof NotDevnet) throw Errors.badRequest('Only a pending native charge on the local devnet can be paid from the devnet');
      throw e;
    }
  }

  nowMs(): number {
    return this.ctx.clock.nowMs();
  }
}
