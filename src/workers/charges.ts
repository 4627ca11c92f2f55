/**
 * The charge worker: every CHARGES_POLL_MS, settles pending charges (paid / expired / failed)
 * from the payments the chain follower recorded, announces late payments (charge.delayed), and
 * sweeps every settled charge's address, following each sweep to confirmation
 * (src/modules/charges: charges.settlement.ts, charges.sweeps.ts). Safe with several processes:
 * each final move is a conditional update, each transaction in flight a unique row.
 */
import type { AppContext } from '../context.js';
import type { ChargeService } from '../modules/charges/charges.service.js';
import type { Worker } from './worker.js';
import { startLoop } from './loop.js';

export function startChargeWorker(ctx: AppContext, charges: ChargeService): Worker {
  const log = ctx.log.child({ component: 'charges' });
  log.info({ interval_ms: ctx.config.chargesPollMs }, 'charge worker started');
  return startLoop({ name: 'charges', intervalMs: ctx.config.chargesPollMs, log, tick: (stopping) => charges.tick(stopping) });
}
