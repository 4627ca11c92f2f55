import { Type } from '@sinclair/typebox';
import type { FastifyRequest } from 'fastify';
import type { WalletTokenRow } from '../../db/types.js';
import { Errors } from '../../errors.js';
import { ok, responses } from '../../http/envelope.js';
import { parseId, requireWallet } from '../../http/auth.js';
import type { App } from '../../http/types.js';
import { readingMessage } from '../wallets/balances.service.js';
import { WalletParams } from '../wallets/wallets.schemas.js';
import { AddTokenBody, TokenParams, TokenWithBalanceSchema, WalletTokenRef } from './tokens.schemas.js';
import type { TokenService } from './tokens.service.js';

const TAGS = ['tokens'];

/** The `{token}` of a request, loaded after the wallet guard and before validation (404 before 422). */
function tokenLoader(tokens: TokenService) {
  const loaded = new WeakMap<FastifyRequest, WalletTokenRow>();
  return {
    async load(this: void, req: FastifyRequest): Promise<void> {
      const wallet = requireWallet(req);
      const id = parseId((req.params as Record<string, unknown>).token);
      const token = id === null ? undefined : await tokens.find(wallet, id);
      if (!token) throw Errors.tokenNotFound();
      loaded.set(req, token);
    },
    get(this: void, req: FastifyRequest): WalletTokenRow {
      const token = loaded.get(req);
      if (!token) throw Errors.tokenNotFound();
      return token;
    },
  };
}

export async function tokenRoutes(app: App, tokens: TokenService): Promise<void> {
  const token = tokenLoader(tokens);

  app.get(
    '/wallet/:wallet/tokens',
    {
      schema: {
        tags: TAGS,
        summary: "The wallet's tokens, active and removed",
        description: 'The native coin and the ERC-20 tokens of the wallet.',
        params: WalletParams,
        response: responses(Type.Array(WalletTokenRef)),
      },
    },
    async (req) => ok(await tokens.list(requireWallet(req)), 'Tokens retrieved'),
  );

  app.get(
    '/wallet/:wallet/token/:token',
    {
      preValidation: token.load,
      schema: {
        tags: TAGS,
        summary: 'One token with its balance',
        description: 'One token of the wallet with its balance read from the chain.',
        params: TokenParams,
        response: responses(TokenWithBalanceSchema, [502]),
      },
    },
    async (req) => {
      const { data, reading } = await tokens.show(requireWallet(req), token.get(req));
      return ok(data, readingMessage(reading, 'Token retrieved'));
    },
  );

  app.post(
    '/wallet/:wallet/token/add',
    {
      schema: {
        tags: TAGS,
        summary: 'Add an ERC-20 token by contract address or preset symbol (metadata read from the chain)',
        description:
          "Adds an ERC-20 token to the wallet, given its `contract` or, on a network registered from a preset, a `symbol` of the preset's stablecoins (USDC, USDT where the preset lists them); exactly one of the two. Its name, symbol and decimals are read from the contract, so the node must be reachable.",
        params: WalletParams,
        body: AddTokenBody,
        response: responses(WalletTokenRef),
      },
    },
    async (req) => {
      const wallet = requireWallet(req);
      return ok(await tokens.add(wallet, await tokens.resolveContract(wallet, req.body)), 'Token added');
    },
  );

  app.get(
    '/wallet/:wallet/token/remove/:token',
    {
      preValidation: token.load,
      schema: {
        tags: TAGS,
        summary: 'Remove a token (marks it inactive; the native token cannot be removed)',
        description: 'Marks the token inactive for the wallet: it leaves the balance and the lists; its history stays.',
        params: TokenParams,
        response: responses(WalletTokenRef),
      },
    },
    async (req) => ok(await tokens.remove(requireWallet(req), token.get(req)), 'Token removed'),
  );
}
