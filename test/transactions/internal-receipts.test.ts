/**
 * Native coin reaching a wallet's main address through a contract (docs/charges.md, "Internal
 * transfers"): a `receipt` with `internal: true`, `tx_hash` the transaction that carried it, read
 * from the block's call traces (anvil answers debug_traceBlockByHash with callTracer). A
 * `Forwarder` contract (compiled with solc, test/helpers/erc20.ts) calls on to the main address
 * with the value: the list and the detail show the receipt, amount exact; only value that moved
 * counts (an inner call that sends the rest and reverts adds nothing); the balance is right and
 * the wallet's reconciliation stays ok (its recorded change counts the internal receipts); a
 * reorg that removes the carrier's block makes the receipt pending again, told by
 * `transaction.reorged`.
 * Fails without the fix: no receipt is recorded, and reconciliation shows the difference.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseEther, type Address, type Hex } from 'viem';
import { startTestApp, type TestApp, type TestUser } from '../helpers/app.js';
import { startTestChain, type TestChain } from '../helpers/chain.js';
import { deployForwarder, forwardValue } from '../helpers/erc20.js';
import { waitFor } from '../helpers/wait.js';
import { events, pay } from '../charges/support.js';
import { waitForCursor } from '../helpers/transfers.js';

const ZERO = '0.000000000000000000';

describe('native coin sent to a wallet’s main address by a contract', () => {
  let chain: TestChain;
  let t: TestApp;
  let user: TestUser;
  let wallet: { id: number; address: Address };
  let networkId: number;
  let forwarder: Address;

  const list = async () => {
    const res = await t.request('GET', `/api/wallet/${wallet.id}/transaction`, { token: user.token });
    expect(res.status, res.text).toBe(200);
    return res.body.data as any[];
  };
  const receiptOf = (hash: Hex) =>
    waitFor(async () => (await list()).find((x) => x.type === 'receipt' && x.tx_hash === hash && x.status === 'confirmed') ?? null, {
      message: `a confirmed receipt of ${hash}`,
    });

  beforeAll(async () => {
    chain = await startTestChain();
    t = await startTestApp({ env: { WATCHER_POLL_MS: '50' } });
    networkId = await chain.register(t, { confirmations: 1 });
    user = await t.createUser();
    wallet = (await t.request('POST', '/api/wallet/create', { token: user.token, body: { name: 'Main', network_id: networkId } })).body
      .data;
    forwarder = await deployForwarder(chain.rpcUrl);
    t.startWorkers();
    await waitForCursor(t, networkId);
  });
  afterAll(async () => {
    await t?.close();
    await chain?.stop();
  });

  it('is a receipt with internal: true, the carrier’s hash, the exact amount; a direct one is internal: false', async () => {
    const direct = await pay(chain.rpcUrl, wallet.address, parseEther('1'));
    const carried = await forwardValue(chain.rpcUrl, forwarder, wallet.address, parseEther('0.37'));

    const internal = await receiptOf(carried);
    expect(internal).toMatchObject({ type: 'receipt', status: 'confirmed', amount: '0.370000000000000000', internal: true, symbol: 'ETH' });
    expect((await receiptOf(direct)).internal).toBe(false);
    const shown = await t.request('GET', `/api/wallet/${wallet.id}/transaction/show/${internal.id}`, { token: user.token });
    expect(shown.status, shown.text).toBe(200);
    expect(shown.body.data).toMatchObject({ tx_hash: carried, amount: '0.370000000000000000', internal: true });
  });

  it('counts only value that moved: half of the sent value reaches the wallet, the rest reverts', async () => {
    const carried = await forwardValue(chain.rpcUrl, forwarder, wallet.address, parseEther('0.5'), { half: true });
    expect(await receiptOf(carried)).toMatchObject({ amount: '0.250000000000000000', internal: true });
    expect((await list()).filter((x) => x.tx_hash === carried)).toHaveLength(1);
  });

  it('the balance is right and reconciliation stays ok', async () => {
    await chain.mine(1);
    await waitForCursor(t, networkId, await chain.blockNumber());
    const onChain = BigInt(await chain.rpc<string>('eth_getBalance', [wallet.address, 'latest']));
    expect(onChain).toBe(parseEther('1.62'));
    await waitFor(
      async () =>
        (await t.request('GET', `/api/wallet/${wallet.id}/balance`, { token: user.token })).body.data.balance === '1.620000000000000000',
      { message: 'balance 1.62' },
    );

    const res = await t.request('GET', `/api/wallet/${wallet.id}/reconciliation`, { token: user.token });
    expect(res.status, res.text).toBe(200);
    const main = res.body.data.addresses.find((a: any) => a.kind === 'main');
    const eth = main.tokens.find((x: any) => x.token === 'ETH');
    expect(eth).toMatchObject({ chain_balance: '1.620000000000000000', difference: ZERO });
    expect(res.body.data.ok).toBe(true);
  });

  it('a reorg that removes the carrier’s block: the receipt is pending again, told by transaction.reorged', async () => {
    const snapshot = await chain.rpc<Hex>('evm_snapshot');
    const carried = await forwardValue(chain.rpcUrl, forwarder, wallet.address, parseEther('0.01'));
    const confirmed = await receiptOf(carried);
    expect(await chain.rpc('evm_revert', [snapshot])).toBe(true);
    await chain.mine(3);
    await waitFor(async () => (await list()).find((x) => x.id === confirmed.id && x.status === 'pending' && x.block_number === null), {
      message: 'the internal receipt pending again',
    });
    const told = (await events(t, 'transaction.reorged')).filter((e) => e.transaction_id === confirmed.id);
    expect(told).toEqual([
      expect.objectContaining({ tx_hash: carried, status: 'pending', block_number: confirmed.block_number, type: 'receipt' }),
    ]);
  });
});
