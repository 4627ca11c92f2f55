import type { FastifyBaseLogger, FastifyInstance, RawReplyDefaultExpression, RawRequestDefaultExpression, RawServerDefault } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { AuthUser } from '../modules/auth/auth.repository.js';
import type { WalletView } from '../modules/wallets/wallets.repository.js';
import type { KeyScope, RouteScope } from '../modules/keys/keys.scopes.js';

declare module 'fastify' {
  interface FastifyRequest {
    user: AuthUser | null;
    tokenId: number | null;
    /** The wallet of a `{wallet}` route, resolved by the wallet guard before validation. */
    wallet: WalletView | null;
    /** The API key the request came with (null with a login token). */
    apiKey: { id: number; scopes: KeyScope[] } | null;
  }
  interface FastifyInstance {
    /** Every registered route with the API-key scope it resolved to (null: outside the authenticated scope). */
    routeTable(): { method: string | string[]; url: string; scope: RouteScope | null }[];
  }
  interface FastifyContextConfig {
    /** What an API key needs to call this route (src/modules/keys/keys.scopes.ts). */
    scope?: RouteScope;
    /** false: the route takes no Idempotency-Key (its response must not be stored); true: a POST that is not `.../create` takes one. */
    idempotency?: boolean;
    /** The answer carries a secret or a credential: `Cache-Control: no-store`. */
    noStore?: boolean;
    /** Counted in the per-user rate limit but never refused by it (logout: a token can always be ended). */
    neverLimited?: boolean;
  }
}

export type App = FastifyInstance<
  RawServerDefault,
  RawRequestDefaultExpression,
  RawReplyDefaultExpression,
  FastifyBaseLogger,
  TypeBoxTypeProvider
>;
