/**
 * Sweeps on an OP-stack network (issue 18, section 3): a GasPriceOracle at the predeploy (a
 * stub quoting 0.001 ETH for any call, as in test/transactions/fees-l1.test.ts) and, in front of
 * anvil, a real JSON-RPC proxy that refuses a transaction as an OP-stack node does when its
 * sender cannot pay value + gas × max fee + the L1 data fee. The native sweep leaves room for the
 * L1 fee; a token's gas top-up covers it; both are confirmed at the first send.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseEther, parseTransaction, recoverTransactionAddress, type Address, type Hex, type TransactionSerialized } from 'viem';
import { startTestApp, type TestApp, type TestUser } from '../helpers/app.js';
import { startTestChain, type TestChain } from '../helpers/chain.js';
import { deployErc20, erc20BalanceOf, mintErc20 } from '../helpers/erc20.js';
import { waitFor } from '../helpers/wait.js';
import { GAS_PRICE_ORACLE } from '../../src/chain/fees.js';
import { upsertNetwork } from '../../src/modules/networks/networks.repository.js';
import { waitForCursor } from '../helpers/transfers.js';
import { balanceOf, chargeApi, pay } from './support.js';

/** Runtime code answering 1e15 to any call (the L1 fee quote). */
const ORACLE_STUB = '0x66038d7ea4c6800060005260206000f3';
const L1_FEE = 10n ** 15n;
const L1_RESERVED = (L1_FEE * 125n) / 100n;

type Call = { jsonrpc: string; id: unknown; method: string; params?: unknown[] };

/** An OP-stack node's admission rule in front of anvil: the balance must also pay the L1 data fee. */
class OpStackNode {
  refused = 0;
  private server: Server | null = null;
  constructor(private readonly target: string) {}

  get url(): string {
    return `http://127.0.0.1:${(this.server!.address() as AddressInfo).port}`;
  }

  private async forward(call: Call): Promise<unknown> {
    const res = await fetch(this.target, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(call) });
    return res.json();
  }

  private async answer(call: Call): Promise<unknown> {
    if (call.method !== 'eth_sendRawTransaction') return this.forward(call);
    const raw = call.params![0] as TransactionSerialized;
    const tx = parseTransaction(raw);
    const from = await recoverTransactionAddress({ serializedTransaction: raw });
    const balance = (await this.forward({ jsonrpc: '2.0', id: 1, method: 'eth_getBalance', params: [from, 'latest'] })) as { result: Hex };
    const perGas = tx.maxFeePerGas ?? tx.gasPrice ?? 0n;
    if (BigInt(balance.result) < (tx.value ?? 0n) + tx.gas! * perGas + L1_FEE) {
      this.refused += 1;
      return { jsonrpc: '2.0', id: call.id, error: { code: -32000, message: 'insufficient funds for gas * price + value + l1 data fee' } };
    }
    return this.forward(call);
  }

  async start(): Promise<void> {
    this.server = createServer((req, res) => {
      void (async () => {
        const chunks: Buffer[] = [];
        for await (const c of req) chunks.push(c as Buffer);
        // HTTP JSON-RPC only: the watcher's WebSocket upgrade (new heads) is refused, as such a node would.
        if (req.method !== 'POST') return void res.writeHead(405).end();
        const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as Call | Call[];
        const out = Array.isArray(body) ? await Promise.all(body.map((c) => this.answer(c))) : await this.answer(body);
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify(out));
      })();
    });
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', () => resolve()));
  }

  async stop(): Promise<void> {
    this.server?.closeAllConnections();
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
  }
}

