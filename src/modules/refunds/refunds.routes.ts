/**
 * POST /api/wallet/{wallet}/charge/{charge}/refund   a refund of the charge (Idempotency-Key aware; scope charges:write,
 *                                                    and transactions:write too with an `address`)
 *
 * Public, outside the authenticated scope (the link is the capability, as with the checkout):
 * GET  /api/refund/{uuid}   the refund as its payer may see it
 * POST /api/refund/{uuid}   the payer's address for a claim: the transfer is sent, once
 * GET  /refund/{uuid}       the claim page (HTML)
 */
import { isUuid } from '../../lib/uuid.js';
import type { FastifyRequest } from 'fastify';
import { Errors } from '../../errors.js';
import { ok, responses } from '../../http/envelope.js';
import { requireWallet } from '../../http/auth.js';
import { allows } from '../keys/keys.scopes.js';
import { commitResponse } from '../../http/idempotency.js';
import type { App } from '../../http/types.js';
import { ChargeParams } from '../charges/charges.schemas.js';
import type { ChargeService } from '../charges/charges.service.js';
import { CHECKOUT_PAGE_HEADERS } from '../checkout/checkout.routes.js';
import type { RefundRow } from './refunds.repository.js';
import {
  ClaimBody,
  CreateRefundBody,
  parseClaimAddress,
  parseRefundInput,
  PublicRefundRef,
  RefundParams,
  RefundRef,
} from './refunds.schemas.js';
import type { RefundService } from './refunds.service.js';
import { publicRefundView, refundView, showsRefundLinks } from './refunds.views.js';
import { REFUND_CSP, refundNotFoundPage, refundPage } from './refunds.page.js';

/** Whether a create body names an address (a refund sent at once); absent or null: a claim. */
export function namesAddress(body: unknown): boolean {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return false;
  const address = (body as Record<string, unknown>).address;
  return address !== undefined && address !== null;
}

/**
 * docs/money-out.md, "Refunds": a refund with an `address` moves money at once, so an
 * API key needs `transactions:write` for it besides the route's `charges:write` (a claim does
 * not: the payer names the address); a login token and `*` may. Decided on the parsed body
 * (any `address` but null, a malformed one too), so it is an instance hook of the route's own
 * context: it runs after the route's scope (onRequest) and before the route-level preValidation
 * (the wallet's and the charge's 404), the 422s, the Idempotency-Key claim (a 403 is never stored
 * for replay) and any state change: every 403 before any 404, as the order of checks has it.
 */
async function addressScope(req: FastifyRequest): Promise<void> {
  if (req.apiKey && namesAddress(req.body) && !allows(req.apiKey.scopes, 'transactions:write')) throw Errors.insufficientScope();
}

export async function refundRoutes(app: App, refunds: RefundService, charges: ChargeService, publicUrl: string): Promise<void> {
  await app.register(async (scoped) => {
    scoped.addHook('preValidation', addressScope);
    createRoute(scoped as unknown as App, refunds, charges, publicUrl);
  });
}

function createRoute(app: App, refunds: RefundService, charges: ChargeService, publicUrl: string): void {
  app.post(
    '/wallet/:wallet/charge/:charge/refund',
    {
      config: { idempotency: true },
      schema: {
        tags: ['charges'],
        summary: 'Refund a charge (whole, partial, or as a claim the payer completes)',
        description:
          'With `address`: a transfer of the charge’s token from the main address, reserved, policed and tracked like any transaction (`refund_id` on it). Without: a claim, whose public `claim_url` lets the payer give an address once. The refunds not failed or expired never pass what the charge’s confirmed payments brought (a screened payment, from an address on the SCREENING_FILE list, is not counted) (400 `Refund exceeds the amount received`); a charge with no payment: 400 `Nothing to refund`. Idempotency-Key honoured as on creates.\n\n' +
          'Scopes: a claim needs `charges:write`; a refund with `address` (any value but null, a malformed one too) moves money at once and needs `transactions:write` as well: a key with `charges:write` alone gets 403 `Insufficient scope`, a key with `transactions:write` alone gets it for any refund (the route’s own scope). A login token and a `*` key may do both. The address check comes right after the route’s scope, before the wallet’s and the charge’s 404, the 422s, the Idempotency-Key and anything recorded or sent. A refund’s `uuid` and `claim_url` are shown to login tokens and keys with `charges:write` or `transactions:write` only (null to others).',
        params: ChargeParams,
        body: CreateRefundBody,
        response: responses(RefundRef),
      },
      preValidation: async (req: FastifyRequest) => {
        const charge = await charges.find(requireWallet(req).id, (req.params as { charge: string }).charge);
        if (!charge) throw Errors.chargeNotFound();
        req.charge = charge;
      },
    },
    async (req) => {
      const charge = req.charge!;
      const view = (r: RefundRow) => refundView(r, refunds.nowMs(), publicUrl, showsRefundLinks(req.apiKey));
      const input = parseRefundInput(req.body as Record<string, unknown>, charge.decimals);
      const refund = await refunds.create(requireWallet(req), charge, input, commitResponse(req, 'Refund created', view));
      return ok(view(refund), 'Refund created');
    },
  );
}

export async function publicRefundRoutes(app: App, refunds: RefundService): Promise<void> {
  const find = async (uuid: string) => (isUuid(uuid) ? refunds.findByUuid(uuid) : undefined);
  app.get(
    '/api/refund/:uuid',
    {
      schema: {
        tags: ['refunds'],
        summary: 'A refund as its payer sees it (public)',
        description:
          'What the claim page polls: the refund, the network’s name, the merchant’s `reason`, and once claimed the `address` and the transaction (`tx_hash`, and `tx_url` on the network’s block explorer when it has one). Public, no token: anyone holding the uuid may read it, so nothing else of the merchant, the wallet or the charge is in it. Unknown: 404 `Refund not found`.',
        params: RefundParams,
        security: [],
        response: responses(PublicRefundRef),
      },
    },
    async (req) => {
      const refund = await find(req.params.uuid);
      if (!refund) throw Errors.refundNotFound();
      return ok(publicRefundView(refund, refunds.nowMs()), 'Refund retrieved');
    },
  );

  app.post(
    '/api/refund/:uuid',
    {
      schema: {
        tags: ['refunds'],
        summary: 'Claim a refund: the payer gives the address (public)',
        description:
          'Sends the refund to `address`, once: a bad address is 422; a refund already claimed (or created with an address) 400 `Refund already claimed`; after REFUND_CLAIM_TTL_S 400 `Refund claim expired`. The wallet’s spending policy applies as to any transfer.',
        params: RefundParams,
        body: ClaimBody,
        security: [],
        response: responses(PublicRefundRef),
      },
      preValidation: async (req: FastifyRequest) => {
        if (!(await find((req.params as { uuid: string }).uuid))) throw Errors.refundNotFound();
      },
    },
    async (req) => {
      const to = parseClaimAddress(req.body as Record<string, unknown>);
      const refund = await refunds.claim(req.params.uuid, to);
      return ok(publicRefundView(refund, refunds.nowMs()), 'Refund claimed');
    },
  );

  app.get('/refund/:uuid', { schema: { hide: true } }, async (req, reply) => {
    const refund = await find((req.params as { uuid: string }).uuid);
    reply.headers({ ...CHECKOUT_PAGE_HEADERS, 'content-security-policy': REFUND_CSP });
    if (!refund) return reply.code(404).send(refundNotFoundPage());
    return reply.send(refundPage(publicRefundView(refund, refunds.nowMs())));
  });
}
