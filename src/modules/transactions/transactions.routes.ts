/**
 * GET  /wallet/{wallet}/transaction                      list, newest first, paginated in headers
 * POST /wallet/{wallet}/transaction/create               create (Idempotency-Key aware)
 * GET  /wallet/{wallet}/transaction/show/{transaction}   one, with its wallet_token
 * POST /wallet/{wallet}/transaction/{transaction}/speed-up, /cancel   replace at its nonce
 * GET  /wallet/{wallet}/transaction/fees                 fee preview at each level (sends nothing)
 * POST /wallet/{wallet}/transaction/{transaction}/approve, /reject   decide a held transfer (login token only)
 */
import { Type } from '@sinclair/typebox';
import type { FastifyRequest } from 'fastify';
import { Errors, validationError, type FieldErrors } from '../../errors.js';
import { ok, responses } from '../../http/envelope.js';
import { CHUNKED_FROM_ITEMS, sendEnvelopeInChunks } from '../../http/chunked-json.js';
import { pageOf, setPaginationHeaders } from '../../http/pagination.js';
import { commitResponse } from '../../http/idempotency.js';
import { parseId, requireWallet } from '../../http/auth.js';
import type { App } from '../../http/types.js';
import { refuseBlocked, type Screening } from '../screening/screening.js';
import { WalletParams } from '../wallets/wallets.schemas.js';
import type { TxRecord } from './transactions.repository.js';
import {
  CreateBody,
  CreatedTransactionSchema,
  FeePreviewQuery,
  FeePreviewSchema,
  ListQuery,
  parseCreateInput,
  parseFeeChoice,
  ReplaceBody,
  TransactionDetailSchema,
  TransactionParams,
  TransactionRef,
} from './transactions.schemas.js';
import type { TransactionService } from './transactions.service.js';
import { createdView, feePreviewView, transactionDetailView, transactionListItem, transactionView } from './transactions.views.js';

export async function transactionRoutes(app: App, txs: TransactionService, screening: Screening): Promise<void> {
  listRoute(app, txs);
  createRoute(app, txs, screening);
  feesRoute(app, txs);
  showRoute(app, txs);
  replaceRoute(app, txs, 'speed-up');
  replaceRoute(app, txs, 'cancel');
  decideRoute(app, txs, 'approve', screening);
  decideRoute(app, txs, 'reject', screening);
}

const LIST_MESSAGE = 'Transactions retrieved';

function listRoute(app: App, txs: TransactionService): void {
  app.get(
    '/wallet/:wallet/transaction',
    {
      schema: {
        tags: ['transactions'],
        summary: 'Transactions of the wallet, newest first (X-Pagination-* and Link headers)',
        description:
          'Newest first, paginated (`page`, `limit` up to 1000), filterable by token symbol; sends, receipts and sweeps with their status.',
        params: WalletParams,
        querystring: ListQuery,
        response: responses(Type.Array(TransactionRef)),
      },
    },
    async (req, reply) => {
      const q = { ...pageOf(req.query), token: req.query.token };
      const wallet = requireWallet(req);
      if (q.limit >= CHUNKED_FROM_ITEMS) {
        // The database writes each item's JSON itself (transactions.list.repository.ts), the same bytes.
        const json = await txs.listJson(wallet, q);
        if (json !== null) {
          setPaginationHeaders(req, reply, json, { token: q.token });
          return sendEnvelopeInChunks(reply, json.json, 'json', LIST_MESSAGE);
        }
      }
      const page = await txs.list(wallet, q);
      setPaginationHeaders(req, reply, page, { token: q.token });
      const items = page.items.map(transactionListItem);
      // A long page in chunks (src/http/chunked-json.ts): the same bytes, without one large string;
      // transactionListItem builds exactly TransactionSchema (test/http/serializer.test.ts).
      if (items.length >= CHUNKED_FROM_ITEMS) return sendEnvelopeInChunks(reply, items, 'exact', LIST_MESSAGE);
      return ok(items, LIST_MESSAGE);
    },
  );
}

