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
 * committed as the speed-up commits it (`recordReplacement`), then `attachMinedTransfers` in a pipelined transaction, as the watcher records a batch.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { attachMinedTransfers, loadWatched, readBlockTransfers } from '../../src/modules/transactions/transactions.chain-sync.js';
import { pipelinedTransaction } from '../../src/db/pipelined.js';
import { recordReplacement } from '../../src/modules/transactions/transactions.versions.repository.js';
import { minedTransfer, startStepSuite, syncScope, type StepSuite } from './watcher-steps.js';

let s: StepSuite;

beforeAll(async () => {
  s = await startStepSuite();
});

afterAll(async () => s?.close());

describe('a replacement recorded between the block read and its recording', () => {
  it('the transfer takes the hash that mined, and the unmined replacement is only a replaced hash', async () => {
    const { t, user } = s;
    const { walletId, id, hash: mined, receipt } = await minedTransfer(s);
    const scope = syncScope(s);
    const block = await scope.client.getBlock({ blockNumber: receipt.blockNumber, includeTransactions: true });
    // The follower's read, before any lock: the transfer with its first version current.
    const read = await readBlockTransfers(scope, block, await loadWatched(t.store.db, s.networkId));
    expect(read.ours.map((o) => [o.rec.id, o.rec.tx_hash, o.hash])).toEqual([[id, mined, mined]]);
    // A speed-up committed meanwhile (its send unanswered: it stays the current version).
    const sped = `0x${'5e'.repeat(32)}`;
    await recordReplacement(
      t.store.db,
      id,
      {
        tx_hash: sped,
        raw_tx: '0x02',
        kind: 'speed-up',
        gas: 21000n,
        gas_price: 3n * 10n ** 9n,
        tx_kind: 'eip1559',
        max_priority_fee_per_gas: 2n * 10n ** 9n,
      },
      10n ** 15n,
      Date.now(),
    );
    await pipelinedTransaction(t.store.db, (trx) => attachMinedTransfers(trx, [read], Date.now(), t.ctx.log));
    const shown = await t.request('GET', `/api/wallet/${walletId}/transaction/show/${id}`, { token: user.token });
    expect(shown.body.data).toMatchObject({
      tx_hash: mined,
      block_number: Number(receipt.blockNumber),
      block_hash: receipt.blockHash,
      replaced_hashes: [sped],
      status: 'pending',
    });
    expect(shown.body.data.gas_price).toBe(
      `${(receipt.effectiveGasPrice / 10n ** 18n).toString()}.${(receipt.effectiveGasPrice % 10n ** 18n).toString().padStart(18, '0')}`,
    );
  });
});
