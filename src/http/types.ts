import type { FastifyBaseLogger, FastifyInstance, RawReplyDefaultExpression, RawRequestDefaultExpression, RawServerDefault } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { AuthUser } from '../modules/auth/auth.repository.js';
import type { WalletView } from '../modules/wallets/wallets.repository.js';

declare module 'fastify' {
  interface FastifyRequest {
    user: AuthUser | null;
    tokenId: number | null;
    /** The wallet of a `{wallet}` route, resolved by the wallet guard before validation. */
    wallet: WalletView | null;
  }
}

export type App = FastifyInstance<
  RawServerDefault,
  RawRequestDefaultExpression,
  RawReplyDefaultExpression,
  FastifyBaseLogger,
  TypeBoxTypeProvider
>;
