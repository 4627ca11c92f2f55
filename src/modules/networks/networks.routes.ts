import { Type } from '@sinclair/typebox';
import { ok, responses } from '../../http/envelope.js';
import type { App } from '../../http/types.js';
import { NetworkRef } from './networks.schemas.js';
import type { NetworkService } from './networks.service.js';

export async function networkRoutes(app: App, networks: NetworkService): Promise<void> {
  app.get(
    '/networks',
    {
      schema: {
        tags: ['networks'],
        summary: 'Registered networks',
        description: 'The networks wallets can be created on. RPC URLs are shown as their origin only (scheme, host and port).',
        response: responses(Type.Array(NetworkRef)),
      },
    },
    async () => ok(await networks.list(), 'Networks retrieved'),
  );
}
