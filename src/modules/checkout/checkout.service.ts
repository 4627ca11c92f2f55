/**
 * The public side of a charge: what the checkout page and its JSON show to anyone holding the
 * charge's uuid (a random v4 uuid: the link is the capability, as with a hosted invoice).
 */
import type { AppContext } from '../../context.js';
import { findCheckoutCharge, listPaymentHashes, type CheckoutRow } from './checkout.repository.js';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export class CheckoutService {
  constructor(private readonly ctx: AppContext) {}

  /** The charge with this uuid; undefined when there is none or `uuid` is not a uuid. */
  find(uuid: string): Promise<CheckoutRow | undefined> {
    if (!UUID.test(uuid)) return Promise.resolve(undefined);
    return findCheckoutCharge(this.ctx.store.db, uuid.toLowerCase());
  }

  /** The transactions that paid a charge, for the explorer links of a paid page. */
  paymentHashes(c: CheckoutRow): Promise<string[]> {
    return c.status === 'paid' && c.block_explorer !== '' ? listPaymentHashes(this.ctx.store.db, c.id) : Promise.resolve([]);
  }

  nowMs(): number {
    return this.ctx.clock.nowMs();
  }
}
