/**
 * The `operationId` of every operation in the OpenAPI document, in one table instead of one line
 * in each route file: client generators name their methods after it (`client.createCharge()`),
 * and the reference's deep links (`/api/docs#/charges/createCharge`) use it.
 *
 * The key is the method and the URL as Fastify registers the route (`:param`, with the `/api`
 * prefix); installDocs (docs.ts) copies the id into the route's schema as the route is
 * registered. Adding a route? Add its line here: test/http/openapi-lint.test.ts fails, naming
 * the route, while a documented route has no id, a line names no route, or two ids are the same.
 *
 * Ids are camelCase, a verb then what it acts on: list (a collection), show (one), create,
 * update, and the action's own verb (speedUp, refund, approve). They are part of what generated
 * clients call, so an id, once published, is not renamed.
 */
export const OPERATION_IDS: Readonly<Record<string, string>> = Object.freeze({
  // auth and API keys
  'POST /api/auth/login': 'login',
  'POST /api/auth/logout': 'logout',
  'GET /api/auth/me': 'showCurrentUser',
  'POST /api/auth/key/create': 'createApiKey',
  'GET /api/auth/key': 'listApiKeys',
  'POST /api/auth/key/:key/revoke': 'revokeApiKey',
  // system
  'GET /api/supervisor': 'showHealth',
  'GET /api/networks': 'listNetworks',
  'GET /api/rates': 'listRates',
  // wallets
  'GET /api/wallets': 'listWallets',
  'POST /api/wallet/create': 'createWallet',
  'GET /api/wallet/:wallet': 'showWallet',
  'POST /api/wallet/:wallet/update': 'updateWallet',
  'POST /api/wallet/:wallet/devnet/fund': 'fundWalletFromDevnet',
  'GET /api/wallet/:wallet/balance': 'showBalance',
  // tokens
  'GET /api/wallet/:wallet/tokens': 'listTokens',
  'GET /api/wallet/:wallet/token/:token': 'showToken',
  'POST /api/wallet/:wallet/token/add': 'addToken',
  'GET /api/wallet/:wallet/token/remove/:token': 'removeToken',
  // webhooks
  'GET /api/wallet/:wallet/webhook': 'listWebhooks',
  'GET /api/wallet/:wallet/webhook/types': 'listWebhookTypes',
  'GET /api/wallet/:wallet/webhook/event/:event': 'showWebhookEvent',
  'POST /api/wallet/:wallet/webhook/create': 'createWebhook',
  'GET /api/wallet/:wallet/webhook/delete/:webhook': 'deleteWebhook',
  'POST /api/wallet/:wallet/webhook/:webhook/update': 'updateWebhook',
  'GET /api/wallet/:wallet/webhook/:webhook/deliveries': 'listWebhookDeliveries',
  'GET /api/wallet/:wallet/webhook/:webhook/deliveries/:delivery': 'showWebhookDelivery',
  'POST /api/wallet/:wallet/webhook/:webhook/deliveries/:delivery/retry': 'retryWebhookDelivery',
  'POST /api/wallet/:wallet/webhook/:webhook/test': 'testWebhook',
  'POST /api/wallet/:wallet/webhook/:webhook/recover': 'recoverWebhookDeliveries',
  // transactions
  'GET /api/wallet/:wallet/transaction': 'listTransactions',
  'POST /api/wallet/:wallet/transaction/create': 'createTransaction',
  'GET /api/wallet/:wallet/transaction/fees': 'previewTransactionFees',
  'GET /api/wallet/:wallet/transaction/show/:transaction': 'showTransaction',
  'POST /api/wallet/:wallet/transaction/:transaction/speed-up': 'speedUpTransaction',
  'POST /api/wallet/:wallet/transaction/:transaction/cancel': 'cancelTransaction',
  'POST /api/wallet/:wallet/transaction/:transaction/approve': 'approveTransaction',
  'POST /api/wallet/:wallet/transaction/:transaction/reject': 'rejectTransaction',
  // charges and refunds
  'GET /api/wallet/:wallet/charge': 'listCharges',
  'POST /api/wallet/:wallet/charge/create': 'createCharge',
  'GET /api/wallet/:wallet/charge/show/:charge': 'showCharge',
  'POST /api/wallet/:wallet/charge/:charge/sweep': 'sweepCharge',
  'POST /api/wallet/:wallet/charge/:charge/refund': 'refundCharge',
  'GET /api/wallet/:wallet/deposit-address': 'listDepositAddresses',
  'POST /api/wallet/:wallet/deposit-address/create': 'createDepositAddress',
  'GET /api/wallet/:wallet/deposit-address/:deposit_address': 'showDepositAddress',
  // payouts
  'GET /api/wallet/:wallet/payout': 'listPayouts',
  'POST /api/wallet/:wallet/payout/create': 'createPayout',
  'GET /api/wallet/:wallet/payout/:payout': 'showPayout',
  'POST /api/wallet/:wallet/payout/:payout/approve': 'approvePayout',
  'POST /api/wallet/:wallet/payout/:payout/reject': 'rejectPayout',
  // exports
  'GET /api/wallet/:wallet/export/transactions.csv': 'exportTransactions',
  'GET /api/wallet/:wallet/export/charges.csv': 'exportCharges',
  'GET /api/wallet/:wallet/export/payouts.csv': 'exportPayouts',
  // events
  'GET /api/events': 'listEvents',
  'GET /api/events/:id': 'showEvent',
  // reconciliation
  'GET /api/wallet/:wallet/reconciliation': 'showReconciliation',
  'POST /api/wallet/:wallet/reconciliation/accept': 'acceptReconciliation',
  // spending policy and allowlist
  'GET /api/wallet/:wallet/policy': 'showPolicy',
  'POST /api/wallet/:wallet/policy': 'updatePolicy',
  'GET /api/wallet/:wallet/allowlist': 'listAllowlist',
  'POST /api/wallet/:wallet/allowlist/add': 'addAllowlistEntry',
  'POST /api/wallet/:wallet/allowlist/:entry/remove': 'removeAllowlistEntry',
  // public: the payer's side of a charge and of a refund claim
  'GET /api/pay/:uuid': 'showCheckout',
  'POST /api/pay/:uuid/devnet': 'payCheckoutFromDevnet',
  'GET /api/refund/:uuid': 'showRefundClaim',
  'POST /api/refund/:uuid': 'claimRefund',
});

/** The table's key of a route: `POST /api/wallet/:wallet/charge/create` (a trailing slash dropped). */
export function operationKey(method: string, url: string): string {
  return `${method.toUpperCase()} ${url.length > 1 ? url.replace(/\/+$/, '') : url}`;
}

/** The route's id, or undefined when the table has no line for it (a test then fails). */
export function operationIdOf(method: string, url: string): string | undefined {
  const key = operationKey(method, url);
  return Object.hasOwn(OPERATION_IDS, key) ? OPERATION_IDS[key] : undefined;
}
