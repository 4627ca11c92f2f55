import { Type } from '@sinclair/typebox';

export const LoginBody = Type.Object({
  email: Type.String({ format: 'email', maxLength: 255 }),
  password: Type.String({ minLength: 1, maxLength: 1024 }),
  session: Type.Optional(
    Type.Literal('dashboard', {
      description:
        "`dashboard`: the token is the dashboard's session (it begins with `ds.`), counted in the user's dashboard budget (DASHBOARD_RATE_LIMIT_PER_MINUTE) instead of the per-user rate limit its API calls share.",
    }),
  ),
});

export const LoginData = Type.Object({
  token: Type.String(),
  token_type: Type.Literal('Bearer'),
  expires_at: Type.String({ description: 'UTC datetime YYYY-MM-DD HH:MM:SS' }),
});

export const UserData = Type.Object({
  id: Type.Integer(),
  name: Type.String(),
  email: Type.String(),
  created_at: Type.String(),
});
