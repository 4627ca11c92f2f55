/**
 * GET  /wallet/{wallet}/transaction                      list, newest first, paginated in headers
 * POST /wallet/{wallet}/transaction/create               create (Idempotency-Key aware)
 * GET  /wallet/{wallet}/transaction/show/{transaction}   one, with its wallet_token
 */
import { Type } from '@sinclair/typebox';
import type { FastifyRequest } from 'fastify';
import { Errors } from '../../errors.js';
import { ok, responses } from '../../http/envelope.js';
import { pageOf, setPaginationHeaders } from '../../http/pagination.js';
import { commitResponse } from '../../http/idempotency.js';
import { parseId, requireWallet } from '../../http/auth.js';
import type { App } from '../../http/types.js';
import { WalletParams } from '../wallets/wallets.schemas.js';
import type { TxRecord } from './transactions.repository.js';
import { CreateBody, CreatedTransactionSchema, ListQuery, TransactionDetailSchema, TransactionParams, TransactionSchema } from './transactions.schemas.js';
import type { TransactionService } from './transactions.service.js';
import { createdView, transactionDetailView, transactionView } from './transactions.views.js';

export async function transactionRoutes(app: App, txs: TransactionService): Promise<void> {
  const loaded = new WeakMap<FastifyRequest, TxRecord>();

  app.get(
    '/wallet/:wallet/transaction',
    {
      schema: {
        tags: ['transactions'],
        summary: 'Transactions of the wallet, newest first (X-Pagination-* and Link headers)',
        params: WalletParams,
        querystring: ListQuery,
        response: responses(Type.Array(TransactionSchema)),
      },
    },
    async (req, reply) => {
      const q = { ...pageOf(req.query), token: req.query.token };
      const page = await txs.list(requireWallet(req), q);
      setPaginationHeaders(req, reply, page, { token: q.token });
      return ok(page.items.map(transactionView), 'Transactions retrieved');
    },
  );

  app.post(
    '/wallet/:wallet/transaction/create',
    {
      schema: {
        tags: ['transactions'],
        summary: 'Sign, record and broadcast a native or ERC-20 transfer',
        params: WalletParams,
        body: CreateBody,
        response: responses(CreatedTransactionSchema, [409]),
      },
    },
    async (req) => {
      const rec = await txs.create(requireWallet(req), req.body as Record<string, unknown>, {
        inTransaction: commitResponse(req, 'Transaction created', createdView),
      });
      return ok(createdView(rec), 'Transaction created');
    },
  );

  app.get(
    '/wallet/:wallet/transaction/show/:transaction',
    {
      schema: {
        tags: ['transactions'],
        summary: 'One transaction with its wallet token',
        params: TransactionParams,
        response: responses(TransactionDetailSchema),
      },
      preValidation: async (req) => {
        const id = parseId((req.params as Record<string, unknown>).transaction);
        const rec = id === null ? undefined : await txs.find(requireWallet(req), id);
        if (!rec) throw Errors.transactionNotFound();
        loaded.set(req, rec);
      },
    },
    async (req) => {
      const rec = loaded.get(req)!;
      return ok(transactionDetailView(rec, await txs.tokenOf(rec)), 'Transaction retrieved');
    },
  );
}
