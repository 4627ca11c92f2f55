/**
 * For tests that drive the watcher's steps themselves (a race inside one tick): the service
 * without workers, a test chain that mines only when told, a user, the watcher's scope for the
 * network, and a transfer created over HTTP and mined in one block.
 */
import { sql } from 'kysely';
import type { Hex, TransactionReceipt } from 'viem';
import { expect } from 'vitest';
import { startTestApp, type TestApp, type TestUser } from '../helpers/app.js';
import { startTestChain, type TestChain } from '../helpers/chain.js';
import type { SyncScope } from '../../src/modules/transactions/transactions.chain-sync.js';
import { ETH, fundedWallet, publicClient, RECIPIENT } from '../helpers/transfers.js';

export interface StepSuite {
  t: TestApp;
  chain: TestChain;
  networkId: number;
  user: TestUser;
  close(): Promise<void>;
}

export async function startStepSuite(): Promise<StepSuite> {
  const t = await startTestApp({ workers: false });
  const chain = await startTestChain();
  const networkId = await chain.register(t);
  const user = await t.createUser();
  await chain.rpc('evm_setAutomine', [false]);
  return {
    t,
    chain,
    networkId,
    user,
    close: async () => {
      await t.close();
      await chain.stop();
    },
  };
}

/** The watcher's scope of the suite's network: every node call and fenced transaction run as they are. */
export function syncScope(s: StepSuite): SyncScope {
  return {
    ctx: s.t.ctx,
    networkId: s.networkId,
    client: publicClient(s.chain.rpcUrl),
    log: s.t.ctx.log,
    net: (p) => p,
    fenced: (fn) => s.t.store.db.transaction().execute(fn),
    affected: new Set(),
  };
}

/** A funded wallet's transfer of 1 ETH, created over HTTP and mined in the next block. */
export async function minedTransfer(s: StepSuite): Promise<{ walletId: number; id: number; hash: Hex; receipt: TransactionReceipt }> {
  const w = await fundedWallet(s.t, s.chain, s.user, s.networkId, 5n * ETH);
  const res = await s.t.request('POST', `/api/wallet/${w.id}/transaction/create`, {
    token: s.user.token,
    body: { amount: '1', token: 'ETH', address: RECIPIENT },
  });
  expect(res.status).toBe(200);
  const hash = res.body.data.tx_hash as Hex;
  await s.chain.mine(1);
  const receipt = await publicClient(s.chain.rpcUrl).getTransactionReceipt({ hash });
  return { walletId: w.id, id: res.body.data.id as number, hash, receipt };
}

/** PostgreSQL: sessions of the suite's database waiting for a lock (a step blocked on a wallet's row lock). */
export async function lockWaiters(s: StepSuite): Promise<number> {
  const r = await sql<{
    n: string;
  }>`select count(*) as n from pg_stat_activity where datname = current_database() and wait_event_type = 'Lock'`.execute(s.t.store.db);
  return Number(r.rows[0]!.n);
}