function createRoute(app: App, txs: TransactionService, screening: Screening): void {
  app.post(
    '/wallet/:wallet/transaction/create',
    {
      schema: {
        tags: ['transactions'],
        summary: 'Sign, record and broadcast a native or ERC-20 transfer',
        description:
          'Signs and broadcasts a native or ERC-20 transfer from the wallet. Send an `Idempotency-Key` header to make retries safe. 400 when the balance (amount plus the maximum fee) does not cover it, and 400 `Address is blocked by screening` (nothing recorded) when `address` is on the SCREENING_FILE list.',
        params: WalletParams,
        body: CreateBody,
        response: responses(CreatedTransactionSchema, [409]),
      },
    },
    async (req) => {
      const wallet = requireWallet(req);
      const input = parseCreateInput(req.body as Record<string, unknown>, await txs.activeTokens(wallet));
      // The recipient of a transfer, or the contract of a call (a token call's own recipient: the policy).
      refuseBlocked(screening, [input.to]);
      const rec = await txs.create(wallet, input, { inTransaction: commitResponse(req, 'Transaction created', createdView) });
      return ok(createdView(rec), 'Transaction created');
    },
  );
}

function feesRoute(app: App, txs: TransactionService): void {
  app.get(
    '/wallet/:wallet/transaction/fees',
    {
      schema: {
        tags: ['transactions'],
        summary: 'Fee preview of a transfer at the low, medium and high levels',
        description:
          'Estimates the gas of the transfer `amount` of `token` to `address` and returns the base fee and, per level, the max fee and tip per gas unit and the most the transfer could cost in fees (gas × max fee + any L1 data fee). Nothing is signed or sent.',
        params: WalletParams,
        querystring: FeePreviewQuery,
        response: responses(FeePreviewSchema),
      },
    },
    async (req) => {
      const wallet = requireWallet(req);
      const input = parseCreateInput({ ...(req.query as Record<string, unknown>) }, await txs.activeTokens(wallet));
      return ok(feePreviewView(await txs.previewFees(wallet, input)), 'Fees estimated');
    },
  );
}

/** The `{transaction}` of the path, the wallet's own (404 `Transaction not found` otherwise), kept for the handler. */
function transactionLoader(txs: TransactionService, loaded: WeakMap<FastifyRequest, TxRecord>) {
  return async (req: FastifyRequest): Promise<void> => {
    const id = parseId((req.params as Record<string, unknown>).transaction);
    const rec = id === null ? undefined : await txs.find(requireWallet(req), id);
    if (!rec) throw Errors.transactionNotFound();
    loaded.set(req, rec);
  };
}

function showRoute(app: App, txs: TransactionService): void {
  const loaded = new WeakMap<FastifyRequest, TxRecord>();
  app.get(
    '/wallet/:wallet/transaction/show/:transaction',
    {
      schema: {
        tags: ['transactions'],
        summary: 'One transaction with its wallet token',
        description: 'A transaction by id, with its status, block, gas figures and the wallet token it moved.',
        params: TransactionParams,
        response: responses(TransactionDetailSchema),
      },
      preValidation: transactionLoader(txs, loaded),
    },
    async (req) => {
      const rec = loaded.get(req)!;
      return ok(transactionDetailView(rec, await txs.tokenOf(rec)), 'Transaction retrieved');
    },
  );
}

