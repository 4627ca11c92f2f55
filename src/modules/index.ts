/**
 * The domain modules, registered in order inside the authenticated `/api` scope.
 * Each module builds its service from the context and registers its routes.
 */
import type { AppContext } from '../context.js';
import type { App } from '../http/types.js';
import type { AuthService } from './auth/auth.service.js';
import { networkRoutes } from './networks/networks.routes.js';
import { BalanceService } from './wallets/balances.service.js';
import { walletRoutes } from './wallets/wallets.routes.js';
import { WalletService } from './wallets/wallets.service.js';

export interface Services {
  auth: AuthService;
  wallets: WalletService;
  balances: BalanceService;
}

export async function registerModules(app: App, ctx: AppContext, auth: AuthService): Promise<Services> {
  const wallets = new WalletService(ctx);
  const balances = new BalanceService(ctx);
  await networkRoutes(app, ctx);
  await walletRoutes(app, wallets);
  return { auth, wallets, balances };
}
