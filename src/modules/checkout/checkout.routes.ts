/**
 * Public, outside the authenticated scope (no token, no API-key scope): the link is the
 * capability, as with a hosted invoice.
 *
 * GET /api/pay/{uuid}   the charge as the payer may see it (envelope)
 * GET /pay/{uuid}       the checkout page (HTML; a plain 404 page for an unknown uuid)
 * POST /api/pay/{uuid}/devnet   the local devnet's payer button (400 anywhere else)
 */
import { Type } from '@sinclair/typebox';
import { Errors } from '../../errors.js';
import { ok, responses } from '../../http/envelope.js';
import type { App } from '../../http/types.js';
import { CHECKOUT_CSP } from './checkout.assets.js';
import { notFoundPage } from './checkout.page.js';
import { PayParams, PublicChargeSchema } from './checkout.schemas.js';
import type { CheckoutService } from './checkout.service.js';
import { checkoutPageView, publicChargeView } from './checkout.views.js';

export const CHECKOUT_PAGE_HEADERS = {
  'content-type': 'text/html; charset=utf-8',
  'content-security-policy': CHECKOUT_CSP,
  'cache-control': 'no-store',
  'referrer-policy': 'no-referrer',
  'x-content-type-options': 'nosniff',
  'x-frame-options': 'DENY',
};

export async function checkoutRoutes(app: App, checkout: CheckoutService): Promise<void> {
  app.get(
    '/api/pay/:uuid',
    {
      schema: {
        tags: ['checkout'],
        summary: 'A charge as its payer sees it (public)',
        description:
          'What the hosted checkout page polls: status, amounts, token, deposit address, the EIP-681 `payment_uri`, the expiry and the merchant’s `content`; for a price charge its `price`, `paid_fraction` and `quotes`, each with its own `payment_uri`; and for the page, its `state` (whether it still takes payment: by the service’s clock, not the chain’s), the service’s clock `now_ms`, the `payments` seen (confirming, late) and the `refunds` sent back. Public, no token: anyone holding the uuid may read it, so nothing of the user, the wallet or `info` is in it. An unknown or malformed uuid is 404 `Charge not found`.',
        params: PayParams,
        security: [],
        response: responses(PublicChargeSchema),
      },
    },
    async (req) => {
      const charge = await checkout.find(req.params.uuid);
      if (!charge) throw Errors.chargeNotFound();
      const facts = { payments: await checkout.payments(charge), refunds: await checkout.refunds(charge) };
      return ok(publicChargeView(charge, facts, checkout.nowMs()), 'Charge retrieved');
    },
  );

  app.post(
    '/api/pay/:uuid/devnet',
    {
      schema: {
        tags: ['checkout'],
        summary: 'Pay a local-devnet charge from the devnet (public; the local devnet only)',
        description:
          'The checkout page’s payer button on the local devnet (chain id 31337, an anvil node): anvil’s dev account sends what the charge still asks in the native coin (a price charge: the rest of its price at its native quote), in a real transfer the service then sees as a payment. 400 for any other charge (a token charge or a price charge quoted only in tokens, one the page no longer takes payment for: settled, expired by the clock, or paid in full and confirming; any other network).',
        params: PayParams,
        security: [],
        response: responses(Type.Object({ tx_hash: Type.String() })),
      },
    },
    async (req) => {
      const charge = await checkout.find(req.params.uuid);
      if (!charge) throw Errors.chargeNotFound();
      return ok({ tx_hash: await checkout.payFromDevnet(charge) }, 'Paid from the devnet');
    },
  );

  app.get('/pay/:uuid', { schema: { hide: true } }, async (req, reply) => {
    const charge = await checkout.find((req.params as { uuid: string }).uuid);
    reply.headers(CHECKOUT_PAGE_HEADERS);
    if (!charge) return reply.code(404).send(notFoundPage());
    const [payments, refunds] = [await checkout.payments(charge), await checkout.refunds(charge)];
    return reply.send(await checkoutPageView(charge, { nowMs: checkout.nowMs(), payments, refunds }));
  });
}
