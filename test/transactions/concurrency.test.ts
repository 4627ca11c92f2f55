/**
 * No double spend: 20 concurrent creates against a balance that covers 5 of them. Exactly 5
 * are accepted, with 5 distinct consecutive nonces, and the chain ends exact to the wei. One
 * service here (on SQLite its single writer serialises the creates); the PostgreSQL run adds
 * two service instances over one database in scale-out.pg.test.ts.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp, type TestUser } from '../helpers/app.js';
import { startTestChain, type TestChain } from '../helpers/chain.js';
import { ETH, fundedWallet, publicClient, RECIPIENT, waitForCursor } from '../helpers/transfers.js';
import { expectExactlyFive, race, START } from './race.js';

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

describe('concurrent creates on one wallet', () => {
  it('accept exactly as many as the balance covers (one service)', async () => {
    const w = await fundedWallet(a, chain, user, networkId, START);
    const before = await publicClient(chain.rpcUrl).getBalance({ address: RECIPIENT });
    await expectExactlyFive(a, chain, w, await race([a], user, w));
    expect(await publicClient(chain.rpcUrl).getBalance({ address: RECIPIENT })).toBe(before + 5n * ETH);
  });
});
