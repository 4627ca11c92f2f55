/**
 * What the modules and workers are given: config, store, logger, secrets, clock, the node
 * clients and the screening list, passed explicitly (no globals, no DI container).
 */
import type { Logger } from 'pino';
import type { Config } from './config.js';
import type { Store } from './db/index.js';
import type { SecretBox } from './lib/crypto.js';
import type { Clock } from './lib/time.js';
import type { ChainClients } from './chain/clients.js';
import type { Screening } from './modules/screening/screening.js';

export interface AppContext {
  readonly config: Config;
  readonly store: Store;
  readonly log: Logger;
  readonly secrets: SecretBox;
  readonly clock: Clock;
  readonly chains: ChainClients;
  /** SCREENING_FILE's blocked addresses: `ctx.screening.isBlocked(address)` (src/modules/screening/screening.ts). */
  readonly screening: Screening;
}
