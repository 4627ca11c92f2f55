import { ok, responses } from '../../http/envelope.js';
import { requireWallet } from '../../http/auth.js';
import type { App } from '../../http/types.js';
import { WalletBalanceSchema } from './balances.schemas.js';
import { readingMessage, type BalanceService } from './balances.service.js';
import { WalletParams } from './wallets.schemas.js';

export async function balanceRoutes(app: App, balances: BalanceService): Promise<void> {
  // A view made from cached rows is frozen and shared by every request until the rows change
  // (balances.service.ts): so is its JSON, serialised by the route's schema once.
  const serialized = new WeakMap<object, string>();
  app.get(
    '/wallet/:wallet/balance',
    {
      schema: {
        tags: ['wallets'],
        summary: 'Native and token balances, read from the chain (cached up to BALANCE_MAX_AGE_S)',
        description:
          'Reads the balance of the native coin and of every active token from the chain (cached for BALANCE_MAX_AGE_S seconds); 503 when the node cannot be reached and nothing is cached.',
        params: WalletParams,
        response: responses(WalletBalanceSchema, [502]),
      },
    },
    async (req, reply) => {
      const { data, reading } = await balances.walletBalances(requireWallet(req));
      const body = ok(data, readingMessage(reading, 'Balance retrieved'));
      if (!Object.isFrozen(data)) return body;
      let text = serialized.get(data);
      if (text === undefined) {
        text = reply.serialize(body) as string;
        serialized.set(data, text);
      }
      return reply.type('application/json; charset=utf-8').send(text);
    },
  );
}
