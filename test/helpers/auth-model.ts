/**
 * The contract's order of checks (docs/architecture.md, "HTTP" and "Authentication";
 * docs/integrating.md, "1. Create an API key"),
 * written out as a pure function of a route's declared scope, the credential and the path values,
 * for the property test of the auth and scope layer (test/http/auth-properties.test.ts). It
 * imports nothing from the service but types: it is the test's own reading of the contract.
 *
 * 1. No `Authorization` header, or not the Bearer scheme: 401 `Unauthenticated`.
 * 2. An expired, revoked, malformed or unknown token or key: 401 `Invalid token`.
 * 3. (429: never here, the limits are set high.)
 * 4. An API key outside its scopes, or on a login-only route: 403 `Insufficient scope`. The
 *    scopes are the route's and those its JSON body asks for (`bodyScopes`: a refund with an
 *    `address` needs `transactions:write` too), all checked here, before any 404.
 * 5. The wallet: 404 `Wallet not found` (another user's, missing, non-integer).
 * 6. The route's other path objects, in path order: their own 404.
 * 7. Then the route itself (validation 422, business rules 400, success).
 * Public routes (scope null) answer the same whatever the credential.
 */
import type { KeyScope, RouteScope } from '../../src/modules/keys/keys.scopes.js';

/** The scopes an API key may hold (docs/integrating.md, "1. Create an API key"). */
export const CONTRACT_KEY_SCOPES = [
  'read',
  'charges:write',
  'transactions:write',
  'wallets:write',
  'webhooks:write',
  '*',
] as const satisfies readonly KeyScope[];

/** Who a credential belongs to: the owner of the fixtures (A), another user (B), or nobody. */
export type Who = 'A' | 'B';

export type CredentialKind =
  | 'none'
  | 'malformed'
  | 'bad-token'
  | 'expired-token'
  | 'revoked-token'
  | 'revoked-key'
  | 'expired-key'
  | `key:${KeyScope}`
  | 'owner-login'
  | 'other-login';

export const CREDENTIAL_KINDS: readonly CredentialKind[] = [
  'none',
  'malformed',
  'bad-token',
  'expired-token',
  'revoked-token',
  'revoked-key',
  'expired-key',
  ...CONTRACT_KEY_SCOPES.map((s) => `key:${s}` as const),
  'owner-login',
  'other-login',
];

/** What the model knows of a credential kind. */
export interface CredentialModel {
  /** The 401 it gets, when it is not a live credential. */
  refused?: 'Unauthenticated' | 'Invalid token';
  /** Whose it is, when live. */
  user?: Who;
  /** The scopes of a live API key (absent for a login token). */
  scopes?: readonly KeyScope[];
}

export function credentialModel(kind: CredentialKind): CredentialModel {
  switch (kind) {
    case 'none':
    case 'malformed':
      return { refused: 'Unauthenticated' };
    case 'bad-token':
    case 'expired-token':
    case 'revoked-token':
    case 'revoked-key':
    case 'expired-key':
      return { refused: 'Invalid token' };
    case 'owner-login':
      return { user: 'A' };
    case 'other-login':
      return { user: 'B' };
    default:
      return { user: 'A', scopes: [kind.slice('key:'.length) as KeyScope] };
  }
}

/** `*` holds every scope; managing keys (and logout) needs a login token. */
export function keyMayCall(scopes: readonly KeyScope[], needed: RouteScope): boolean {
  if (needed === 'login') return false;
  return scopes.includes('*') || scopes.includes(needed);
}

/**
 * What a path value is: an object of user A's or user B's (the fixtures are the same for both),
 * a non-integer / malformed id, or a well-formed id of nothing.
 */
export type ValueKind = 'A' | 'B' | 'bad' | 'missing';

/** A path parameter the model knows: its 404 message, and whether it belongs to a user. */
export interface ParamModel {
  notFound: string;
  /** false: the same for every user (an event name of the catalogue). */
  owned: boolean;
}

export const PARAMS: Readonly<Record<string, ParamModel>> = {
  wallet: { notFound: 'Wallet not found', owned: true },
  token: { notFound: 'Token not found', owned: true },
  webhook: { notFound: 'Webhook not found', owned: true },
  delivery: { notFound: 'Delivery not found', owned: true },
  transaction: { notFound: 'Transaction not found', owned: true },
  charge: { notFound: 'Charge not found', owned: true },
  /** `/api/events/{id}` */
  id: { notFound: 'Event not found', owned: true },
  key: { notFound: 'Key not found', owned: true },
  payout: { notFound: 'Payout not found', owned: true },
  deposit_address: { notFound: 'Deposit address not found', owned: true },
  /** `.../allowlist/{entry}/remove` */
  entry: { notFound: 'Allowlist entry not found', owned: true },
  /** `.../webhook/event/{event}`: a catalogue name, not an object of anyone's. */
  event: { notFound: 'Event not found', owned: false },
};

/** A path parameter the model does not know yet (a route added later): any `<Object> not found`. */
export const UNKNOWN_NOT_FOUND = /^(?!Route |Wallet )[A-Z][A-Za-z ]* not found$/;

