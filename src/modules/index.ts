/**
 * The domain modules, registered in order inside the authenticated `/api` scope.
 * Each module builds its service from the context and registers its routes.
 */
import type { AppContext } from '../context.js';
import type { App } from '../http/types.js';
import type { AuthService } from './auth/auth.service.js';
import { networkRoutes } from './networks/networks.routes.js';
import { supervisorRoutes } from './supervisor/supervisor.routes.js';
import { SupervisorService } from './supervisor/supervisor.service.js';
import { BalanceService } from './wallets/balances.service.js';
import { walletRoutes } from './wallets/wallets.routes.js';
import { WalletService } from './wallets/wallets.service.js';

export interface Services {
  auth: AuthService;
  wallets: WalletService;
  balances: BalanceService;
  supervisor: SupervisorService;
}

export async function registerModules(app: App, ctx: AppContext, auth: AuthService): Promise<Services> {
  const wallets = new WalletService(ctx);
  const balances = new BalanceService(ctx);
  const supervisor = new SupervisorService(ctx);
  await supervisorRoutes(app, supervisor);
  await networkRoutes(app, ctx);
  await walletRoutes(app, wallets);
  return { auth, wallets, balances, supervisor };
}
