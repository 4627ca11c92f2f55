import { Type } from '@sinclair/typebox';
import { ok, responses } from '../../http/envelope.js';
import type { App } from '../../http/types.js';
import type { AppContext } from '../../context.js';
import { NetworkSchema } from '../wallets/wallets.schemas.js';
import { listNetworks } from './networks.repository.js';
import { networkView } from './networks.service.js';

export async function networkRoutes(app: App, ctx: AppContext): Promise<void> {
  app.get(
    '/networks',
    { schema: { tags: ['networks'], summary: 'Registered networks', response: responses(Type.Array(NetworkSchema)) } },
    async () => ok((await listNetworks(ctx.store.db)).map(networkView), 'Networks retrieved'),
  );
}
