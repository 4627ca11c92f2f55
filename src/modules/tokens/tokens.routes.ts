import { Type } from '@sinclair/typebox';
import type { FastifyRequest } from 'fastify';
import type { WalletTokenRow } from '../../db/types.js';
import { Errors } from '../../errors.js';
import { ok, responses } from '../../http/envelope.js';
import { parseId, requireWallet } from '../../http/auth.js';
import type { App } from '../../http/types.js';
import { readingMessage } from '../wallets/balances.service.js';
import { WalletParams } from '../wallets/wallets.schemas.js';
import { AddTokenBody, TokenParams } from './tokens.schemas.js';
import type { TokenService } from './tokens.service.js';
import { TokenWithBalanceSchema, WalletTokenSchema } from './tokens.views.js';

export async function tokenRoutes(app: App, tokens: TokenService): Promise<void> {
  // The `{token}` of a request, loaded after the wallet guard and before validation (404 before 422).
  const loaded = new WeakMap<FastifyRequest, WalletTokenRow>();

  async function loadToken(req: FastifyRequest): Promise<void> {
    const wallet = requireWallet(req);
    const id = parseId((req.params as Record<string, unknown>).token);
    const token = id === null ? undefined : await tokens.find(wallet, id);
    if (!token) throw Errors.tokenNotFound();
    loaded.set(req, token);
  }

  function requireToken(req: FastifyRequest): WalletTokenRow {
    const token = loaded.get(req);
    if (!token) throw Errors.tokenNotFound();
    return token;
  }

  app.get(
    '/wallet/:wallet/tokens',
    {
      schema: {
        tags: ['tokens'],
        summary: "The wallet's tokens, active and removed",
        params: WalletParams,
        response: responses(Type.Array(WalletTokenSchema)),
      },
    },
    async (req) => ok(await tokens.list(requireWallet(req)), 'Tokens retrieved'),
  );

  app.get(
    '/wallet/:wallet/token/:token',
    {
      preValidation: loadToken,
      schema: {
        tags: ['tokens'],
        summary: 'One token with its balance',
        params: TokenParams,
        response: responses(TokenWithBalanceSchema, [502]),
      },
    },
    async (req) => {
      const { data, reading } = await tokens.show(requireWallet(req), requireToken(req));
      return ok(data, readingMessage(reading, 'Token retrieved'));
    },
  );

  app.post(
    '/wallet/:wallet/token/add',
    {
      schema: {
        tags: ['tokens'],
        summary: 'Add an ERC-20 token by contract address (metadata read from the chain)',
        params: WalletParams,
        body: AddTokenBody,
        response: responses(WalletTokenSchema),
      },
    },
    async (req) => ok(await tokens.add(requireWallet(req), req.body.contract), 'Token added'),
  );

  app.get(
    '/wallet/:wallet/token/remove/:token',
    {
      preValidation: loadToken,
      schema: {
        tags: ['tokens'],
        summary: 'Remove a token (marks it inactive; the native token cannot be removed)',
        params: TokenParams,
        response: responses(WalletTokenSchema),
      },
    },
    async (req) => ok(await tokens.remove(requireWallet(req), requireToken(req)), 'Token removed'),
  );
}
