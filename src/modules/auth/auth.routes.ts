import { Type } from '@sinclair/typebox';
import { ok, responses } from '../../http/envelope.js';
import { requireUser } from '../../http/auth.js';
import type { App } from '../../http/types.js';
import { formatDateTime } from '../../lib/time.js';
import type { AuthService } from './auth.service.js';
import { LoginBody, LoginData, UserData } from './auth.schemas.js';

/** Login is public (and not counted in the per-user rate limit). */
export async function publicAuthRoutes(app: App, auth: AuthService): Promise<void> {
  app.post(
    '/auth/login',
    { schema: { tags: ['auth'], summary: 'Log in and get a bearer token', body: LoginBody, response: responses(LoginData) } },
    async (req) => {
      const { token, expiresAtMs } = await auth.login(req.body.email, req.body.password, req.ip);
      return ok({ token, token_type: 'Bearer' as const, expires_at: formatDateTime(expiresAtMs) }, 'Logged in');
    },
  );
}

export async function authRoutes(app: App, auth: AuthService): Promise<void> {
  app.post(
    '/auth/logout',
    { schema: { tags: ['auth'], summary: 'Revoke the token used', response: responses(Type.Null()) } },
    async (req) => {
      await auth.logout(req.tokenId!);
      return ok(null, 'Logged out');
    },
  );

  app.get(
    '/auth/me',
    { schema: { tags: ['auth'], summary: 'The authenticated user', response: responses(UserData) } },
    async (req) => {
      const u = requireUser(req);
      return ok({ id: u.id, name: u.name, email: u.email, created_at: formatDateTime(u.created_at) });
    },
  );
}
