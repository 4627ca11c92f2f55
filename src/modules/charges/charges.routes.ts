/**
 * POST /wallet/{wallet}/charge/create          create (Idempotency-Key aware)
 * GET  /wallet/{wallet}/charge/show/{charge}   one, by id or uuid
 * GET  /wallet/{wallet}/charge                 list, newest first, paginated in headers
 * POST /wallet/{wallet}/charge/{charge}/sweep  sweeps a settled charge's address now (login token only)
 */
import { Type } from '@sinclair/typebox';
import type { FastifyRequest } from 'fastify';
import { Errors } from '../../errors.js';
import { ok, responses } from '../../http/envelope.js';
import { requireWallet } from '../../http/auth.js';
import { pageOf, PageQuerySchema, setPaginationHeaders } from '../../http/pagination.js';
import type { App } from '../../http/types.js';
import { commitResponse } from '../../http/idempotency.js';
import { WalletParams } from '../wallets/wallets.schemas.js';
import type { ChargeRow } from './charges.repository.js';
import { ChargeParams, ChargeRef, CreateChargeBody, parseChargeInput } from './charges.schemas.js';
import type { ChargeService } from './charges.service.js';
import { chargeView } from './charges.views.js';
import { showsRefundLinks } from '../refunds/refunds.views.js';

declare module 'fastify' {
  interface FastifyRequest {
    charge?: ChargeRow;
  }
}

export async function chargeRoutes(app: App, charges: ChargeService, publicUrl: string): Promise<void> {
  // A read key sees its refunds' uuid and claim_url as null (refunds.views.ts, showsRefundLinks).
  const viewFor = (req: FastifyRequest) => (c: ChargeRow) => chargeView(c, publicUrl, showsRefundLinks(req.apiKey));
  app.post(
    '/wallet/:wallet/charge/create',
    {
      schema: {
        tags: ['charges'],
        summary: 'Create a charge with its own deposit address',
        description:
          'A payment request: a fresh deposit address derived from the wallet, an amount of one of its tokens and an expiry. The payer pays to `address` (or scans `payment_uri`); the charge turns paid, expired or failed and each change is an event.',
        params: WalletParams,
        body: CreateChargeBody,
        response: responses(ChargeRef),
      },
    },
    async (req) => {
      const wallet = requireWallet(req);
      const input = parseChargeInput(req.body, await charges.activeTokens(wallet));
      const view = viewFor(req);
      const charge = await charges.create(wallet, input, { inTransaction: commitResponse(req, 'Charge created', view) });
      return ok(view(charge), 'Charge created');
    },
  );

  app.get(
    '/wallet/:wallet/charge/show/:charge',
    {
      schema: {
        tags: ['charges'],
        summary: 'A charge by id or uuid',
        description:
          'One charge by its numeric id or its uuid, with what has been paid so far and its refunds (a refund’s `uuid` and `claim_url` are null to an API key without `charges:write` or `transactions:write`: a claim link names where the money goes).',
        params: ChargeParams,
        response: responses(ChargeRef),
      },
      preValidation: async (req: FastifyRequest) => {
        const ref = (req.params as { charge: string }).charge;
        const charge = await charges.find(requireWallet(req).id, ref);
        if (!charge) throw Errors.chargeNotFound();
        req.charge = charge;
      },
    },
    async (req) => ok(viewFor(req)(req.charge!), 'Charge retrieved'),
  );

  app.post(
    '/wallet/:wallet/charge/:charge/sweep',
    {
      config: { scope: 'login' },
      schema: {
        tags: ['charges'],
        summary: 'Sweep a settled charge’s deposit address now (login token only)',
        description:
          'Looks at the deposit address of a settled charge now instead of at its next due look or the daily reconciliation: money sent there after its watch ended (`after_watch` in the reconciliation) is recorded as a late payment (`charge.delayed`), and what the address holds is swept to the main address. Answers the charge with its `payments` and `sweeps`. Needs a login token: an API key gets 403. A pending charge: 400.',
        params: ChargeParams,
        response: responses(ChargeRef),
      },
      preValidation: async (req: FastifyRequest) => {
        const charge = await charges.find(requireWallet(req).id, (req.params as { charge: string }).charge);
        if (!charge) throw Errors.chargeNotFound();
        req.charge = charge;
      },
    },
    async (req) => ok(viewFor(req)(await charges.sweepNow(requireWallet(req), req.charge!)), 'Charge swept'),
  );

  app.get(
    '/wallet/:wallet/charge',
    {
      schema: {
        tags: ['charges'],
        summary: 'Charges of the wallet, newest first (X-Pagination-* and Link headers)',
        description:
          'Newest first, paginated, filterable by status. A refund’s `uuid` and `claim_url` are null to an API key without `charges:write` or `transactions:write`.',
        params: WalletParams,
        querystring: Type.Object(PageQuerySchema),
        response: responses(Type.Array(ChargeRef)),
      },
    },
    async (req, reply) => {
      const { page, limit } = pageOf(req.query as { page?: number; limit?: number });
      const { items, total } = await charges.list(requireWallet(req).id, page, limit);
      setPaginationHeaders(req, reply, { page, limit, total });
      return ok(items.map(viewFor(req)), 'Charges retrieved');
    },
  );
}
