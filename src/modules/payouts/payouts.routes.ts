/**
 * POST /wallet/{wallet}/payout/create                 create (Idempotency-Key aware; transactions:write)
 * GET  /wallet/{wallet}/payout                        list, newest first, paginated in headers
 * GET  /wallet/{wallet}/payout/{payout}               one
 * POST /wallet/{wallet}/payout/{payout}/approve, /reject   decide a held payout (login token only)
 */
import { Type } from '@sinclair/typebox';
import type { FastifyRequest } from 'fastify';
import { Errors } from '../../errors.js';
import { ok, responses } from '../../http/envelope.js';
import { requireWallet } from '../../http/auth.js';
import { commitResponse } from '../../http/idempotency.js';
import { pageOf, PageQuerySchema, setPaginationHeaders } from '../../http/pagination.js';
import type { App } from '../../http/types.js';
import { WalletParams } from '../wallets/wallets.schemas.js';
import { CreatePayoutBody, parsePayoutInput, PayoutParams, PayoutRef } from './payouts.schemas.js';
import type { PayoutService, PayoutWithItems } from './payouts.service.js';
import { payoutView } from './payouts.views.js';
import type { TransactionService } from '../transactions/transactions.service.js';

const view = (p: PayoutWithItems) => payoutView(p.payout, p.items);

declare module 'fastify' {
  interface FastifyRequest {
    payout?: PayoutWithItems;
  }
}

export async function payoutRoutes(app: App, payouts: PayoutService, txs: TransactionService): Promise<void> {
  app.post(
    '/wallet/:wallet/payout/create',
    {
      schema: {
        tags: ['payouts'],
        summary: 'Pay many recipients at once (1 to 500 items)',
        description:
          'Checked as a whole before anything is sent: no item’s address on the SCREENING_FILE list (400 `Address is blocked by screening`, nothing recorded), the references (unique per wallet), the spending policy (each item’s limits and allowlist, the total’s daily limit; a total over `approval_above` waits for approval), and the balance for the total plus every item’s maximum fee (400 `Insufficient balance for payout`). Then each item becomes a transaction of its own, in item order, carrying `payout_id` and `reference`. Answers at once, `processing` (or `awaiting_approval`); the payouts worker sends the items.',
        params: WalletParams,
        body: CreatePayoutBody,
        response: responses(PayoutRef),
      },
    },
    async (req) => {
      const wallet = requireWallet(req);
      const input = parsePayoutInput(req.body as Record<string, unknown>, await txs.activeTokens(wallet));
      const created = await payouts.create(wallet, input, commitResponse(req, 'Payout created', view));
      return ok(view(created), 'Payout created');
    },
  );

  app.get(
    '/wallet/:wallet/payout',
    {
      schema: {
        tags: ['payouts'],
        summary: 'Payouts of the wallet, newest first (X-Pagination-* and Link headers)',
        description: 'Newest first, paginated.',
        params: WalletParams,
        querystring: Type.Object(PageQuerySchema),
        response: responses(Type.Array(PayoutRef)),
      },
    },
    async (req, reply) => {
      const { page, limit } = pageOf(req.query as { page?: number; limit?: number });
      const { items, total } = await payouts.list(requireWallet(req).id, page, limit);
      setPaginationHeaders(req, reply, { page, limit, total });
      return ok(items.map(view), 'Payouts retrieved');
    },
  );

  const load = async (req: FastifyRequest) => {
    const found = await payouts.find(requireWallet(req).id, (req.params as { payout: string }).payout);
    if (!found) throw Errors.payoutNotFound();
    req.payout = found;
  };

  app.get(
    '/wallet/:wallet/payout/:payout',
    {
      schema: {
        tags: ['payouts'],
        summary: 'A payout with its items',
        description: 'Its status and every item’s.',
        params: PayoutParams,
        response: responses(PayoutRef),
      },
      preValidation: load,
    },
    async (req) => ok(view(req.payout!), 'Payout retrieved'),
  );

  for (const kind of ['approve', 'reject'] as const) {
    app.post(
      `/wallet/:wallet/payout/:payout/${kind}`,
      {
        config: { scope: 'login' },
        schema: {
          tags: ['payouts'],
          summary:
            kind === 'approve'
              ? 'Approve a payout held for approval (login token only)'
              : 'Reject a payout held for approval (login token only)',
          description:
            kind === 'approve'
              ? 'Its items go out, in order, each policed and balance-checked when its turn comes. 400 `Payout is not awaiting approval` once decided or expired; 400 `Address is blocked by screening` when an item’s address was listed since (it stays held).'
              : 'It fails with nothing sent (`rejected_by_approver` on every item). 400 `Payout is not awaiting approval` once decided or expired.',
          params: PayoutParams,
          response: responses(PayoutRef, [403]),
        },
        preValidation: load,
      },
      async (req) => {
        const wallet = requireWallet(req);
        const id = req.payout!.payout.id;
        if (kind === 'approve') await payouts.approve(wallet, id);
        else await payouts.reject(wallet, id);
        return ok(view((await payouts.find(wallet.id, String(id)))!), kind === 'approve' ? 'Payout approved' : 'Payout rejected');
      },
    );
  }
}
