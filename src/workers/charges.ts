/**
 * The charge worker: every CHARGES_POLL_MS (and within BLOCKS_NUDGE_MS of the chain follower
 * committing blocks while charges are watched, in this process), settles pending charges (paid / expired / failed)
 * from the payments the chain follower recorded, announces late payments (charge.delayed), and
 * sweeps every settled charge's address, following each sweep to confirmation
 * (src/modules/charges: charges.settlement.ts, charges.sweeps.ts). Safe with several processes:
 * each final move is a conditional update, each transaction in flight a unique row.
 */
import type { AppContext } from '../context.js';
import type { ChargeService } from '../modules/charges/charges.service.js';
import type { Worker } from './worker.js';
import { startLoop } from './loop.js';
import { onChargeBlocks } from '../modules/charges/charges.chain-sync.js';

/** After the follower committed blocks with charges watched, the next tick comes within this (coalescing a fast chain's blocks). */
const BLOCKS_NUDGE_MS = 100;

export function startChargeWorker(ctx: AppContext, charges: ChargeService): Worker {
  const log = ctx.log.child({ component: 'charges' });
  log.info({ interval_ms: ctx.config.chargesPollMs }, 'charge worker started');
  const off = onChargeBlocks(() => loop.nudge(BLOCKS_NUDGE_MS));
  const loop = startLoop({
    name: 'charges',
    intervalMs: ctx.config.chargesPollMs,
    log,
    tick: (stopping) => charges.tick(stopping),
    onStopRequested: off,
  });
  return loop;
}
