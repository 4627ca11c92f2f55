/**
 * ERC-20 sweeps with several service processes on one PostgreSQL database: the gas a deposit
 * address needs is sent by the main wallet exactly once per charge, however many processes
 * sweep at the same time (the top-up's row is claimed inside the transaction service's
 * recording transaction, under the wallet's lock, before anything is signed or sent).
 * Collected only when DATABASE_URL is set (vitest.config.ts).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseEther, type Address } from 'viem';
import { findFreePort } from '../../src/chain/devnet.js';
import { startTestApp, TEST_APP_KEY, type TestApp, type TestUser } from '../helpers/app.js';
import { startTestChain, type TestChain } from '../helpers/chain.js';
import { createTestDatabase, type TestDatabase } from '../helpers/db.js';
import { deployErc20, erc20BalanceOf, mintErc20 } from '../helpers/erc20.js';
import { runTs, type Proc } from '../helpers/process.js';
import { CREATE2_FACTORY } from '../../src/chain/sweeper.js';
import { waitFor } from '../helpers/wait.js';
import { chargeApi } from './support.js';

let database: TestDatabase;
let t: TestApp;
let chain: TestChain;
let other: Proc | null = null;

beforeAll(async () => {
  database = await createTestDatabase();
  chain = await startTestChain();
  t = await startTestApp({ database, keepDatabase: true, env: { CHARGES_POLL_MS: '50', WATCHER_POLL_MS: '50' } });
});

afterAll(async () => {
  other?.child.kill('SIGKILL');
  await other?.exited;
  await t?.close();
  await database?.drop();
  await chain?.stop();
});

const topUpRows = (app: TestApp, walletId: number, address: string) =>
  app.store.db
    .selectFrom('transactions')
    .select(['id', 'status'])
    .where('wallet_id', '=', walletId)
    .where('to_address', '=', address)
    .execute();
const gasRows = (app: TestApp, chargeId: number) =>
  app.store.db.selectFrom('charge_sweeps').select('id').where('charge_id', '=', chargeId).where('kind', '=', 'gas').execute();

async function shopWithToken(
  app: TestApp,
  networkId: number,
): Promise<{ user: TestUser; wallet: { id: number; address: string }; usdc: Address }> {
  const user = await app.createUser();
  const wallet = (await app.request('POST', '/api/wallet/create', { token: user.token, body: { name: 'Shop', network_id: networkId } }))
    .body.data;
  const usdc = await deployErc20(chain.rpcUrl, { name: 'USD Coin', symbol: 'USDC', decimals: 6 });
  expect((await app.request('POST', `/api/wallet/${wallet.id}/token/add`, { token: user.token, body: { contract: usdc } })).status).toBe(
    200,
  );
  await chain.setBalance(wallet.address, parseEther('10'));
  return { user, wallet, usdc };
}

describe('ERC-20 sweeps across processes', () => {
  it('two real service processes sweeping 6 token charges: one gas top-up per charge', async () => {
    const port = await findFreePort();
    // A devnet without the deterministic-deployment proxy gets no Sweeper: its token charges keep
    // keyed addresses, whose gas top-ups across processes are what this file is about.
    await chain.rpc('anvil_setCode', [CREATE2_FACTORY, '0x']);
    other = runTs('src/server.ts', [], {
      NODE_ENV: 'test',
      PORT: String(port),
      DATA_DIR: database.dataDir,
      DATABASE_URL: database.databaseUrl!,
      DEVNET_RPC_URL: chain.rpcUrl,
      APP_KEY: TEST_APP_KEY,
      WATCHER_POLL_MS: '50',
      CHARGES_POLL_MS: '50',
      LOG_LEVEL: 'info',
    });
    // Registered, and its start's own sends from anvil's first dev account (the devnet's price
    // feeds) done: the test deploys its token from that account too, and would race their nonces.
    const network = await waitFor(
      () =>
        t.store.db
          .selectFrom('networks')
          .select('id')
          .where('name', '=', 'Local devnet')
          .where('price_feeds', 'is not', null)
          .executeTakeFirst(),
      {
        timeoutMs: 30_000,
        message: 'the other process registers the devnet and deploys its price feeds',
      },
    );
    t.startWorkers();
    const { user, wallet, usdc } = await shopWithToken(t, network.id);
    const api = chargeApi(t, wallet.id, user.token);
    const charges = await Promise.all(Array.from({ length: 6 }, () => api.create({ amount: '25', token: 'USDC', expires: 600 })));
    for (const c of charges) await mintErc20(chain.rpcUrl, usdc, c.address, 25_000_000n);

    for (const c of charges) {
      await api.until(
        c.id,
        (x) => x.sweeps.some((w: { token: string; status: string }) => w.token === 'USDC' && w.status === 'confirmed'),
        `charge ${c.id} swept`,
        30_000,
      );
      expect(await erc20BalanceOf(chain.rpcUrl, usdc, c.address)).toBe(0n);
      expect(await topUpRows(t, wallet.id, c.address)).toHaveLength(1);
      expect(await gasRows(t, c.id)).toHaveLength(1);
    }
    expect(await erc20BalanceOf(chain.rpcUrl, usdc, wallet.address as Address)).toBe(150_000_000n);
    const sent =
      t.logs.filter((l) => l.includes('gas sent to a charge deposit address')).length +
      (other.output().match(/gas sent to a charge deposit address/g)?.length ?? 0);
    expect(sent).toBe(6);
  });

  it('two instances sweeping the same charge at the same moment: one top-up, one token sweep', async () => {
    const networkId =
      (await t.store.db.selectFrom('networks').select('id').where('name', '=', 'Local devnet').executeTakeFirst())?.id ??
      (await chain.register(t));
    await t.workers?.stop();
    other?.child.kill('SIGKILL');
    await other?.exited;
    other = null;
    // Two instances, each with its own pool. b runs the watcher; both charge workers stay
    // idle (their first tick is at start), so the test runs their sweeps side by side.
    const idle = { CHARGES_POLL_MS: '600000', WATCHER_POLL_MS: '50', WATCHER_LEASE_MS: '1000' };
    const a = await startTestApp({ database, keepDatabase: true, env: idle });
    const b = await startTestApp({ database, keepDatabase: true, env: idle });
    try {
      b.startWorkers();
      const { user, wallet, usdc } = await shopWithToken(a, networkId);
      const api = chargeApi(a, wallet.id, user.token);
      const c = await api.create({ amount: '7', token: 'USDC', expires: 600 });
      await mintErc20(chain.rpcUrl, usdc, c.address, 7_000_000n);
      await waitFor(
        async () => {
          await a.services.charges.settle();
          return (await api.show(c.id)).status === 'paid';
        },
        { message: 'paid', timeoutMs: 30_000 },
      );

      // Both see the address due and no gas on it; both ask the main wallet for a top-up.
      await Promise.all([a.services.charges.sweep(), b.services.charges.sweep()]);
      expect(await topUpRows(a, wallet.id, c.address)).toHaveLength(1);
      expect(await gasRows(a, c.id)).toHaveLength(1);

      await waitFor(
        async () => {
          await Promise.all([a.services.charges.sweep(), b.services.charges.sweep()]);
          return (await erc20BalanceOf(chain.rpcUrl, usdc, wallet.address as Address)) === 7_000_000n;
        },
        { message: 'token swept', timeoutMs: 30_000 },
      );
      await waitFor(
        async () => {
          await Promise.all([a.services.charges.sweep(), b.services.charges.sweep()]);
          return (await api.show(c.id)).sweeps.some(
            (w: { token: string; status: string }) => w.token === 'USDC' && w.status === 'confirmed',
          );
        },
        { message: 'sweep confirmed', timeoutMs: 30_000 },
      );
      const done = await api.show(c.id);
      expect(done.sweeps.filter((w: { token: string }) => w.token === 'USDC')).toHaveLength(1);
      expect(await topUpRows(a, wallet.id, c.address)).toHaveLength(1);
    } finally {
      await a.close();
      await b.close();
    }
  });
});
