/**
 * A late payment that a reorg removes and brings back is announced once (docs/charges.md, "Money
 * sent after the watch": each late payment emits `charge.delayed` once). The rollback deletes the
 * payment's row, its `notified` flag with it; the payment recorded again from the new chain is late
 * again, and was announced a second time. The announcement is kept apart from the row
 * (`charge_late_announcements`, by transaction and place), so the second time writes no event. On
 * anvil: the same signed transfer mined (and swept) on the old chain and, after `evm_revert`, on
 * the new one in another block.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createWalletClient, http, parseEther, type Address, type Hex } from 'viem';
import { foundry } from 'viem/chains';
import { ManualClock, startTestApp, type TestApp, type TestUser } from '../helpers/app.js';
import { startTestChain, type TestChain } from '../helpers/chain.js';
import { waitFor } from '../helpers/wait.js';
import { waitForCursor } from '../helpers/transfers.js';
import { chargeApi, clockToChain, events, latestTimestampS, pay, PAYER, stampNextBlock } from './support.js';

describe('a late payment removed by a reorg and mined again', () => {
  const clock = new ManualClock();
  let chain: TestChain;
  let t: TestApp;
  let alice: TestUser;
  let networkId: number;

  beforeAll(async () => {
    chain = await startTestChain();
    t = await startTestApp({ clock, env: { CHARGES_POLL_MS: '50', WATCHER_POLL_MS: '50' } });
    networkId = await chain.register(t);
    alice = await t.createUser();
    t.startWorkers();
    await waitForCursor(t, networkId);
  });
  afterAll(async () => {
    await t?.close();
    await chain?.stop();
  });

  const delayed = async (chargeId: number) => (await events(t, 'charge.delayed')).filter((e) => e.charge_id === chargeId);

  it('emits charge.delayed once', async () => {
    const wallet = (await t.request('POST', '/api/wallet/create', { token: alice.token, body: { name: 'Shop', network_id: networkId } }))
      .body.data as { id: number };
    const api = chargeApi(t, wallet.id, alice.token);
    await clockToChain(clock, chain);
    const c = await api.create({ amount: '0.1', token: 'ETH', expires: 600 });
    await pay(chain.rpcUrl, c.address, parseEther('0.1'));
    await api.until(c.id, (x) => x.status === 'paid' && x.sweeps[0]?.status === 'confirmed', 'paid and swept');
    await waitForCursor(t, networkId, await chain.blockNumber());

    // The old chain: the late payment, announced, and the sweep it makes due.
    const snapshot = await chain.rpc<Hex>('evm_snapshot');
    const snapshotHead = await chain.blockNumber();
    const payer = createWalletClient({ account: PAYER, chain: foundry, transport: http(chain.rpcUrl) });
    const raw = await payer.signTransaction(await payer.prepareTransactionRequest({ to: c.address as Address, value: parseEther('0.05') }));
    const hash = await chain.rpc<Hex>('eth_sendRawTransaction', [raw]);
    await waitFor(async () => ((await delayed(c.id)).length === 1 ? true : null), { message: 'the late payment announced' });
    const oldRow = await t.store.db
      .selectFrom('charge_payments')
      .select(['block_hash'])
      .where('tx_hash', '=', hash)
      .executeTakeFirstOrThrow();
    // anvil's evm_revert does not wait for a block being mined: a block that mines the service's
    // sweep while the revert runs can stay as the head, on top of a block the revert removed, and
    // the follower, its cursor on that removed block, never finds the common ancestor. So the
    // revert comes once the service has nothing left to send: the sweep confirmed, the address empty.
    await api.until(
      c.id,
      (x) =>
        x.sweeps.filter((s: { status: string }) => s.status === 'confirmed').length === 2 &&
        x.sweeps.every((s: { status: string }) => s.status !== 'pending'),
      'the late payment swept on the old chain',
      30_000,
    );
    const oldHead = await chain.blockNumber();
    await waitForCursor(t, networkId, oldHead);

    // The new chain: the same transfer, in another block (an empty one stamped differently first).
    expect(await chain.rpc('evm_revert', [snapshot])).toBe(true);
    expect(await chain.blockNumber()).toBe(snapshotHead);
    await stampNextBlock(chain, (await latestTimestampS(chain)) + 7);
    await chain.mine(1);
    await chain.rpc('eth_sendRawTransaction', [raw]).catch((e: Error) => {
      if (!/already known|known transaction/i.test(e.message)) throw e;
    });
    await chain.mine(4);
    // The follower waits while the node's head is below its cursor (a lagging node, not a reorg).
    expect(await chain.blockNumber()).toBeGreaterThan(oldHead);
    await waitFor(() => t.logs.some((l) => l.includes('reorg: rolled back to the common ancestor')), {
      message: 'the follower rolled back',
      timeoutMs: 30_000,
    });
    const again = await waitFor(
      () =>
        t.store.db
          .selectFrom('charge_payments')
          .select(['block_hash', 'notified'])
          .where('tx_hash', '=', hash)
          .where('notified', '=', 1)
          .executeTakeFirst(),
      { message: 'the payment recorded again from the new chain and looked at by the announcement', timeoutMs: 30_000 },
    );
    expect(again.block_hash).not.toBe(oldRow.block_hash);
    await waitFor(async () => (await api.show(c.id)).sweeps.every((s: { status: string }) => s.status !== 'pending'), {
      message: 'the sweeps settled',
      timeoutMs: 30_000,
    });

    const told = await delayed(c.id);
    expect(told).toHaveLength(1);
    expect(told[0].payment).toMatchObject({ tx_hash: hash, amount: '0.050000000000000000', late: true });
    expect((await api.show(c.id)).payments.filter((p: { tx_hash: string }) => p.tx_hash === hash)).toHaveLength(1);
  });
});
