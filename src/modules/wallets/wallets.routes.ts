import { Type } from '@sinclair/typebox';
import { ok, responses } from '../../http/envelope.js';
import { requireUser, requireWallet } from '../../http/auth.js';
import type { App } from '../../http/types.js';
import { commitResponse } from '../../http/idempotency.js';
import { CreateWalletBody, UpdateWalletBody, WalletDetailRef, WalletParams, WalletRef } from './wallets.schemas.js';
import type { WalletService } from './wallets.service.js';
import { walletView } from './wallets.views.js';

export async function walletRoutes(app: App, wallets: WalletService): Promise<void> {
  app.get(
    '/wallets',
    {
      schema: {
        tags: ['wallets'],
        summary: "The user's wallets",
        description: 'Every wallet of the authenticated user, without secrets.',
        response: responses(Type.Array(WalletRef)),
      },
    },
    async (req) => ok((await wallets.list(requireUser(req).id)).map(walletView), 'Wallets retrieved'),
  );

  app.post(
    '/wallet/create',
    {
      schema: {
        tags: ['wallets'],
        summary: 'Create a wallet with a fresh mnemonic',
        description:
          'Generates a BIP-39 mnemonic and its first address on the chosen network; the private key and the mnemonic are stored encrypted and never returned.',
        body: CreateWalletBody,
        response: responses(WalletDetailRef),
      },
    },
    async (req) =>
      ok(
        await wallets.create(requireUser(req).id, req.body, { inTransaction: commitResponse(req, 'Wallet created', (d) => d) }),
        'Wallet created',
      ),
  );

  app.get(
    '/wallet/:wallet',
    {
      schema: {
        tags: ['wallets'],
        summary: 'A wallet with its tokens and network',
        description: 'One wallet with its active tokens and its network.',
        params: WalletParams,
        response: responses(WalletDetailRef),
      },
    },
    async (req) => ok(await wallets.detail(requireWallet(req)), 'Wallet retrieved'),
  );

  app.post(
    '/wallet/:wallet/update',
    {
      schema: {
        tags: ['wallets'],
        summary: 'Update name or description',
        description: 'Changes the name and/or the description of a wallet; the address and keys never change.',
        params: WalletParams,
        body: UpdateWalletBody,
        response: responses(WalletDetailRef),
      },
    },
    async (req) => ok(await wallets.update(requireWallet(req), req.body), 'Wallet updated'),
  );
}
