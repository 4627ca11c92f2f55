import { Type } from '@sinclair/typebox';
import { ErrorEnvelope, ok, responses } from '../../http/envelope.js';
import { requireUser } from '../../http/auth.js';
import type { App } from '../../http/types.js';
import type { AuthService } from './auth.service.js';
import { LoginBody, LoginData, UserData } from './auth.schemas.js';
import { loginView, userView } from './auth.views.js';

const INVALID_CREDENTIALS = {
  ...ErrorEnvelope,
  description: 'Wrong email or password',
  examples: [{ status: 'error', message: 'Invalid credentials', data: null }],
};

/** Login is public (and not counted in the per-user rate limit). */
export async function publicAuthRoutes(app: App, auth: AuthService): Promise<void> {
  app.post(
    '/auth/login',
    {
      config: { noStore: true },
      schema: {
        tags: ['auth'],
        summary: 'Log in and get a bearer token',
        description:
          'Exchanges email and password for an opaque bearer token valid for TOKEN_TTL seconds. Failed attempts are limited per email and per IP (429 with Retry-After); this route is public and not counted in the per-user rate limit. With `session: "dashboard"` the token is a dashboard session, counted in its own budget (DASHBOARD_RATE_LIMIT_PER_MINUTE).',
        body: LoginBody,
        security: [],
        response: { ...responses(LoginData), 401: INVALID_CREDENTIALS } as ReturnType<typeof responses>,
      },
    },
    async (req) => {
      const { token, expiresAtMs } = await auth.login(req.body.email, req.body.password, req.ip, req.body.session);
      return ok(loginView(token, expiresAtMs), 'Logged in');
    },
  );
}

export async function authRoutes(app: App, auth: AuthService): Promise<void> {
  app.post(
    '/auth/logout',
    {
      // Signing out always works: a token whose user used up this minute's requests can still be ended.
      config: { neverLimited: true },
      schema: {
        tags: ['auth'],
        summary: 'Revoke the token used',
        description:
          'Revokes the bearer token of this request; later requests with it answer 401 Invalid token. Counted in the rate limit but never refused by it: a token can always be ended.',
        response: responses(Type.Null()),
      },
    },
    async (req) => {
      await auth.logout(req.tokenId!);
      return ok(null, 'Logged out');
    },
  );

  app.get(
    '/auth/me',
    {
      schema: {
        tags: ['auth'],
        summary: 'The authenticated user',
        description: 'The user the bearer token belongs to.',
        response: responses(UserData),
      },
    },
    async (req) => ok(userView(requireUser(req))),
  );
}
