/**
 * Blocks whose call traces no endpoint could give are rows (`trace_pending`), not memory: a
 * restart while every endpoint refuses traces keeps them (the new process knows from
 * `network_traces` that the network has traces, so it goes on recording blocks pending rather
 * than taking it for a network without them), and when traces return the payment appears. A
 * reorg that removes a pending block removes its row with it: nothing is read from a block the
 * chain no longer has.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseEther, type Address, type Hex } from 'viem';
import { startTestApp, type TestApp, type TestUser } from '../helpers/app.js';
import { startTestChain, type TestChain } from '../helpers/chain.js';
import { createTestDatabase, type TestDatabase } from '../helpers/db.js';
import { deployForwarder, forwardValue } from '../helpers/erc20.js';
import { waitFor } from '../helpers/wait.js';
import { upsertNetwork } from '../../src/modules/networks/networks.repository.js';
import { RpcProxy, waitForCursor } from '../helpers/transfers.js';
import { chargeApi, pay } from './support.js';

const NO_METHOD = { action: 'error', code: -32601, message: 'the method debug_traceBlockByHash does not exist/is not available' } as const;
/** An address outside the service. */
const OTHER = '0x000000000000000000000000000000000000dEaD';
const ENV = { CHARGES_POLL_MS: '50', WATCHER_POLL_MS: '50' };

describe('pending call traces across a restart and a reorg', () => {
  let database: TestDatabase;
  let chain: TestChain;
  let proxy: RpcProxy;
  let app: TestApp | null = null;
  let user: TestUser;
  let networkId: number;
  let walletId: number;
  let forwarder: Address;

  const boot = async () => (app = await startTestApp({ database, keepDatabase: true, workers: true, env: ENV }));
  const api = () => chargeApi(app!, walletId, user.token);
  const pending = async () => {
    const res = await app!.request('GET', '/api/supervisor', { token: user.token });
    expect(res.status, res.text).toBe(200);
    return res.body.data.networks.find((n: any) => n.id === networkId).traces_pending as number;
  };

  beforeAll(async () => {
    database = await createTestDatabase();
    chain = await startTestChain();
    proxy = await RpcProxy.start(chain.rpcUrl);
    const t = await boot();
    networkId = (
      await upsertNetwork(
        t.store.db,
        {
          name: 'One provider',
          rpc_url: proxy.url,
          chain_id: 31337,
          currency_symbol: 'ETH',
          block_explorer: '',
          is_mainnet: false,
          confirmations: 1,
        },
        Date.now(),
      )
    ).id;
    await waitForCursor(t, networkId);
    user = await t.createUser();
    walletId = (await t.request('POST', '/api/wallet/create', { token: user.token, body: { name: 'Shop', network_id: networkId } })).body
      .data.id;
    forwarder = await deployForwarder(chain.rpcUrl); // its block traced: the network has traces
    await waitForCursor(t, networkId, await chain.blockNumber());
  });
  afterAll(async () => {
    await app?.close();
    await database?.drop();
    await proxy?.down();
    await chain?.stop();
  });

  it('a restart keeps the pending block; traces back, the payment appears', async () => {
    proxy.rule('debug_traceBlockByHash', NO_METHOD);
    const c = await api().create({ amount: '0.1', token: 'ETH', expires: 600 });
    const hash = await forwardValue(chain.rpcUrl, forwarder, c.address, parseEther('0.1'));
    await waitFor(async () => (await pending()) > 0, { message: 'the forwarder’s block pending' });

    await app!.close();
    await boot();
    // A block with a transaction, read by the new process while traces are still refused: pending
    // too (the network had traces), not taken for a network without them.
    const other = await pay(chain.rpcUrl, OTHER, 1n);
    const mined = await waitFor(() => chain.rpc<{ blockNumber: string } | null>('eth_getTransactionReceipt', [other]), {
      message: 'the other payment mined',
    });
    const otherBlock = Number(BigInt(mined.blockNumber));
    await waitFor(
      async () =>
        (await app!.store.db.selectFrom('trace_pending').select('block_number').execute()).some(
          (r) => Number(r.block_number) === otherBlock,
        ),
      {
        message: 'the new process’s block pending too',
      },
    );
    expect((await api().show(c.id)).payments).toEqual([]);
    expect(app!.logs.some((l) => l.includes('the node has no trace API'))).toBe(false);

    proxy.allow('debug_traceBlockByHash');
    const paid = await api().until(c.id, (x) => x.status === 'paid', 'paid once traces are back', 30_000);
    expect(paid.payments).toEqual([expect.objectContaining({ tx_hash: hash, amount: '0.100000000000000000', internal: true })]);
    await waitFor(async () => (await pending()) === 0, { message: 'nothing pending', timeoutMs: 30_000 });
  });

  it('a reorg that removes a pending block removes its row: nothing read from it', async () => {
    const c = await api().create({ amount: '0.1', token: 'ETH', expires: 600 });
    const snapshot = await chain.rpc<Hex>('evm_snapshot');
    proxy.rule('debug_traceBlockByHash', NO_METHOD);
    const rows = () => app!.store.db.selectFrom('trace_pending').select(['block_number', 'block_hash']).execute();
    let removed: string;
    try {
      const hash = await forwardValue(chain.rpcUrl, forwarder, c.address, parseEther('0.1'));
      removed = (await chain.rpc<{ blockHash: string }>('eth_getTransactionReceipt', [hash])).blockHash;
      await waitFor(async () => (await rows()).some((r) => r.block_hash === removed), { message: 'the forwarder’s block pending' });
      expect(await chain.rpc('evm_revert', [snapshot])).toBe(true);
      await chain.mine(3); // anvil may mine the forward again in one of them: another block, pending in its turn
      await waitForCursor(app!, networkId, await chain.blockNumber());
      await waitFor(async () => !(await rows()).some((r) => r.block_hash === removed), { message: 'the removed block’s row gone with it' });
    } finally {
      proxy.allow('debug_traceBlockByHash');
    }
    await waitFor(async () => (await pending()) === 0, { message: 'nothing pending once traces are back', timeoutMs: 30_000 });
    const payments = (await app!.store.db.selectFrom('charge_payments').select('block_hash').where('charge_id', '=', c.id).execute()).map(
      (p) => p.block_hash,
    );
    expect(payments).not.toContain(removed!);
  });
});
