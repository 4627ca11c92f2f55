import { Type } from '@sinclair/typebox';
import { component } from '../../http/components.js';
import type { ErrorObject } from 'ajv';
import { ajvToAppError, validatorCompiler } from '../../http/validation.js';
import { KEY_SCOPES, type KeyScope } from './keys.scopes.js';
import type { KeyInput } from './keys.service.js';

/** Ten years: a bound on `expires_in` (omit it for a key that never expires). */
export const KEY_EXPIRES_IN_MAX_S = 315_360_000;

export const CreateKeyBody = Type.Object({
  name: Type.String({ minLength: 1, maxLength: 255 }),
  scopes: Type.Array(Type.Unsafe<KeyScope>({ type: 'string', enum: [...KEY_SCOPES] }), {
    minItems: 1,
    maxItems: KEY_SCOPES.length,
    description: `Any of ${KEY_SCOPES.join(', ')}`,
  }),
  expires_in: Type.Optional(Type.Integer({ minimum: 1, maximum: KEY_EXPIRES_IN_MAX_S, description: 'Seconds; omitted: never expires' })),
});

const KeyFields = {
  id: Type.Integer(),
  name: Type.String(),
  prefix: Type.String({ description: 'The first 12 characters of the key, to recognise it' }),
  scopes: Type.Array(Type.String()),
  created_at: Type.String(),
  expires_at: Type.Union([Type.String(), Type.Null()]),
  last_used_at: Type.Union([Type.String(), Type.Null()], { description: 'Kept to the minute' }),
};

/** The creation response: the only place the key itself ever appears. */
export const CreatedKeySchema = Type.Object({
  id: KeyFields.id,
  name: KeyFields.name,
  key: Type.String({ description: 'wps_ + 43 base64url characters; shown in this response only' }),
  prefix: KeyFields.prefix,
  scopes: KeyFields.scopes,
  created_at: KeyFields.created_at,
  expires_at: KeyFields.expires_at,
  last_used_at: KeyFields.last_used_at,
});

export const KeySchema = Type.Object({ ...KeyFields, revoked_at: Type.Union([Type.String(), Type.Null()]) });
export const ApiKeyRef = component('ApiKey', KeySchema);

export const KeyParams = Type.Object({ key: Type.String() });

const checkCreateKeyBody = validatorCompiler({ schema: CreateKeyBody, httpPart: 'body', method: 'POST', url: '' }) as ((
  v: unknown,
) => boolean) & {
  errors?: ErrorObject[] | null;
};

/** The create body checked outside HTTP (the CLI), with the API's 422 messages. */
export function parseKeyInput(body: unknown): KeyInput {
  if (!checkCreateKeyBody(body)) throw ajvToAppError(checkCreateKeyBody.errors ?? [], 'body');
  return body as KeyInput;
}
