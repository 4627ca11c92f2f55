/**
 * A reorg deeper than the network's confirmations removes the block of a confirmed sweep, and the
 * sweep is mined again in another block at another base fee (a real node puts removed
 * transactions back in its pool). The fee the sweep really paid is the new block's: the
 * reconciliation must count that one, not the one recorded from the first receipt (found by the
 * fault simulation, seed 1801 under load: a deposit address off by the sweep's gas × the
 * difference of the two blocks' fees). The sweep's row follows: back in flight with the
 * rollback, then confirmed again with the new block and the new receipt's fee.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Address, Hex } from 'viem';
import { ManualClock, type TestApp, type TestUser } from '../helpers/app.js';
import type { TestChain } from '../helpers/chain.js';
import { waitFor } from '../helpers/wait.js';
import { chargeApi, clockToChain, startSweepingService } from '../charges/support.js';
import { deployErc20, mintErc20 } from '../helpers/erc20.js';
import { waitForCursor } from '../transactions/support.js';
import { rawOf, type RpcTx } from '../../sim/chain.js';

const ZERO = '0.000000000000000000';

describe('reconciliation: a sweep mined again after a reorg', () => {
  const clock = new ManualClock();
  let chain: TestChain;
  let t: TestApp;
  let alice: TestUser;
  let networkId: number;

  beforeAll(async () => {
    ({ chain, t, alice, networkId } = await startSweepingService(clock));
  });
  afterAll(async () => {
    await t?.close();
    await chain?.stop();
  });

  it('counts the fee of the block it was mined in again, not the first receipt’s: every difference zero', async () => {
    const wallet = (await t.request('POST', '/api/wallet/create', { token: alice.token, body: { name: 'Shop', network_id: networkId } })).body.data as { id: number; address: Address };
    await chain.setBalance(wallet.address, 10n ** 18n); // gas for the deposit's token sweep
    const usd = await deployErc20(chain.rpcUrl, { name: 'Test USD', symbol: 'TUSD', decimals: 6 });
    expect((await t.request('POST', `/api/wallet/${wallet.id}/token/add`, { token: alice.token, body: { contract: usd } })).status).toBe(200);
    const api = chargeApi(t, wallet.id, alice.token);
    await clockToChain(clock, chain);
    const c = await api.create({ amount: '5', token: 'TUSD', expires: 600 });
    await mintErc20(chain.rpcUrl, usd, c.address as Address, 5_000_000n);
    await api.until(c.id, (x) => x.status === 'paid', 'paid');
    const tokenId = (await t.store.db.selectFrom('charges').select('token_id').where('id', '=', c.id).executeTakeFirstOrThrow()).token_id;
    const sweep = await waitFor(
      async () =>
        (await t.store.db.selectFrom('charge_sweeps').selectAll().where('charge_id', '=', c.id).where('kind', '=', 'sweep').where('token_id', '=', tokenId).where('status', '=', 'confirmed').executeTakeFirst()) ?? null,
      { timeoutMs: 20_000, message: 'the token sweep confirmed' },
    );
    expect(sweep.fee_paid).not.toBeNull();
    const first = await chain.rpc<{ blockNumber: Hex; effectiveGasPrice: Hex }>('eth_getTransactionReceipt', [sweep.tx_hash]);
    const tx = await chain.rpc<RpcTx>('eth_getTransactionByHash', [sweep.tx_hash]);
    const raw = rawOf(tx);
    expect(raw).not.toBeNull();
    // Let the rest settle (the gas left is swept too), two blocks on top, then a reorg removing
    // everything from the token sweep's block on; the token sweep alone is mined again.
    await waitFor(async () => (await t.store.db.selectFrom('charges').select('sweep_due_at').where('id', '=', c.id).executeTakeFirstOrThrow()).sweep_due_at === null, { timeoutMs: 20_000, message: 'nothing more due' });
    await chain.mine(2);
    await waitForCursor(t, networkId, await chain.blockNumber());
    const depth = (await chain.blockNumber()) - Number(BigInt(first.blockNumber)) + 1;
    await chain.rpc('anvil_reorg', [depth, []]);
    await chain.rpc('anvil_setNextBlockBaseFeePerGas', [`0x${(BigInt(first.effectiveGasPrice) / 3n).toString(16)}`]);
    await chain.rpc('eth_sendRawTransaction', [raw]);
    // Polled: anvil mines a transaction just after answering its send, not always before.
    const again = await waitFor(() => chain.rpc<{ blockNumber: Hex; gasUsed: Hex; effectiveGasPrice: Hex } | null>('eth_getTransactionReceipt', [sweep.tx_hash]), { message: 'the sweep mined again' });
    expect(BigInt(again.effectiveGasPrice)).not.toBe(BigInt(first.effectiveGasPrice));
    expect(again.blockNumber).not.toBe(first.blockNumber);
    await chain.mine(2);
    await waitFor(() => t.logs.some((l) => l.includes('reorg: rolled back to the common ancestor')), { timeoutMs: 15_000, message: 'the watcher saw the reorg' });
    await waitForCursor(t, networkId, await chain.blockNumber());

    // The row went back in flight with the rollback and is confirmed again, once, from its new
    // receipt: the new block and the fee paid there (before, it kept the removed block).
    const reconfirmed = await waitFor(
      async () => {
        const rows = await t.store.db.selectFrom('charge_sweeps').select(['status', 'block_number', 'fee_paid', 'live_key']).where('tx_hash', '=', sweep.tx_hash).execute();
        return rows.length === 1 && rows[0]!.status === 'confirmed' && rows[0]!.block_number === Number(BigInt(again.blockNumber)) ? rows[0]! : null;
      },
      { timeoutMs: 20_000, message: 'the sweep confirmed again in its new block' },
    );
    expect(BigInt(reconfirmed.fee_paid!)).toBe(BigInt(again.gasUsed) * BigInt(again.effectiveGasPrice));
    // The gas remainder's sweep, removed with it and not sent again by the test, is sent again by
    // the sweeper (it came back in flight under its own key while the token sweep held the
    // kind's). Or, when the sweeper looked at the new chain before the watcher saw the reorg, it
    // found the remainder unswept there and swept it anew at the same nonce: then the old one's
    // re-send is refused ("nonce too low") and it fails `dropped`. Either way every row is final,
    // each confirmed one mined on the new chain, each failed one nowhere and its nonce used by a
    // confirmed sweep (one transaction per nonce: nothing swept twice, nothing left behind).
    await waitFor(
      async () => {
        const rows = await t.store.db.selectFrom('charge_sweeps').select(['status', 'tx_hash', 'live_key', 'nonce', 'error']).where('charge_id', '=', c.id).where('kind', '=', 'sweep').execute();
        if (rows.some((r) => r.live_key !== null || (r.status !== 'confirmed' && r.status !== 'failed'))) return null;
        for (const r of rows) {
          const mined = (await chain.rpc('eth_getTransactionReceipt', [r.tx_hash])) !== null;
          if (mined !== (r.status === 'confirmed')) return null;
          if (r.status === 'failed' && !(r.error === 'dropped' && rows.some((o) => o.status === 'confirmed' && o.nonce === r.nonce))) return null;
        }
        return rows;
      },
      { timeoutMs: 20_000, message: 'every sweep of the charge final on the new chain' },
    );
    await waitForCursor(t, networkId, await chain.blockNumber());

    const r = (await t.request('GET', `/api/wallet/${wallet.id}/reconciliation`, { token: alice.token })).body.data;
    const deposit = r.addresses.find((a: { kind: string }) => a.kind === 'deposit');
    const eth = deposit.tokens.find((x: { token: string }) => x.token === 'ETH');
    expect(eth.difference, JSON.stringify(eth)).toBe(ZERO);
    expect(eth.recorded_change).toBe(eth.chain_balance);
  });
});
