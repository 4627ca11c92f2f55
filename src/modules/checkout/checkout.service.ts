/**
 * The public side of a charge: what the checkout page and its JSON show to anyone holding the
 * charge's uuid (a random v4 uuid: the link is the capability, as with a hosted invoice).
 */
import { isUuid } from '../../lib/uuid.js';
import type { AppContext } from '../../context.js';
import { Errors } from '../../errors.js';
import { fundFromDevnet, NotDevnet } from '../networks/devnet-fund.js';
import { findNetwork } from '../networks/networks.repository.js';
import { amountDue, devnetPayable } from './checkout.page.js';
import { findCheckoutCharge, listPaymentHashes, type CheckoutRow } from './checkout.repository.js';

export class CheckoutService {
  constructor(private readonly ctx: AppContext) {}

  /** The charge with this uuid; undefined when there is none or `uuid` is not a uuid. */
  find(uuid: string): Promise<CheckoutRow | undefined> {
    if (!isUuid(uuid)) return Promise.resolve(undefined);
    return findCheckoutCharge(this.ctx.store.db, uuid.toLowerCase());
  }

  /** The transactions that paid a charge, for the explorer links of a paid page. */
  paymentHashes(c: CheckoutRow): Promise<string[]> {
    return c.status === 'paid' && c.block_explorer !== '' ? listPaymentHashes(this.ctx.store.db, c.id) : Promise.resolve([]);
  }

  /**
   * Pays what a devnet charge still asks from the devnet's dev account, in a real transfer the
   * service then sees like any payment; 400 on any other charge or network (devnet-fund.ts checks
   * the node is anvil too).
   */
  async payFromDevnet(c: CheckoutRow): Promise<string> {
    const network = await findNetwork(this.ctx.store.db, c.network_id);
    if (!network || !devnetPayable(c))
      throw Errors.badRequest('Only a pending native charge on the local devnet can be paid from the devnet');
    try {
      return (await fundFromDevnet(network, c.address, amountDue(c))).tx_hash;
    } catch (e) {
      if (e instanceof NotDevnet) throw Errors.badRequest('Only a pending native charge on the local devnet can be paid from the devnet');
      throw e;
    }
  }

  nowMs(): number {
    return this.ctx.clock.nowMs();
  }
}
