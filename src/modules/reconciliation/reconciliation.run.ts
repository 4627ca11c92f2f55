/**
 * Reconciling every wallet (or one): the CLI's `reconcile` and housekeeping's daily run. One
 * wallet's failure (its node down) is its own line, not the end of the run.
 */
import type { Logger } from 'pino';
import type { AppContext } from '../../context.js';
import { isAppError } from '../../errors.js';
import { ReconciliationService } from './reconciliation.service.js';
import { reconciliationLine } from './reconciliation.views.js';

export interface WalletOutcome {
  walletId: number;
  ok: boolean;
  /** The answer with its `wallet_id`, or `{wallet_id, error}`. */
  line: Record<string, unknown>;
}

/** Every wallet in id order, or only `walletId` (an unknown id: an error line). */
export async function reconcileWallets(ctx: AppContext, walletId?: number): Promise<WalletOutcome[]> {
  const service = new ReconciliationService(ctx);
  const ids = walletId === undefined ? await service.listWalletIds() : [walletId];
  const out: WalletOutcome[] = [];
  for (const id of ids) out.push(await reconcileOne(service, id));
  return out;
}

async function reconcileOne(service: ReconciliationService, walletId: number): Promise<WalletOutcome> {
  const wallet = await service.findWallet(walletId);
  if (!wallet) return { walletId, ok: false, line: { wallet_id: walletId, error: 'Wallet not found' } };
  try {
    const r = await service.reconcile(wallet);
    return { walletId, ok: r.ok, line: reconciliationLine(r) };
  } catch (e) {
    return { walletId, ok: false, line: { wallet_id: walletId, error: isAppError(e) ? e.message : (e as Error).message } };
  }
}

/** The daily run: every wallet, a warning per difference, per unswept amount and per wallet that could not be compared. */
export async function dailyReconciliation(ctx: AppContext, log: Logger): Promise<{ wallets: number; notOk: number }> {
  const results = await reconcileWallets(ctx);
  for (const r of results) {
    const line = r.line as ReturnType<typeof reconciliationLine> & { error?: string };
    if (line.error !== undefined) {
      log.warn({ wallet_id: r.walletId, error: line.error }, 'reconciliation: the wallet could not be compared');
      continue;
    }
    for (const a of line.addresses) {
      for (const t of a.tokens) {
        if (t.difference === '0.000000000000000000') continue;
        log.warn({ wallet_id: r.walletId, address: a.address, kind: a.kind, charge_id: a.charge_id, token: t.token, difference: t.difference, block_number: line.block_number }, 'reconciliation difference');
      }
    }
    for (const u of line.unswept) log.warn({ wallet_id: r.walletId, ...u, block_number: line.block_number }, 'reconciliation: funds left unswept');
  }
  const notOk = results.filter((r) => !r.ok).length;
  log.info({ wallets: results.length, not_ok: notOk }, 'daily reconciliation done');
  return { wallets: results.length, notOk };
}