describe('sweeps on an OP-stack network (L1 data fee)', () => {
  let chain: TestChain;
  let node: OpStackNode;
  let t: TestApp;
  let user: TestUser;
  let wallet: { id: number; address: string };
  let api: ReturnType<typeof chargeApi>;

  beforeAll(async () => {
    chain = await startTestChain();
    await chain.rpc('anvil_setCode', [GAS_PRICE_ORACLE, ORACLE_STUB]);
    node = new OpStackNode(chain.rpcUrl);
    await node.start();
    t = await startTestApp({ workers: true, env: { CHARGES_POLL_MS: '50', WATCHER_POLL_MS: '50' } });
    const network = await upsertNetwork(
      t.store.db,
      {
        name: 'OP devnet',
        rpc_url: node.url,
        chain_id: 31337,
        currency_symbol: 'ETH',
        block_explorer: '',
        is_mainnet: false,
        confirmations: 1,
      },
      Date.now(),
    );
    await waitForCursor(t, network.id);
    user = await t.createUser();
    wallet = (await t.request('POST', '/api/wallet/create', { token: user.token, body: { name: 'Shop', network_id: network.id } })).body
      .data;
    await chain.setBalance(wallet.address, parseEther('10'));
    api = chargeApi(t, wallet.id, user.token);
  });
  afterAll(async () => {
    await t?.close();
    await node?.stop();
    await chain?.stop();
  });

  it('the native sweep leaves room for the L1 fee: accepted at once, amount = balance − gas × max fee − L1 fee', async () => {
    const c = await api.create({ amount: '0.5', token: 'ETH', expires: 600 });
    await pay(chain.rpcUrl, c.address, parseEther('0.5'));
    const done = await api.until(c.id, (x) => x.sweeps[0]?.status === 'confirmed', 'ETH swept', 20_000);
    expect(done.sweeps).toHaveLength(1);
    const tx = await chain.rpc<{ value: Hex; gas: Hex; maxFeePerGas: Hex }>('eth_getTransactionByHash', [done.sweeps[0].tx_hash]);
    expect(BigInt(tx.value) + BigInt(tx.gas) * BigInt(tx.maxFeePerGas) + L1_RESERVED).toBe(parseEther('0.5'));
    // anvil charges no L1 fee: what was left for it stays on the address.
    expect(await balanceOf(chain, c.address)).toBe(L1_RESERVED);
    expect(node.refused).toBe(0);
  });

  it('a token sweep’s gas top-up covers the L1 fee: the token sweep is accepted at once', async () => {
    const usdc = await deployErc20(chain.rpcUrl, { name: 'USD Coin', symbol: 'USDC', decimals: 6 });
    expect((await t.request('POST', `/api/wallet/${wallet.id}/token/add`, { token: user.token, body: { contract: usdc } })).status).toBe(
      200,
    );
    const c = await api.create({ amount: '10', token: 'USDC', expires: 600 });
    await mintErc20(chain.rpcUrl, usdc, c.address, 10_000_000n);
    // Native last: what the token sweep left of the top-up goes back to the main address too
    // (the test read the sweeps between the two, by chance of timing, before it waited for both).
    type Sweep = { token: string; status: string; tx_hash: string };
    const swept = (x: { sweeps: Sweep[] }, token: string) => x.sweeps.some((w) => w.token === token && w.status === 'confirmed');
    const done = await api.until(c.id, (x) => swept(x, 'USDC') && swept(x, 'ETH'), 'USDC swept, then the rest of its gas', 30_000);
    expect(done.sweeps.map((w: Sweep) => [w.token, w.status])).toEqual([
      ['USDC', 'confirmed'],
      ['ETH', 'confirmed'],
    ]);
    expect(await erc20BalanceOf(chain.rpcUrl, usdc, c.address as Address)).toBe(0n);
    // Only the L1 fee's headroom, which anvil does not charge, stays on the address.
    expect(await balanceOf(chain, c.address)).toBe(L1_RESERVED);
    const topUp = await t.store.db
      .selectFrom('transactions')
      .select(['amount', 'status'])
      .where('wallet_id', '=', wallet.id)
      .where('to_address', '=', c.address)
      .execute();
    expect(topUp).toHaveLength(1);
    const usdcSweep = done.sweeps.find((w: Sweep) => w.token === 'USDC')!;
    const sweepTx = await chain.rpc<{ gas: Hex; maxFeePerGas: Hex }>('eth_getTransactionByHash', [usdcSweep.tx_hash]);
    // Twice the sweep's maximum fee at its quote, the L1 fee included (the fees may have moved since).
    expect(BigInt(topUp[0]!.amount)).toBeGreaterThanOrEqual(BigInt(sweepTx.gas) * BigInt(sweepTx.maxFeePerGas) + L1_FEE);
    expect(node.refused).toBe(0);
    await waitFor(() => t.logs.some((l) => l.includes('gas sent to a charge deposit address')), { message: 'top-up logged' });
  });
});
