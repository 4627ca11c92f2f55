import { Type } from '@sinclair/typebox';
import { ok, responses } from '../../http/envelope.js';
import { requireUser, requireWallet } from '../../http/auth.js';
import type { App } from '../../http/types.js';
import { commitResponse } from '../../http/idempotency.js';
import { CreateWalletBody, UpdateWalletBody, WalletDetailSchema, WalletParams, WalletSchema } from './wallets.schemas.js';
import { walletView, type WalletService } from './wallets.service.js';

export async function walletRoutes(app: App, wallets: WalletService): Promise<void> {
  app.get(
    '/wallets',
    { schema: { tags: ['wallets'], summary: "The user's wallets", response: responses(Type.Array(WalletSchema)) } },
    async (req) => ok((await wallets.list(requireUser(req).id)).map(walletView), 'Wallets retrieved'),
  );

  app.post(
    '/wallet/create',
    { schema: { tags: ['wallets'], summary: 'Create a wallet with a fresh mnemonic', body: CreateWalletBody, response: responses(WalletDetailSchema) } },
    async (req) =>
      ok(await wallets.create(requireUser(req).id, req.body, { inTransaction: commitResponse(req, 'Wallet created', (d) => d) }), 'Wallet created'),
  );

  app.get(
    '/wallet/:wallet',
    { schema: { tags: ['wallets'], summary: 'A wallet with its tokens and network', params: WalletParams, response: responses(WalletDetailSchema) } },
    async (req) => ok(await wallets.detail(requireWallet(req)), 'Wallet retrieved'),
  );

  app.post(
    '/wallet/:wallet/update',
    { schema: { tags: ['wallets'], summary: 'Update name or description', params: WalletParams, body: UpdateWalletBody, response: responses(WalletDetailSchema) } },
    async (req) => ok(await wallets.update(requireWallet(req), req.body), 'Wallet updated'),
  );
}
