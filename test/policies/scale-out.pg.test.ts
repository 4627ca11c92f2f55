/**
 * The daily limit across processes, on PostgreSQL (collected only when DATABASE_URL is set):
 * two real service processes (src/server.ts) over one database share 20 concurrent creates of
 * 0.1 ETH against a daily limit of 0.5 ETH. The daily sum is read under the wallet's row lock
 * (`FOR UPDATE`) inside each create's transaction, so exactly 5 are accepted in all and the
 * chain shows exactly 5 × 0.1 ETH sent.
 */
import { afterAll, beforeAll, describe, it } from 'vitest';
import type { ApiResponse, TestApp, TestUser } from '../helpers/app.js';
import { startTestApp } from '../helpers/app.js';
import { startTestChain, type TestChain } from '../helpers/chain.js';
import { createTestDatabase, type TestDatabase } from '../helpers/db.js';
import { startService, stop, type Service } from '../helpers/process.js';
import { ETH, fundedWallet, publicClient, RECIPIENT } from '../helpers/transfers.js';
import { expectFiveUnderDaily, policyApi } from './support.js';

let database: TestDatabase;
let t: TestApp;
let chain: TestChain;
let user: TestUser;
let networkId: number;
let a: Service | undefined;
let b: Service | undefined;

beforeAll(async () => {
  database = await createTestDatabase();
  t = await startTestApp({ database, keepDatabase: true });
  chain = await startTestChain();
  networkId = await chain.register(t);
  user = await t.createUser();
  [a, b] = await Promise.all([startService(database), startService(database)]);
}, 150_000);

afterAll(async () => {
  await Promise.all([stop(a), stop(b)]);
  await t?.close();
  await database?.drop();
  await chain?.stop();
});

async function post(base: string, path: string, token: string, body: unknown): Promise<ApiResponse> {
  const res = await fetch(`${base}${path}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, headers: res.headers, body: JSON.parse(text), text };
}

describe('two service processes, one PostgreSQL', () => {
  it('20 concurrent creates against a daily limit that admits 5: exactly 5 accepted in all', async () => {
    const w = await fundedWallet(t, chain, user, networkId, 10n * ETH);
    await policyApi(t, w.id, user.token).setPolicy({ daily: { ETH: '0.5' } });
    const before = await publicClient(chain.rpcUrl).getBalance({ address: RECIPIENT });
    const body = { amount: '0.1', token: 'ETH', address: RECIPIENT };
    const results = await Promise.all(
      Array.from({ length: 20 }, (_, i) => post((i % 2 === 0 ? a : b)!.url, `/api/wallet/${w.id}/transaction/create`, user.token, body)),
    );
    await expectFiveUnderDaily(chain, w, results, before);
  });
});
