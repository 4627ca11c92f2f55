/**
 * `npm start`: config, migrations, devnet, networks, bootstrap user, listen, workers, and a
 * SIGTERM drain (stop accepting, finish in-flight requests, stop workers after their current
 * item, stop the devnet, close the store, exit 0).
 */
import { join } from 'node:path';
import type { AppContext } from './context.js';
import { ConfigError, loadConfig, type Config } from './config.js';
import { createLogger } from './logger.js';
import { createContext, openStore } from './runtime.js';
import { buildApp } from './app.js';
import { DevnetUnavailable, startDevnet, type Devnet } from './chain/devnet.js';
import { registerDevnet, registerNetworksFile } from './modules/networks/networks.service.js';
import { ensureDevnetSweeper } from './modules/networks/sweeper-deploy.js';
import { ensureDevnetFeeds } from './modules/rates/devnet-feeds.js';
import { AuthService } from './modules/auth/auth.service.js';
import { startWorkers, type Workers } from './workers/index.js';
import { bannerLines, developmentWarnings } from './banner.js';
import { redactUrl } from './lib/redact.js';
import { listNetworks } from './modules/networks/networks.repository.js';
import type { Store } from './db/index.js';
import type { Logger } from 'pino';

async function main(): Promise<void> {
  const config = readConfigOrExit();
  const log = createLogger(config.logLevel);
  const store = await openStore(config, log);
  // Before the devnet: a SCREENING_FILE it cannot read stops the start with nothing to stop.
  const ctx = createContext(config, store, log);
  const devnet = await maybeStartDevnet(config, log);
  await registerStartupData(ctx, devnet);

  const { app, services } = await buildApp(ctx);
  await listenOrExplain(app, config);
  const workers: Workers | null = config.workers ? startWorkers(ctx, services) : null;
  await printBanner(config, store, log, app.listeningOrigin);
  installShutdown(ctx, async () => {
    await app.close();
    log.info('http server closed');
    await workers?.stop();
    log.info('workers stopped');
    ctx.chains.close();
    await devnet?.stop();
    await store.destroy();
  });
}

function readConfigOrExit(): Config {
  try {
    return loadConfig();
  } catch (e) {
    if (e instanceof ConfigError) {
      process.stderr.write(`${e.message}\n`);
      process.exit(1);
    }
    throw e;
  }
}

async function maybeStartDevnet(config: Config, log: Logger): Promise<Devnet | null> {
  if (!config.devnet.spawn) return null;
  log.info({ port: config.devnet.port }, 'starting local devnet (anvil)');
  return startDevnet({
    port: config.devnet.port,
    statePath: join(config.dataDir, 'devnet-state.json'),
    logger: log.child({ component: 'devnet' }),
  });
}

/** The devnet network, NETWORKS_FILE and the bootstrap user. */
async function registerStartupData(ctx: AppContext, devnet: Devnet | null): Promise<void> {
  const { config, store, log } = ctx;
  const now = ctx.clock.nowMs();
  if (config.devnet.register) {
    const n = await registerDevnet(store.db, devnet ? [devnet.rpcUrl] : config.devnet.rpcUrls, now);
    log.info({ network_id: n.id, rpc_url: redactUrl(n.rpc_url) }, 'network registered: Local devnet');
    await ensureDevnetSweeper(store.db, n, log, now);
    await ensureDevnetFeeds(store.db, n, log, now);
  }
  if (config.networksFile !== null) {
    const list = await registerNetworksFile(store.db, config.networksFile, now);
    log.info({ count: list.length }, 'networks registered from NETWORKS_FILE');
  }
  if (config.bootstrap !== null) {
    const created = await new AuthService(ctx).ensureUser(config.bootstrap.email, config.bootstrap.password);
    if (created) log.info({ email: config.bootstrap.email }, 'bootstrap user created');
  }
}

/** Listens on HOST:PORT; a port taken or refused stops the start with one line naming PORT. */
async function listenOrExplain(app: Awaited<ReturnType<typeof buildApp>>['app'], config: Config): Promise<void> {
  try {
    await app.listen({ host: config.host, port: config.port });
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code !== 'EADDRINUSE' && code !== 'EACCES') throw e;
    const reason = code === 'EADDRINUSE' ? 'is already in use (another `npm start`?)' : 'cannot be bound (permission denied)';
    throw new StartRefused(`port ${config.port} on ${config.host} ${reason}: set PORT to a free port`);
  }
}

/** A reason to stop the start that one line explains. */
class StartRefused extends Error {}

/** SIGTERM/SIGINT: run `drain` once, exit 0 when it finishes, 1 on failure or time-out. */
function installShutdown(ctx: AppContext, drain: () => Promise<void>): void {
  const { config, log } = ctx;
  let stopping = false;
  const shutdown = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    log.info({ signal }, 'shutting down: draining requests and workers');
    const timer = setTimeout(() => {
      log.error('shutdown timed out; exiting');
      process.exit(1);
    }, config.shutdownTimeoutMs);
    timer.unref();
    try {
      await drain();
      log.info('shutdown complete');
      process.exit(0);
    } catch (e) {
      log.error({ err: e }, 'shutdown failed');
      process.exit(1);
    }
  };
  process.on('SIGTERM', () => void shutdown('SIGTERM'));
  process.on('SIGINT', () => void shutdown('SIGINT'));
}

/** The start banner on stdout, and each development default as a warning in the log. */
async function printBanner(config: Config, store: Store, log: Logger, url: string): Promise<void> {
  const networks = await listNetworks(store.db);
  process.stdout.write(`${bannerLines({ config, url, driver: store.driver, networks }).join('\n')}\n`);
  for (const w of developmentWarnings(config)) log.warn(`development default in force: ${w}`);
}

main().catch((e) => {
  // A known reason to stop is one line; anything else keeps its stack for the operator.
  process.stderr.write(
    e instanceof DevnetUnavailable || e instanceof ConfigError || e instanceof StartRefused
      ? `fatal: ${e.message}\n`
      : `fatal: ${(e as Error).stack ?? String(e)}\n`,
  );
  process.exit(1);
});