const REPLACE_DOCS = {
  'speed-up': {
    summary: 'Speed up a pending transaction (same nonce, higher fees)',
    description:
      'Re-signs the same call at the same nonce with fees at least 10% higher on both fee fields (or the `fee_level` quote, or explicit `max_fee_per_gas` / `max_priority_fee_per_gas`, if higher) and broadcasts it. The transaction keeps its id; `tx_hash` becomes the new hash and the earlier ones are listed in `replaced_hashes`; whichever mines wins. Only a pending outgoing transaction not yet mined: else 400 `Transaction cannot be replaced`. `Idempotency-Key` honoured as on creates: a retry replays the speed-up recorded, never signs another.',
  },
  cancel: {
    summary: 'Cancel a pending transaction (zero-value self-transfer at its nonce)',
    description:
      "Signs a zero-value transfer to the wallet's own address at the transaction's nonce, with fees at least 10% higher, and broadcasts it. If the cancel mines, the transaction becomes `failed` with `failure_reason` `cancelled` and its reservation is released; if the original mines first, it is confirmed as usual. Only a pending outgoing transaction not yet mined: else 400 `Transaction cannot be replaced`. `Idempotency-Key` honoured as on creates: a retry replays the cancel recorded.",
  },
} as const;

function replaceRoute(app: App, txs: TransactionService, kind: 'speed-up' | 'cancel'): void {
  const loaded = new WeakMap<FastifyRequest, TxRecord>();
  app.post(
    `/wallet/:wallet/transaction/:transaction/${kind}`,
    {
      // A retry with the same Idempotency-Key replays the replacement recorded, never signs another.
      config: { idempotency: true },
      schema: {
        tags: ['transactions'],
        ...REPLACE_DOCS[kind],
        params: TransactionParams,
        body: Type.Optional(ReplaceBody),
        response: responses(TransactionRef),
      },
      preValidation: transactionLoader(txs, loaded),
    },
    async (req) => {
      const errors: FieldErrors = {};
      const fees = parseFeeChoice((req.body ?? {}) as Record<string, unknown>, errors);
      if (Object.keys(errors).length > 0) throw validationError(errors);
      const message = kind === 'cancel' ? 'Transaction cancel sent' : 'Transaction sped up';
      const rec = await txs.replace(requireWallet(req), loaded.get(req)!, { kind, fees }, commitResponse(req, message, transactionView));
      return ok(transactionView(rec), message);
    },
  );
}

const DECIDE_DOCS = {
  approve: {
    summary: 'Approve a transaction awaiting approval (login token only): sign and send it',
    description:
      "A transfer over the policy's `approval_above` waits as `awaiting_approval`, nothing signed. Approving quotes it again (gas, fees at the level or explicit fees it was created with), checks the balance again, takes a nonce, signs and broadcasts it: it is then `pending` as any transfer (`transaction.created`). 400 `Transaction is not awaiting approval` once it is approved, rejected or expired; 400 `Insufficient balance for transaction`, and 400 `Address is blocked by screening` for a recipient listed since, leave it awaiting. Needs a login token: an API key gets 403.",
    message: 'Transaction approved',
  },
  reject: {
    summary: 'Reject a transaction awaiting approval (login token only)',
    description:
      'The held transfer becomes `failed` with `failure_reason` `rejected_by_approver` (`transaction.failed`); nothing was signed and its reservation is released. 400 `Transaction is not awaiting approval` once it is decided. Needs a login token: an API key gets 403.',
    message: 'Transaction rejected',
  },
} as const;

function decideRoute(app: App, txs: TransactionService, kind: 'approve' | 'reject', screening: Screening): void {
  const loaded = new WeakMap<FastifyRequest, TxRecord>();
  const { summary, description, message } = DECIDE_DOCS[kind];
  app.post(
    `/wallet/:wallet/transaction/:transaction/${kind}`,
    {
      config: { scope: 'login' },
      schema: { tags: ['transactions'], summary, description, params: TransactionParams, response: responses(TransactionRef, [403]) },
      preValidation: transactionLoader(txs, loaded),
    },
    async (req) => {
      const rec = loaded.get(req)!;
      // A recipient listed since the transfer was held is not paid: it stays held, to be rejected.
      if (kind === 'approve' && rec.status === 'awaiting_approval') refuseBlocked(screening, [rec.to_address]);
      const after = kind === 'approve' ? await txs.approve(requireWallet(req), rec) : await txs.approvals.reject(rec);
      return ok(transactionView(after), message);
    },
  );
}
