/**
 * No double spend: 20 concurrent creates against a balance that covers 5 of them. Exactly 5
 * are accepted, with 5 distinct consecutive nonces, and the chain ends exact to the wei. On
 * SQLite one service (its single writer serialises the creates); on PostgreSQL two service
 * instances, each with its own connection pool, over one database (the wallet row lock
 * serialises them across processes).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp, type TestUser } from '../helpers/app.js';
import { startTestChain, type TestChain } from '../helpers/chain.js';
import { onPostgres } from '../helpers/db.js';
import { waitFor } from '../helpers/wait.js';
import { ETH, fundedWallet, publicClient, RECIPIENT, txRows, waitForCursor, type FundedWallet } from './support.js';

let a: TestApp;
let chain: TestChain;
let networkId: number;
let user: TestUser;

beforeAll(async () => {
  a = await startTestApp({ workers: true, keepDatabase: true });
  chain = await startTestChain();
  networkId = await chain.register(a);
  await waitForCursor(a, networkId);
  user = await a.createUser();
});

afterAll(async () => {
  const db = a?.database;
  await a?.close();
  await db?.drop();
  await chain?.stop();
});

/** 5 × 1 ETH plus their fees fit; a sixth does not. */
const START = 5n * ETH + ETH / 2n;

async function race(apps: TestApp[], w: FundedWallet) {
  const body = { amount: '1', token: 'ETH', address: RECIPIENT };
  const results = await Promise.all(
    Array.from({ length: 20 }, (_, i) => apps[i % apps.length]!.request('POST', `/api/wallet/${w.id}/transaction/create`, { token: user.token, body })),
  );
  return results;
}

async function expectExactlyFive(app: TestApp, w: FundedWallet, results: Awaited<ReturnType<typeof race>>) {
  const accepted = results.filter((r) => r.status === 200);
  const refused = results.filter((r) => r.status !== 200);
  expect(accepted).toHaveLength(5);
  expect(refused).toHaveLength(15);
  for (const r of refused) expect(r.body).toEqual({ status: 'error', message: 'Insufficient balance for transaction', data: null });
  expect(accepted.map((r) => r.body.data.nonce).sort()).toEqual([0, 1, 2, 3, 4]);

  // All five mined and confirmed; the chain shows exactly five transactions from the wallet.
  const rows = await waitFor(async () => {
    const r = await txRows(app, w.id);
    return r.filter((x) => x.type === 'transfer').length === 5 && r.every((x) => x.status === 'confirmed') ? r : null;
  }, { timeoutMs: 30_000 });
  const client = publicClient(chain.rpcUrl);
  expect(await client.getTransactionCount({ address: w.address })).toBe(5);
  const fees = rows.reduce((s, r) => s + BigInt(r.gas_used!) * BigInt(r.gas_price!), 0n);
  expect(await client.getBalance({ address: w.address })).toBe(START - 5n * ETH - fees);
}

describe('concurrent creates on one wallet', () => {
  it('accept exactly as many as the balance covers (one service)', async () => {
    const w = await fundedWallet(a, chain, user, networkId, START);
    const before = await publicClient(chain.rpcUrl).getBalance({ address: RECIPIENT });
    await expectExactlyFive(a, w, await race([a], w));
    expect(await publicClient(chain.rpcUrl).getBalance({ address: RECIPIENT })).toBe(before + 5n * ETH);
  });

  it.runIf(onPostgres)('accept exactly as many as the balance covers (two service instances, one PostgreSQL)', async () => {
    const b = await startTestApp({ database: a.database, keepDatabase: true });
    try {
      const w = await fundedWallet(a, chain, user, networkId, START);
      const results = await race([a, b], w);
      // Both instances answered some of the requests, and accepted ones came from both sides or one: either way 5 in all.
      await expectExactlyFive(a, w, results);
    } finally {
      await b.close();
    }
  });
});
