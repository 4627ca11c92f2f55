/**
 * A replacement recorded while the watcher reads a block (found by the simulation, seed 2806,
 * PostgreSQL): the follower read the transfer with its cancel current, the block mined that
 * cancel, and before the follower took the wallet's lock a speed-up of the cancel was recorded
 * (its send answered 429: it stayed current). The block was then attached to the row by id, which
 * kept the speed-up's hash: the transfer showed a hash that never mined, and the mined cancel
 * matched nothing the service reported. Now the attach holds only while the mined version is
 * current, and adopts it otherwise.
 *
 * The race is inside one watcher tick, so the test drives the tick's two halves itself, on a real
 * anvil that does not mine by itself: `readBlockTransfers` (before the lock), the replacement
 * committed as the speed-up commits it (`recordReplacement`), then `recordBlockTransfers`.
 */
import type { Hex } from 'viem';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp, type TestUser } from '../helpers/app.js';
import { startTestChain, type TestChain } from '../helpers/chain.js';
import { loadWatched, readBlockTransfers, recordBlockTransfers, type SyncScope } from '../../src/modules/transactions/transactions.chain-sync.js';
import { recordReplacement } from '../../src/modules/transactions/transactions.repository.js';
import { ETH, fundedWallet, publicClient, RECIPIENT } from './support.js';

let t: TestApp;
let chain: TestChain;
let networkId: number;
let user: TestUser;

beforeAll(async () => {
  t = await startTestApp({ workers: false });
  chain = await startTestChain();
  networkId = await chain.register(t);
  user = await t.createUser();
  await chain.rpc('evm_setAutomine', [false]);
});

afterAll(async () => {
  await t?.close();
  await chain?.stop();
});

describe('a replacement recorded between the block read and its recording', () => {
  it('the transfer takes the hash that mined, and the unmined replacement is only a replaced hash', async () => {
    const w = await fundedWallet(t, chain, user, networkId, 5n * ETH);
    const res = await t.request('POST', `/api/wallet/${w.id}/transaction/create`, { token: user.token, body: { amount: '1', token: 'ETH', address: RECIPIENT } });
    expect(res.status).toBe(200);
    const mined = res.body.data.tx_hash as Hex;
    await chain.mine(1);
    const client = publicClient(chain.rpcUrl);
    const receipt = await client.getTransactionReceipt({ hash: mined });
    const block = await client.getBlock({ blockNumber: receipt.blockNumber, includeTransactions: true });
    const scope: SyncScope = {
      ctx: t.ctx,
      networkId,
      client,
      log: t.ctx.log,
      net: (p) => p,
      fenced: (fn) => t.store.db.transaction().execute(fn),
      affected: new Set(),
    };
    // The follower's read, before any lock: the transfer with its first version current.
    const read = await readBlockTransfers(scope, block, await loadWatched(t.store.db, networkId));
    expect(read.ours.map((o) => [o.rec.id, o.rec.tx_hash, o.hash])).toEqual([[res.body.data.id, mined, mined]]);
    // A speed-up committed meanwhile (its send unanswered: it stays the current version).
    const sped = `0x${'5e'.repeat(32)}`;
    await recordReplacement(t.store.db, res.body.data.id, { tx_hash: sped, raw_tx: '0x02', kind: 'speed-up', gas: 21000n, gas_price: 3n * 10n ** 9n, tx_kind: 'eip1559', max_priority_fee_per_gas: 2n * 10n ** 9n }, 10n ** 15n, Date.now());
    await t.store.db.transaction().execute((trx) => recordBlockTransfers(trx, read, { settledNow: false, nowMs: Date.now(), log: t.ctx.log }));
    const shown = await t.request('GET', `/api/wallet/${w.id}/transaction/show/${res.body.data.id}`, { token: user.token });
    expect(shown.body.data).toMatchObject({ tx_hash: mined, block_number: Number(receipt.blockNumber), block_hash: receipt.blockHash, replaced_hashes: [sped], status: 'pending' });
    expect(shown.body.data.gas_price).toBe(`${(receipt.effectiveGasPrice / 10n ** 18n).toString()}.${(receipt.effectiveGasPrice % 10n ** 18n).toString().padStart(18, '0')}`);
  });
});
