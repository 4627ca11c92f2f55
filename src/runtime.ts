/**
 * Building the runtime pieces shared by the server, the CLI and the tests: the secret box
 * from APP_KEY (or the development key file), the store (migrated), the context.
 */
import { join } from 'node:path';
import type { Logger } from 'pino';
import type { Config } from './config.js';
import { createStore, type Store } from './db/index.js';
import { migrateToLatest } from './db/migrate.js';
import { syncStoredItemJson } from './modules/transactions/transactions.item-json.repository.js';
import { keyIdOf, loadOrCreateKeyFile, parseAppKey, SecretBox } from './lib/crypto.js';
import { systemClock, type Clock } from './lib/time.js';
import { ChainClients, type ChainClientOptions } from './chain/clients.js';
import type { AppContext } from './context.js';
import { openScreening } from './modules/screening/screening.js';

export function appKeyFile(config: Config): string {
  return join(config.dataDir, 'app.key');
}

/** The secret box: APP_KEY (and older keys for decryption), or the development key file. */
export function createSecretBox(config: Config): SecretBox {
  const active = config.appKey !== null ? parseAppKey(config.appKey) : loadOrCreateKeyFile(appKeyFile(config));
  const byId = new Map<string, Buffer>();
  for (const key of [active, ...config.appPreviousKeys.map(parseAppKey)]) byId.set(keyIdOf(key), key);
  return new SecretBox(
    [...byId].map(([id, key]) => ({ id, key })),
    keyIdOf(active),
  );
}

export async function openStore(config: Config, log: Logger): Promise<Store> {
  const store = createStore(config);
  const result = await migrateToLatest(store);
  const applied = (result.results ?? []).filter((r) => r.status === 'Success').map((r) => r.migrationName);
  log.info({ driver: store.driver, applied }, applied.length > 0 ? 'migrations applied' : 'schema up to date');
  const started = Date.now();
  const rewritten = await syncStoredItemJson(store.db, store.driver);
  if (rewritten !== null && rewritten > 0)
    log.info({ rows: rewritten, ms: Date.now() - started }, 'transaction list items rewritten for this version');
  return store;
}

/**
 * `chains`: the node clients' settings beside the config's (tests lengthen a read's time-out).
 * Reads SCREENING_FILE: a ConfigError when it cannot be read or has a bad line.
 */
export function createContext(
  config: Config,
  store: Store,
  log: Logger,
  clock: Clock = systemClock,
  chains: Partial<ChainClientOptions> = {},
): AppContext {
  const screening = openScreening(config.screeningFile, log); // first: it may refuse the boot
  return {
    config,
    store,
    log,
    secrets: createSecretBox(config),
    clock,
    chains: new ChainClients({ maxLagBlocks: config.rpcMaxLagBlocks, healthEveryMs: config.watcher.pollIntervalMs, ...chains }),
    screening,
  };
}
