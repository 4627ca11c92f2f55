/**
 * PostgreSQL only: the watcher's re-check attaches a mined version under the wallet's lock. A
 * speed-up or cancel reads the transfer under that lock (still pending, unmined: replaceable) and
 * then makes its new version current by the row's id. The re-check used to attach a mined version
 * without the lock: landing between that read and the write, the attach was overwritten, and the
 * mined transfer showed the replacement's hash, one that never mined. On SQLite one connection
 * serialises the two; on PostgreSQL they ran side by side.
 *
 * The test holds the wallet's lock as a replacement does, runs the re-check meanwhile, records the
 * replacement and commits. Without the lock in the re-check the transfer ends with the unmined hash.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waitFor } from '../helpers/wait.js';
import { recheckUnmined } from '../../src/modules/transactions/transactions.recheck.js';
import { findRecord } from '../../src/modules/transactions/transactions.repository.js';
import { recordReplacement } from '../../src/modules/transactions/transactions.versions.repository.js';
import { lockWallet } from '../../src/modules/wallets/wallets.repository.js';
import { lockWaiters, minedTransfer, startStepSuite, syncScope, type StepSuite } from './watcher-steps.js';

let s: StepSuite;

beforeAll(async () => {
  s = await startStepSuite();
});

afterAll(async () => s?.close());

describe("the re-check's attach and a replacement recorded under the wallet's lock", () => {
  it('the mined version stays the transfer hash; the replacement recorded meanwhile is only a replaced hash', async () => {
    const { t, user } = s;
    const { walletId, id, hash: mined, receipt } = await minedTransfer(s);
    const scope = syncScope(s);
    const cursor = { block_number: Number(receipt.blockNumber), block_hash: receipt.blockHash };
    const sped = `0x${'7a'.repeat(32)}`;
    let recheck: ReturnType<typeof recheckUnmined> | undefined;
    let recheckDone = false;
    // The replacement's transaction: the wallet's lock, the row read (replaceable), ...
    await t.store.db.transaction().execute(async (trx) => {
      await lockWallet(trx, walletId);
      const before = await findRecord(trx, id);
      expect(before).toMatchObject({ status: 'pending', block_number: null, tx_hash: mined });
      // ... the watcher's re-check meanwhile (it finds the receipt of the current version) ...
      recheck = recheckUnmined(scope, cursor, true, 0);
      void recheck.finally(() => (recheckDone = true));
      await waitFor(async () => recheckDone || (await lockWaiters(s)) > 0, {
        timeoutMs: 10_000,
        message: 're-check done or waiting for a lock',
      });
      // ... and the new version made current, committed.
      await recordReplacement(
        trx,
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
    });
    await recheck;
    const shown = await t.request('GET', `/api/wallet/${walletId}/transaction/show/${id}`, { token: user.token });
    expect(shown.body.data).toMatchObject({
      tx_hash: mined,
      block_number: Number(receipt.blockNumber),
      block_hash: receipt.blockHash,
      replaced_hashes: [sped],
      status: 'pending',
    });
  });
});
