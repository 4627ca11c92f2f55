/**
 * POST /wallet/{wallet}/devnet/fund   {amount}: ETH from the local devnet's dev account to the
 * wallet, in a real transfer (devnet-fund.ts; the dashboard's "Fund from devnet"). 400 on any
 * network but the local devnet, with nothing sent. Scope `wallets:write`.
 */
import { Type } from '@sinclair/typebox';
import { Errors, validationError, type FieldErrors } from '../../errors.js';
import { ok, responses } from '../../http/envelope.js';
import { requireWallet } from '../../http/auth.js';
import type { App } from '../../http/types.js';
import { checkDecimalField } from '../tokens/amount-field.js';
import { WalletParams } from '../wallets/wallets.schemas.js';
import type { AppContext } from '../../context.js';
import { DevnetShort, fundWalletFromDevnet, NotDevnet } from './devnet-fund.js';

const FundedSchema = Type.Object({
  wallet_id: Type.Integer(),
  address: Type.String(),
  amount: Type.String({ description: '18 decimal places' }),
  token: Type.String(),
  tx_hash: Type.String(),
  block_number: Type.Integer(),
});

export async function devnetRoutes(app: App, ctx: AppContext): Promise<void> {
  app.post(
    '/wallet/:wallet/devnet/fund',
    {
      config: { scope: 'wallets:write' },
      schema: {
        tags: ['wallets'],
        summary: 'Fund the wallet from the local devnet (the local devnet only)',
        description:
          'Anvil’s first dev account sends `amount` ETH to the wallet’s main address in a real transfer, which the service then records as a receipt. 400 `Only the local devnet can fund a wallet` on any other network (chain id other than 31337, or a node that is not anvil), and 400 `The devnet account cannot fund that amount` when the dev account holds less than the amount and its fee; nothing is sent either way.',
        params: WalletParams,
        body: Type.Object({ amount: Type.Optional(Type.Unknown({ description: 'ETH, a decimal string or number, > 0' })) }),
        response: responses(FundedSchema),
      },
    },
    async (req) => {
      const wallet = requireWallet(req);
      const errors: FieldErrors = {};
      const wei = checkDecimalField(req.body as Record<string, unknown>, 'amount', 18, errors, { required: true });
      if (wei === null) throw validationError(errors);
      try {
        return ok(await fundWalletFromDevnet(ctx.store.db, wallet, wei), 'Funded from the devnet');
      } catch (e) {
        if (e instanceof NotDevnet) throw Errors.badRequest('Only the local devnet can fund a wallet');
        if (e instanceof DevnetShort) throw Errors.badRequest('The devnet account cannot fund that amount');
        throw e;
      }
    },
  );
}
