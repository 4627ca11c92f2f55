/**
 * The domain modules, registered in order inside the authenticated `/api` scope.
 * Each module builds its service from the context and registers its routes.
 */
import type { AppContext } from '../context.js';
import type { App } from '../http/types.js';
import type { AuthService } from './auth/auth.service.js';

export interface Services {
  auth: AuthService;
}

export async function registerModules(app: App, ctx: AppContext, auth: AuthService): Promise<Services> {
  void app;
  void ctx;
  return { auth };
}
