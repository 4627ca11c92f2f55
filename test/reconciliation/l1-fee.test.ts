/**
 * The fee paid counts the L1 data fee an OP-stack receipt reports (`l1Fee`), for the wallet's
 * transfers and for charge sweeps: stored as `fee_paid` = gas used × effective price + l1Fee,
 * counted out by the reconciliation, and shown as the transfer's `fee` in the CSV export. Behind
 * a proxy that adds `l1Fee` to anvil's receipts (anvil does not charge it), the reconciliation
 * then shows exactly the L1 fees as the difference: the service counted them, the chain did not
 * take them.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseEther, type Address } from 'viem';
import { ManualClock, startTestApp, type TestApp, type TestUser } from '../helpers/app.js';
import { startTestChain, type TestChain } from '../helpers/chain.js';
import { upsertNetwork } from '../../src/modules/networks/networks.repository.js';
import { chargeApi, clockToChain, pay } from '../charges/support.js';
import { dec18, RECIPIENT, waitForCursor, waitForStatus } from '../helpers/transfers.js';
import { csvObjects } from '../helpers/csv.js';
import { L1FeeProxy } from './support.js';
import { waitFor } from '../helpers/wait.js';

const L1_FEE = 10n ** 15n; // 0.001 ETH per receipt

describe('L1 data fee in the fee paid', () => {
  const clock = new ManualClock();
  let chain: TestChain;
  let proxy: L1FeeProxy;
  let t: TestApp;
  let alice: TestUser;
  let networkId: number;

  beforeAll(async () => {
    chain = await startTestChain();
    proxy = await L1FeeProxy.start(chain.rpcUrl, L1_FEE);
    t = await startTestApp({ clock, env: { CHARGES_POLL_MS: '50', WATCHER_POLL_MS: '50' } });
    const n = await upsertNetwork(
      t.store.db,
      {
        name: 'OP-like devnet',
        rpc_url: proxy.url,
        chain_id: 31337,
        currency_symbol: 'ETH',
        block_explorer: '',
        is_mainnet: false,
        confirmations: 1,
      },
      Date.now(),
    );
    networkId = n.id;
    alice = await t.createUser();
    t.startWorkers();
    await waitForCursor(t, networkId);
  });
  afterAll(async () => {
    await t?.close();
    await proxy?.stop();
    await chain?.stop();
  });

  it('is stored with the transfer and the sweep, and counted out', async () => {
    const wallet = (await t.request('POST', '/api/wallet/create', { token: alice.token, body: { name: 'L2 shop', network_id: networkId } }))
      .body.data as { id: number; address: Address };
    // Mined before the create reads the balance (anvil may answer the send before its block is in).
    const funding = await pay(chain.rpcUrl, wallet.address, parseEther('3'));
    await waitFor(() => chain.rpc('eth_getTransactionReceipt', [funding]), { message: 'the funding mined' });
    const sent = await t.request('POST', `/api/wallet/${wallet.id}/transaction/create`, {
      token: alice.token,
      body: { amount: '1', token: 'ETH', address: RECIPIENT },
    });
    expect(sent.status, sent.text).toBe(200);
    await waitForStatus(t, alice, wallet.id, sent.body.data.id, 'confirmed');
    const row = await t.store.db
      .selectFrom('transactions')
      .select(['fee_paid', 'gas_used', 'gas_price'])
      .where('id', '=', sent.body.data.id)
      .executeTakeFirstOrThrow();
    expect(BigInt(row.fee_paid!)).toBe(BigInt(row.gas_used!) * BigInt(row.gas_price!) + L1_FEE);
    // The CSV export's `fee` is that fee, the L1 data fee included (docs/exports.md).
    const csv = await t.request('GET', `/api/wallet/${wallet.id}/export/transactions.csv`, { token: alice.token });
    const { rows } = csvObjects(csv.text);
    expect(rows.find((r) => Number(r.id) === sent.body.data.id)?.fee).toBe(dec18(BigInt(row.fee_paid!)));

    const api = chargeApi(t, wallet.id, alice.token);
    await clockToChain(clock, chain);
    const charge = await api.create({ amount: '0.5', token: 'ETH', expires: 600 });
    await pay(chain.rpcUrl, charge.address, parseEther('0.5'));
    const swept = await api.until(
      charge.id,
      (c) => c.status === 'paid' && c.sweeps.length === 1 && c.sweeps[0].status === 'confirmed',
      'swept',
      30_000,
    );
    const sweep = await t.store.db
      .selectFrom('charge_sweeps')
      .select(['fee_paid', 'tx_hash'])
      .where('charge_id', '=', charge.id)
      .executeTakeFirstOrThrow();
    const receipt = await chain.rpc<{ gasUsed: string; effectiveGasPrice: string }>('eth_getTransactionReceipt', [swept.sweeps[0].tx_hash]);
    expect(BigInt(sweep.fee_paid!)).toBe(BigInt(receipt.gasUsed) * BigInt(receipt.effectiveGasPrice) + L1_FEE);

    await chain.mine(1);
    await waitForCursor(t, networkId, await chain.blockNumber());
    const r = (await t.request('GET', `/api/wallet/${wallet.id}/reconciliation`, { token: alice.token })).body.data;
    const eth = (kind: string) =>
      r.addresses.find((a: { kind: string }) => a.kind === kind).tokens.find((x: { token: string }) => x.token === 'ETH');
    // One L1 fee counted on each side that paid one; the chain (anvil) took none.
    expect(eth('main').difference).toBe('0.001000000000000000');
    expect(eth('deposit').difference).toBe('0.001000000000000000');
    expect(r.ok).toBe(false);
  });
});
