/**
 * What each route needs from an API key. Every route of the authenticated scope resolves to a
 * scope when it is registered (src/http/auth.ts, onRoute): its own `config.scope` if it
 * declares one, else the rules below, read from method and path. A route that resolves to
 * nothing stops the service from starting, so a new route cannot slip through unguarded.
 *
 * - `read`: every GET that only reads.
 * - `charges:write`, `transactions:write` (transfers and payouts), `wallets:write` (wallets and their tokens),
 *   `webhooks:write`: the POSTs of that resource, and the two GETs that change
 *   something (`token/remove/{token}`, `webhook/delete/{webhook}`): a read-only key must not
 *   remove a token or delete a webhook.
 * - `login`: only a login token, never an API key (managing API keys, logout).
 * A key with `*` has every scope (but is still not a login token).
 */
export const KEY_SCOPES = ['read', 'charges:write', 'transactions:write', 'wallets:write', 'webhooks:write', '*'] as const;
export type KeyScope = (typeof KEY_SCOPES)[number];

/** What a route needs: one key scope, or a login token. */
export type RouteScope = Exclude<KeyScope, '*'> | 'login';

interface Rule {
  methods: readonly string[];
  path: RegExp;
  scope: RouteScope;
}

const READS = ['GET', 'HEAD'];
const WALLET = String.raw`^/api/wallet/:wallet`;

/** First match wins. Paths are Fastify's route patterns, prefix included. */
const RULES: readonly Rule[] = [
  { methods: ['*'], path: /^\/api\/auth\/key(\/|$)/, scope: 'login' },
  { methods: ['POST'], path: /^\/api\/auth\/logout$/, scope: 'login' },
  { methods: READS, path: new RegExp(`${WALLET}/token/remove/`), scope: 'wallets:write' },
  { methods: READS, path: new RegExp(`${WALLET}/webhook/delete/`), scope: 'webhooks:write' },
  { methods: READS, path: /^\/api\//, scope: 'read' },
  { methods: ['POST'], path: /^\/api\/wallet\/create$/, scope: 'wallets:write' },
  { methods: ['POST'], path: new RegExp(`${WALLET}/update$`), scope: 'wallets:write' },
  { methods: ['POST'], path: new RegExp(`${WALLET}/token/`), scope: 'wallets:write' },
  { methods: ['POST'], path: new RegExp(`${WALLET}/charge/`), scope: 'charges:write' },
  { methods: ['POST'], path: new RegExp(`${WALLET}/transaction/`), scope: 'transactions:write' },
  { methods: ['POST'], path: new RegExp(`${WALLET}/payout/`), scope: 'transactions:write' },
  { methods: ['POST'], path: new RegExp(`${WALLET}/webhook/`), scope: 'webhooks:write' },
];

const ROUTE_SCOPES: readonly string[] = [...KEY_SCOPES.filter((s) => s !== '*'), 'login'];

export function isRouteScope(v: unknown): v is RouteScope {
  return typeof v === 'string' && ROUTE_SCOPES.includes(v);
}

/** The scope a route needs by the rules, or undefined when none applies. */
export function scopeByRules(method: string, url: string): RouteScope | undefined {
  const m = method.toUpperCase();
  return RULES.find((r) => (r.methods.includes('*') || r.methods.includes(m)) && r.path.test(url))?.scope;
}

/** Whether a key holding `granted` may call a route that needs `needed`. */
export function allows(granted: readonly KeyScope[], needed: RouteScope): boolean {
  if (needed === 'login') return false;
  return granted.includes('*') || granted.includes(needed);
}
