/**
 * The domain modules, registered in order inside the authenticated `/api` scope.
 * Each module builds its service from the context and registers its routes.
 */
import type { AppContext } from '../context.js';
import type { App } from '../http/types.js';
import type { AuthService } from './auth/auth.service.js';
import { chargeRoutes } from './charges/charges.routes.js';
import { depositAddressRoutes } from './deposit-addresses/deposit-addresses.routes.js';
import { DepositAddressService } from './deposit-addresses/deposit-addresses.service.js';
import { exportRoutes } from './exports/exports.routes.js';
import { ExportService } from './exports/exports.service.js';
import { eventRoutes } from './events/events.routes.js';
import { EventsService } from './events/events.service.js';
import { keyRoutes } from './keys/keys.routes.js';
import { KeyService } from './keys/keys.service.js';
import { ChargeService } from './charges/charges.service.js';
import { reconciliationRoutes } from './reconciliation/reconciliation.routes.js';
import { ReconciliationService } from './reconciliation/reconciliation.service.js';
import { payoutRoutes } from './payouts/payouts.routes.js';
import { PayoutService } from './payouts/payouts.service.js';
import { refundRoutes } from './refunds/refunds.routes.js';
import { RefundService } from './refunds/refunds.service.js';
import { policyRoutes } from './policies/policies.routes.js';
import { PolicyService } from './policies/policies.service.js';
import { networkRoutes } from './networks/networks.routes.js';
import { rateRoutes } from './rates/rates.routes.js';
import { RateService } from './rates/rates.service.js';
import { devnetRoutes } from './networks/devnet.routes.js';
import { NetworkService } from './networks/networks.service.js';
import { supervisorRoutes } from './supervisor/supervisor.routes.js';
import { SupervisorService } from './supervisor/supervisor.service.js';
import { tokenRoutes } from './tokens/tokens.routes.js';
import { transactionRoutes } from './transactions/transactions.routes.js';
import { TransactionService } from './transactions/transactions.service.js';
import { TokenService } from './tokens/tokens.service.js';
import { balanceRoutes } from './wallets/balances.routes.js';
import { BalanceService } from './wallets/balances.service.js';
import { walletRoutes } from './wallets/wallets.routes.js';
import { WalletService } from './wallets/wallets.service.js';
import { webhookRoutes } from './webhooks/webhooks.routes.js';
import { WebhooksService } from './webhooks/webhooks.service.js';

export interface Services {
  auth: AuthService;
  wallets: WalletService;
  balances: BalanceService;
  supervisor: SupervisorService;
  webhooks: WebhooksService;
  transactions: TransactionService;
  charges: ChargeService;
  keys: KeyService;
  events: EventsService;
  reconciliation: ReconciliationService;
  policies: PolicyService;
  refunds: RefundService;
  payouts: PayoutService;
}

export async function registerModules(app: App, ctx: AppContext, auth: AuthService): Promise<Services> {
  const wallets = new WalletService(ctx);
  const balances = new BalanceService(ctx);
  const supervisor = new SupervisorService(ctx);
  await supervisorRoutes(app, supervisor);
  await networkRoutes(app, new NetworkService(ctx));
  await rateRoutes(app, new RateService(ctx));
  await walletRoutes(app, wallets);
  await devnetRoutes(app, ctx);
  await balanceRoutes(app, balances);
  await tokenRoutes(app, new TokenService(ctx, balances));
  const webhooks = new WebhooksService(ctx);
  await webhookRoutes(app, webhooks);
  const transactions = new TransactionService(ctx, wallets);
  await transactionRoutes(app, transactions, ctx.screening);
  const charges = new ChargeService(ctx, wallets, transactions);
  await chargeRoutes(app, charges, ctx.config.publicUrl);
  await depositAddressRoutes(app, new DepositAddressService(ctx, wallets));
  const refunds = new RefundService(ctx, transactions);
  await refundRoutes(app, refunds, charges, ctx.config.publicUrl);
  const payouts = new PayoutService(ctx, transactions);
  await payoutRoutes(app, payouts, transactions);
  await exportRoutes(app, new ExportService(ctx));
  const keys = new KeyService(ctx);
  await keyRoutes(app, keys);
  const events = new EventsService(ctx);
  await eventRoutes(app, events);
  const reconciliation = new ReconciliationService(ctx);
  await reconciliationRoutes(app, reconciliation);
  const policies = new PolicyService(ctx);
  await policyRoutes(app, policies);
  return { auth, wallets, balances, supervisor, webhooks, transactions, charges, keys, events, reconciliation, policies, refunds, payouts };
}
