/**
 * GET  /wallet/{wallet}/reconciliation          the chain against the records, at the confirmed head
 * POST /wallet/{wallet}/reconciliation/accept   records the differences as adjustments (login token only)
 */
import { ok, responses } from '../../http/envelope.js';
import { requireWallet } from '../../http/auth.js';
import type { App } from '../../http/types.js';
import { WalletParams } from '../wallets/wallets.schemas.js';
import { AcceptBody, ReconciliationSchema, type AcceptInput } from './reconciliation.schemas.js';
import type { ReconciliationService } from './reconciliation.service.js';
import { reconciliationView } from './reconciliation.views.js';

export async function reconciliationRoutes(app: App, service: ReconciliationService): Promise<void> {
  app.get(
    '/wallet/:wallet/reconciliation',
    {
      config: { scope: 'read' },
      schema: {
        tags: ['reconciliation'],
        summary: 'Every wei accounted for: the chain against the service’s records',
        description:
          'For the main address and the deposit address of every charge that is watched or holds funds, per active token: the chain balance at the confirmed head against the last checkpoint plus the confirmed records since (receipts, payments and top-ups in; amounts sent, sweeps and every fee out). An `ok` answer moves every checkpoint to its `block_number`. Reads one balance per address and token from the node.',
        params: WalletParams,
        response: responses(ReconciliationSchema),
      },
    },
    async (req) => ok(reconciliationView(await service.reconcile(requireWallet(req))), 'Reconciliation retrieved'),
  );

  app.post(
    '/wallet/:wallet/reconciliation/accept',
    {
      config: { scope: 'login' },
      schema: {
        tags: ['reconciliation'],
        summary: 'Accept the differences as adjustments (login token only)',
        description:
          'Records each difference as an adjustment with the note (listed under `adjustments`) and moves the checkpoints to the answer’s block. Needs a login token: an API key gets 403. Nothing to accept: 400.',
        params: WalletParams,
        body: AcceptBody,
        response: responses(ReconciliationSchema, [403]),
      },
    },
    async (req) => {
      const { note } = req.body as AcceptInput;
      return ok(reconciliationView(await service.accept(requireWallet(req), note)), 'Reconciliation accepted');
    },
  );
}
