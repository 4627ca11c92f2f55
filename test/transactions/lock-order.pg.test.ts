/**
 * PostgreSQL only: one lock order for the chain watcher's block transaction and transfer
 * creation. A create takes its wallet's row lock, then its user's event-order lock (the
 * `transaction.created` event). The watcher records a batch of blocks in one transaction; when it
 * took each block's wallet locks as it reached the block, a receipt to wallet A (A's lock, then
 * the user's event lock) followed by a receipt to wallet B (B's lock) crossed a create on B
 * holding B and waiting for the event lock: a deadlock, and PostgreSQL aborted one side (the
 * create answered 500, or the watcher's tick failed). Here the watcher catches up 40 blocks,
 * alternating receipts to two wallets of one user, while creates run on both without pause.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type ApiResponse, type TestApp, type TestUser } from '../helpers/app.js';
import { startTestChain, type TestChain } from '../helpers/chain.js';
import { waitFor } from '../helpers/wait.js';
import { ETH, fundedWallet, RECIPIENT, sendFromOutsider, txRows, waitForCursor, type FundedWallet } from '../helpers/transfers.js';

let t: TestApp;
let chain: TestChain;
let networkId: number;
let user: TestUser;

beforeAll(async () => {
  t = await startTestApp({ workers: true, env: { DB_POOL_SIZE: '20', WATCHER_POLL_MS: '50' } });
  chain = await startTestChain();
  networkId = await chain.register(t);
  await waitForCursor(t, networkId);
  user = await t.createUser();
});

afterAll(async () => {
  await t?.close();
  await chain?.stop();
});

const BLOCKS = 40;

/** Creates on `w` one after another, `lanes` at a time, until `done()`; every answer kept. */
async function createUntil(w: FundedWallet, lanes: number, done: () => boolean, out: ApiResponse[]): Promise<void> {
  const body = { amount: '0.001', token: 'ETH', address: RECIPIENT };
  const lane = async () => {
    while (!done()) out.push(await t.request('POST', `/api/wallet/${w.id}/transaction/create`, { token: user.token, body }));
  };
  await Promise.all(Array.from({ length: lanes }, lane));
}

describe('lock order on PostgreSQL', () => {
  it('creates on two wallets of one user while the watcher records a batch of blocks with receipts to both: no 500, no deadlock', async () => {
    const a = await fundedWallet(t, chain, user, networkId, 100n * ETH);
    const b = await fundedWallet(t, chain, user, networkId, 100n * ETH);
    // The watcher is stopped while the blocks are mined, so that it records them in batches.
    await t.workers!.stop();
    const from = await chain.blockNumber();
    const hashes: string[] = [];
    for (let i = 0; i < BLOCKS; i++)
      hashes.push(await sendFromOutsider(chain.rpcUrl, i % 2 === 0 ? a.address : b.address, ETH / 1000n + BigInt(i)));
    expect(await chain.blockNumber()).toBe(from + BLOCKS);

    const logsBefore = t.logs.length;
    t.startWorkers();
    const answers: ApiResponse[] = [];
    let caughtUp = false;
    const load = Promise.all([createUntil(a, 3, () => caughtUp, answers), createUntil(b, 3, () => caughtUp, answers)]);
    await waitForCursor(t, networkId, from + BLOCKS).finally(() => (caughtUp = true));
    await load;

    const logs = t.logs.slice(logsBefore).join('');
    const deadlocks = logs
      .split('\n')
      .filter((l) => /deadlock/i.test(l))
      .map((l) => l.slice(0, 300));
    const statuses = answers.map((r) => r.status);
    expect(answers.length).toBeGreaterThan(10);
    expect(
      statuses.filter((s) => s !== 200),
      deadlocks.join('\n'),
    ).toEqual([]);
    expect(deadlocks).toEqual([]);
    expect(logs).not.toContain('watcher tick failed');

    // Every outsider transfer is one receipt, each recorded once.
    const receipts = [...(await txRows(t, a.id)), ...(await txRows(t, b.id))].filter((r) => r.type === 'receipt');
    expect(receipts.map((r) => r.tx_hash).sort()).toEqual([...hashes].sort());
    // And every create that answered 200 is recorded (the watcher confirms them meanwhile).
    await waitFor(
      async () => {
        const rows = [...(await txRows(t, a.id)), ...(await txRows(t, b.id))].filter((r) => r.type === 'transfer');
        return rows.length === answers.length && rows.every((r) => r.status === 'confirmed');
      },
      { timeoutMs: 30_000, message: 'every created transfer confirmed' },
    );
  });
});