const WALLET = String.raw`^/api/wallet/:wallet`;

/**
 * A field of a route's JSON body that asks for another scope besides the route's when it is
 * there (any value but null), docs/money-out.md "Refunds": a refund with an `address`
 * moves money at once, so it needs `transactions:write` (a claim, without one, the route's
 * `charges:write` only).
 */
export interface BodyScope {
  method: string;
  url: RegExp;
  field: string;
  scope: RouteScope;
}

export const BODY_SCOPES: readonly BodyScope[] = [
  { method: 'POST', url: new RegExp(`${WALLET}/charge/:\\w+/refund$`), field: 'address', scope: 'transactions:write' },
];

/** The rules of BODY_SCOPES for a route (the fields whose presence changes what a key needs). */
export function bodyScopeRules(method: string, url: string): BodyScope[] {
  return BODY_SCOPES.filter((r) => r.method === method && r.url.test(url));
}

/** The scopes a request's body asks for besides its route's. */
export function bodyScopes(method: string, url: string, body: Readonly<Record<string, unknown>> | undefined): RouteScope[] {
  if (body === undefined) return [];
  return bodyScopeRules(method, url)
    .filter((r) => body[r.field] !== undefined && body[r.field] !== null)
    .map((r) => r.scope);
}

export interface Expected {
  status: number;
  message: string | RegExp;
}

/**
 * The answer the contract gives, up to the route's own work: an Expected for a refusal by the
 * auth, scope or path-object layers, 'route' when every check passes (the route answers for
 * itself), 'public' for a route outside authentication.
 */
export function expectedAnswer(
  route: { method: string; url: string; scope: RouteScope | null; params: readonly string[] },
  kind: CredentialKind,
  values: Readonly<Record<string, ValueKind>>,
  body?: Readonly<Record<string, unknown>>,
): Expected | 'route' | 'public' {
  if (route.scope === null) return 'public';
  const cred = credentialModel(kind);
  if (cred.refused) return { status: 401, message: cred.refused };
  const needed = [route.scope, ...bodyScopes(route.method, route.url, body)];
  if (cred.scopes && !needed.every((scope) => keyMayCall(cred.scopes!, scope))) return { status: 403, message: 'Insufficient scope' };
  for (const param of route.params) {
    const model = PARAMS[param];
    const v = values[param]!;
    if (!model) return { status: 404, message: UNKNOWN_NOT_FOUND };
    const found = model.owned ? v === cred.user : v === 'A' || v === 'B';
    if (!found) return { status: 404, message: model.notFound };
  }
  return 'route';
}

/**
 * The scope the docs give a route, where they say (undefined where they do not): the test
 * checks each route's declared scope against it, then predicts answers from the declared one.
 * - Login token only: managing API keys; reconciliation accept; policy changes; allowlist add
 *   and remove; approving a transaction or a payout (rejecting one: not said, not checked).
 * - Public: login, the payer's JSON (`/api/pay/...`, `/api/refund/...`), the OpenAPI document and
 *   the docs page.
 * - `read` every GET; the two GETs that change something (token remove, webhook
 *   delete) need their resource's write scope (src/modules/keys/keys.scopes.ts, documented).
 * - A POST: `wallets:write` (wallets and tokens), `charges:write` (refunds too; one with an
 *   `address` also needs `transactions:write`, by its body: BODY_SCOPES),
 *   `transactions:write` (payouts too), `webhooks:write`.
 */
export function contractScope(method: string, url: string): RouteScope | null | undefined {
  const loginOnly = [
    /^\/api\/auth\/key(\/|$)/,
    new RegExp(`${WALLET}/reconciliation/accept$`),
    new RegExp(`${WALLET}/charge/:\\w+/sweep$`),
    new RegExp(`${WALLET}/policy$`),
    new RegExp(`${WALLET}/allowlist/`),
    new RegExp(`${WALLET}/(transaction|payout)/:\\w+/approve$`),
  ];
  if (loginOnly.some((re) => re.test(url)) && (method !== 'GET' || url.startsWith('/api/auth/key'))) return 'login';
  if (/^\/api\/(auth\/login|pay\/|refund\/|openapi\.json$|docs$)/.test(url)) return null;
  // Rejecting an approval: the contract names no scope (approving needs a login token).
  if (new RegExp(`${WALLET}/(transaction|payout)/:\\w+/reject$`).test(url)) return undefined;
  if (method === 'GET') {
    if (new RegExp(`${WALLET}/token/remove/`).test(url)) return 'wallets:write';
    if (new RegExp(`${WALLET}/webhook/delete/`).test(url)) return 'webhooks:write';
    return 'read';
  }
  const byResource: Array<[RegExp, RouteScope]> = [
    [/^\/api\/wallet\/create$/, 'wallets:write'],
    [new RegExp(`${WALLET}/(update$|token/)`), 'wallets:write'],
    [new RegExp(`${WALLET}/charge/`), 'charges:write'],
    [new RegExp(`${WALLET}/(transaction|payout)/`), 'transactions:write'],
    [new RegExp(`${WALLET}/webhook/`), 'webhooks:write'],
  ];
  return byResource.find(([re]) => re.test(url))?.[1];
}
