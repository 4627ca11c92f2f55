/**
 * Managing API keys: create, list, revoke. All three need a login token (`scope: 'login'`):
 * an API key cannot make, see or revoke keys. Key creation takes no Idempotency-Key: its
 * response holds the key, which must never be stored (`idempotency: false`).
 */
import { Type } from '@sinclair/typebox';
import { ok, responses } from '../../http/envelope.js';
import { requireUser } from '../../http/auth.js';
import type { App } from '../../http/types.js';
import type { KeyInput, KeyService } from './keys.service.js';
import { ApiKeyRef, CreateKeyBody, CreatedKeySchema, KeyParams } from './keys.schemas.js';
import { createdKeyView, keyView } from './keys.views.js';

export async function keyRoutes(app: App, keys: KeyService): Promise<void> {
  app.post(
    '/auth/key/create',
    {
      config: { scope: 'login', idempotency: false, noStore: true },
      schema: {
        tags: ['auth'],
        summary: 'Create an API key (the key is shown in this response only)',
        description:
          'A long-lived key for a server, limited to its scopes (`read`, `charges:write`, `transactions:write`, `wallets:write`, `webhooks:write` or `*`), optionally expiring after `expires_in` seconds. Only its SHA-256 is stored. Needs a login token: an API key gets 403.',
        body: CreateKeyBody,
        response: responses(CreatedKeySchema, [403]),
      },
    },
    async (req) => {
      const { row, key } = await keys.create(requireUser(req).id, req.body as KeyInput);
      return ok(createdKeyView(row, key), 'API key created');
    },
  );

  app.get(
    '/auth/key',
    {
      config: { scope: 'login' },
      schema: {
        tags: ['auth'],
        summary: 'The API keys of the user, newest first',
        description:
          'Every key of the user, revoked and expired ones included, without the key itself. `last_used_at` is kept to the minute.',
        response: responses(Type.Array(ApiKeyRef), [403]),
      },
    },
    async (req) => ok((await keys.list(requireUser(req).id)).map(keyView), 'API keys retrieved'),
  );

  app.post(
    '/auth/key/:key/revoke',
    {
      config: { scope: 'login' },
      schema: {
        tags: ['auth'],
        summary: 'Revoke an API key',
        description: "The key answers 401 `Invalid token` from now on. Another user's key, or an unknown one, is 404 `Key not found`.",
        params: KeyParams,
        response: responses(ApiKeyRef, [403]),
      },
    },
    async (req) => ok(keyView(await keys.revoke(requireUser(req).id, req.params.key)), 'API key revoked'),
  );
}
