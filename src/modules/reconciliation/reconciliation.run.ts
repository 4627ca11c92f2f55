/**
 * Reconciling every wallet (or one): the CLI's `reconcile` and housekeeping's daily run. One
 * wallet's failure (its node down) is its own line, not the end of the run.
 */
import type { Logger } from 'pino';
import type { AppContext } from '../../context.js';
import { randomUUID } from 'node:crypto';
import { acquireLease } from '../../db/leases.repository.js';
import { isAppError } from '../../errors.js';
import { scheduleFirstRun } from './reconciliation.repository.js';
import { ReconciliationService } from './reconciliation.service.js';
import { reconciliationLine } from './reconciliation.views.js';

export interface WalletOutcome {
  walletId: number;
  ok: boolean;
  /** The answer with its `wallet_id`, or `{wallet_id, error}`. */
  line: Record<string, unknown>;
}

/**
 * Every wallet in id order, or only `walletId` (an unknown id: an error line). `sweepLateMoney`
 * (the daily run): money found on a charge's address after its watch is recorded and swept.
 */
export async function reconcileWallets(
  ctx: AppContext,
  walletId?: number,
  opts: { sweepLateMoney?: boolean } = {},
): Promise<WalletOutcome[]> {
  const service = new ReconciliationService(ctx);
  const ids = walletId === undefined ? await service.listWalletIds() : [walletId];
  const out: WalletOutcome[] = [];
  for (const id of ids) out.push(await reconcileOne(service, id, opts));
  return out;
}

async function reconcileOne(service: ReconciliationService, walletId: number, opts: { sweepLateMoney?: boolean }): Promise<WalletOutcome> {
  const wallet = await service.findWallet(walletId);
  if (!wallet) return { walletId, ok: false, line: { wallet_id: walletId, error: 'Wallet not found' } };
  try {
    const r = await service.reconcile(wallet, opts);
    return { walletId, ok: r.ok, line: reconciliationLine(r) };
  } catch (e) {
    return { walletId, ok: false, line: { wallet_id: walletId, error: isAppError(e) ? e.message : (e as Error).message } };
  }
}

/**
 * Whether the day's run is this process's to make: the lease `name` is taken only once it has
 * expired (its holder is this attempt alone), so of several processes one runs it, once per
 * `periodMs`. The very first call ever only schedules it a period later (a fresh service, and
 * every test that starts the workers, does not start with a run over every wallet).
 */
export async function claimDailyRun(ctx: AppContext, name: string, periodMs: number): Promise<boolean> {
  const now = ctx.clock.nowMs();
  if (await scheduleFirstRun(ctx.store.db, name, now + periodMs)) return false;
  return acquireLease(ctx.store.db, name, `run:${now}:${randomUUID()}`, now, periodMs);
}

/**
 * The daily run: every wallet, a warning per difference, per unswept amount and per wallet that
 * could not be compared. Money found on a settled charge's address after its watch ended
 * (`after_watch`) is recorded as a late payment and the address is swept by the charge worker.
 */
export async function dailyReconciliation(ctx: AppContext, log: Logger): Promise<{ wallets: number; notOk: number }> {
  const results = await reconcileWallets(ctx, undefined, { sweepLateMoney: true });
  for (const r of results) {
    const line = r.line as ReturnType<typeof reconciliationLine> & { error?: string };
    if (line.error !== undefined) {
      log.warn({ wallet_id: r.walletId, error: line.error }, 'reconciliation: the wallet could not be compared');
      continue;
    }
    for (const a of line.addresses) {
      for (const t of a.tokens) {
        if (t.difference === '0.000000000000000000') continue;
        log.warn(
          {
            wallet_id: r.walletId,
            address: a.address,
            kind: a.kind,
            charge_id: a.charge_id,
            symbol: t.token,
            difference: t.difference,
            block_number: line.block_number,
          },
          'reconciliation difference',
        );
      }
    }
    for (const u of line.unswept)
      log.warn(
        {
          wallet_id: r.walletId,
          address: u.address,
          charge_id: u.charge_id,
          symbol: u.token,
          amount: u.amount,
          reason: u.reason,
          block_number: line.block_number,
        },
        'reconciliation: funds left unswept',
      );
  }
  const notOk = results.filter((r) => !r.ok).length;
  log.info({ wallets: results.length, not_ok: notOk }, 'daily reconciliation done');
  return { wallets: results.length, notOk };
}
