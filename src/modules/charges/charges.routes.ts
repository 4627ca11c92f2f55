import { Type } from '@sinclair/typebox';
import type { FastifyRequest } from 'fastify';
import { Errors } from '../../errors.js';
import { ok, responses } from '../../http/envelope.js';
import { requireWallet } from '../../http/auth.js';
import { pageOf, PageQuerySchema, setPaginationHeaders } from '../../http/pagination.js';
import type { App } from '../../http/types.js';
import { commitResponse } from '../../http/idempotency.js';
import type { ChargeRow } from './charges.repository.js';
import { CHARGE_EXPIRES_MAX_S, CHARGE_EXPIRES_MIN_S, type ChargeService } from './charges.service.js';
import { ChargeSchema, chargeView } from './charges.views.js';

const JsonObject = Type.Object({}, { additionalProperties: true });

export const CreateChargeBody = Type.Object({
  amount: Type.Unknown({ description: 'Decimal string or number, > 0, at most the token’s decimals' }),
  token: Type.Unknown({ description: 'Symbol of an active token of the wallet' }),
  expires: Type.Optional(Type.Integer({ minimum: CHARGE_EXPIRES_MIN_S, maximum: CHARGE_EXPIRES_MAX_S, description: 'Seconds, default 300' })),
  content: Type.Optional(Type.Union([JsonObject, Type.Null()], { description: 'What the payer sees; a JSON object up to 16 KiB' })),
  info: Type.Optional(Type.Union([JsonObject, Type.Null()], { description: 'Merchant metadata; a JSON object up to 16 KiB' })),
});

declare module 'fastify' {
  interface FastifyRequest {
    charge?: ChargeRow;
  }
}

export async function chargeRoutes(app: App, charges: ChargeService): Promise<void> {
  app.post(
    '/wallet/:wallet/charge/create',
    {
      schema: {
        tags: ['charges'],
        summary: 'Create a charge with its own deposit address',
        params: Type.Object({ wallet: Type.String() }),
        body: CreateChargeBody,
        response: responses(ChargeSchema),
      },
    },
    async (req) =>
      ok(chargeView(await charges.create(requireWallet(req), req.body as never, { inTransaction: commitResponse(req, 'Charge created', chargeView) })), 'Charge created'),
  );

  app.get(
    '/wallet/:wallet/charge/show/:charge',
    {
      schema: { tags: ['charges'], summary: 'A charge by id or uuid', params: Type.Object({ wallet: Type.String(), charge: Type.String() }), response: responses(ChargeSchema) },
      preValidation: async (req: FastifyRequest) => {
        const ref = (req.params as { charge: string }).charge;
        const charge = await charges.find(requireWallet(req).id, ref);
        if (!charge) throw Errors.chargeNotFound();
        req.charge = charge;
      },
    },
    async (req) => ok(chargeView(req.charge!), 'Charge retrieved'),
  );

  app.get(
    '/wallet/:wallet/charge',
    {
      schema: {
        tags: ['charges'],
        summary: 'Charges of the wallet, newest first (X-Pagination-* and Link headers)',
        params: Type.Object({ wallet: Type.String() }),
        querystring: Type.Object(PageQuerySchema),
        response: responses(Type.Array(ChargeSchema)),
      },
    },
    async (req, reply) => {
      const { page, limit } = pageOf(req.query as { page?: number; limit?: number });
      const { items, total } = await charges.list(requireWallet(req).id, page, limit);
      setPaginationHeaders(req, reply, { page, limit, total });
      return ok(items.map(chargeView), 'Charges retrieved');
    },
  );
}
