import { Type } from '@sinclair/typebox';

export const LoginBody = Type.Object({
  email: Type.String({ format: 'email', maxLength: 255 }),
  password: Type.String({ minLength: 1, maxLength: 1024 }),
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
