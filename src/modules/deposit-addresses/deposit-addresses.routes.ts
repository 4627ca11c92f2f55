/**
 * POST /wallet/{wallet}/deposit-address/create   create (Idempotency-Key aware)
 * GET  /wallet/{wallet}/deposit-address          list, newest first, paginated in headers
 * GET  /wallet/{wallet}/deposit-address/{deposit_address}   one, with what it received
 */
import { Type, type Static } from '@sinclair/typebox';
import { ok, responses } from '../../http/envelope.js';
import { commitResponse } from '../../http/idempotency.js';
import { requireWallet } from '../../http/auth.js';
import { pageOf, PageQuerySchema, setPaginationHeaders } from '../../http/pagination.js';
import type { App } from '../../http/types.js';
import { WalletParams } from '../wallets/wallets.schemas.js';
import {
  CreateDepositAddressBody,
  DepositAddressDetailRef,
  DepositAddressParams,
  DepositAddressRef,
  parseDepositAddressInput,
} from './deposit-addresses.schemas.js';
import { depositAddressNotFound, type DepositAddressService } from './deposit-addresses.service.js';
import { depositAddressDetailView, depositAddressView } from './deposit-addresses.views.js';

export async function depositAddressRoutes(app: App, service: DepositAddressService): Promise<void> {
  app.post(
    '/wallet/:wallet/deposit-address/create',
    {
      config: { scope: 'charges:write' },
      schema: {
        tags: ['deposit-addresses'],
        summary: 'Create a permanent deposit address',
        description:
          'An address of the wallet, kept for good under your `reference` (unique per wallet: 422 on a repeat): every confirmed transfer to it, of the native coin or any active token of the wallet, becomes a `receipt` transaction of the wallet carrying `deposit_address_id` and `reference` (with its `transaction.*` events), and its money is swept to the main address. Keyless where the network has a Sweeper, else keyed.',
        params: WalletParams,
        body: CreateDepositAddressBody,
        response: responses(DepositAddressRef),
      },
    },
    async (req) => {
      const wallet = requireWallet(req);
      const input = parseDepositAddressInput(req.body as Static<typeof CreateDepositAddressBody>);
      const row = await service.create(wallet, input, {
        inTransaction: commitResponse(req, 'Deposit address created', depositAddressView),
      });
      return ok(depositAddressView(row), 'Deposit address created');
    },
  );

  app.get(
    '/wallet/:wallet/deposit-address/:deposit_address',
    {
      schema: {
        tags: ['deposit-addresses'],
        summary: 'A deposit address, with what it received',
        description:
          '`received`: per token, the sum of the confirmed receipts to the address (its `receipt` transactions, listed in the wallet’s transactions with `deposit_address_id`). Another wallet’s address, or an unknown id: 404.',
        params: DepositAddressParams,
        response: responses(DepositAddressDetailRef),
      },
    },
    async (req) => {
      const found = await service.find(requireWallet(req).id, (req.params as { deposit_address: string }).deposit_address);
      if (!found) throw depositAddressNotFound();
      return ok(depositAddressDetailView(found.row, found.received, found.sweeps), 'Deposit address retrieved');
    },
  );

  app.get(
    '/wallet/:wallet/deposit-address',
    {
      schema: {
        tags: ['deposit-addresses'],
        summary: 'Deposit addresses of the wallet, newest first (X-Pagination-* and Link headers)',
        description: 'Newest first, paginated as the other lists.',
        params: WalletParams,
        querystring: Type.Object(PageQuerySchema),
        response: responses(Type.Array(DepositAddressRef)),
      },
    },
    async (req, reply) => {
      const { page, limit } = pageOf(req.query as { page?: number; limit?: number });
      const { items, total } = await service.list(requireWallet(req).id, page, limit);
      setPaginationHeaders(req, reply, { page, limit, total });
      return ok(items.map(depositAddressView), 'Deposit addresses retrieved');
    },
  );
}
