/**
 * For the tests that time how long a wallet's lock is held on PostgreSQL (test/helpers/lock-hold.ts):
 * the service and a chain, a user with a funded wallet, a proxy in front of the database that holds
 * every answer for `delayMs`, and a store straight to the server (to hold and probe the lock).
 * The test starts the slow service itself (`startTestApp` on the same database, through `proxy.url`).
 */
import { createStore, type Store } from '../../src/db/index.js';
import { startTestApp, type TestApp, type TestUser } from '../helpers/app.js';
import { startTestChain, type TestChain } from '../helpers/chain.js';
import { startDelayProxy, type DelayProxy } from '../helpers/delay-proxy.js';
import { ETH, fundedWallet, type FundedWallet } from '../helpers/transfers.js';

export interface LockHoldSuite {
  t: TestApp;
  chain: TestChain;
  user: TestUser;
  w: FundedWallet;
  proxy: DelayProxy;
  direct: Store;
  /** The service on the same database through the proxy (`slow(opts)` starts it; closed with the suite). */
  slow(opts: { workers: boolean }): Promise<TestApp>;
  close(): Promise<void>;
}

export async function startLockHoldSuite(delayMs: number): Promise<LockHoldSuite> {
  const t = await startTestApp({ workers: false });
  const chain = await startTestChain();
  const networkId = await chain.register(t);
  const user = await t.createUser();
  const w = await fundedWallet(t, chain, user, networkId, 5n * ETH);
  const proxy = await startDelayProxy(t.database.databaseUrl!, delayMs);
  const direct = createStore({ databaseUrl: t.database.databaseUrl, dataDir: t.database.dataDir, dbPoolSize: 3 });
  const started: TestApp[] = [];
  return {
    t,
    chain,
    user,
    w,
    proxy,
    direct,
    slow: async ({ workers }) => {
      const app = await startTestApp({ database: t.database, keepDatabase: true, workers, env: { DATABASE_URL: proxy.url } });
      started.push(app);
      return app;
    },
    close: async () => {
      for (const app of started) await app.close();
      await proxy.close();
      await direct.destroy();
      await t.close();
      await chain.stop();
    },
  };
}
