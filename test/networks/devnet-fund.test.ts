/**
 * `npm run cli -- devnet:fund <wallet> <amount>` and `POST /api/wallet/{wallet}/devnet/fund` (a
 * newcomer's first minutes, README "Start"; the dashboard's "Fund from devnet"): on the local
 * devnet, anvil's dev account sends the amount in a real transfer that the service records as a
 * receipt; on any other network (another chain id), or for more than the dev account holds, it
 * is refused (exit 1, or 400), nothing sent; another user's wallet is 404.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseEther } from 'viem';
import { startTestApp, TEST_APP_KEY, type TestApp, type TestUser } from '../helpers/app.js';
import { startTestChain, type TestChain } from '../helpers/chain.js';
import { runCli } from '../helpers/process.js';
import { waitFor } from '../helpers/wait.js';
import { upsertNetwork } from '../../src/modules/networks/networks.repository.js';
import { balanceOf } from '../charges/support.js';

let chain: TestChain;
let t: TestApp;
let user: TestUser;
let env: Record<string, string>;

beforeAll(async () => {
  chain = await startTestChain();
  t = await startTestApp({ workers: true, env: { WATCHER_POLL_MS: '50' } });
  user = await t.createUser();
  const db = t.database;
  env = { NODE_ENV: 'test', DATA_DIR: db.dataDir, APP_KEY: TEST_APP_KEY, ...(db.databaseUrl ? { DATABASE_URL: db.databaseUrl } : {}) };
});

afterAll(async () => {
  await t?.close();
  await chain?.stop();
});

describe('devnet:fund', () => {
  it('sends the amount from the devnet in a real transfer, recorded as a receipt', async () => {
    const networkId = await chain.register(t);
    const w = (await t.request('POST', '/api/wallet/create', { token: user.token, body: { name: 'New', network_id: networkId } })).body
      .data;
    const r = await runCli(['devnet:fund', String(w.id), '1.5'], env);
    expect([r.code, r.json], r.stdout).toEqual([
      0,
      {
        wallet_id: w.id,
        address: w.address,
        amount: '1.500000000000000000',
        token: 'ETH',
        tx_hash: expect.stringMatching(/^0x[0-9a-f]{64}$/),
        block_number: expect.any(Number),
      },
    ]);
    expect(await balanceOf(chain, w.address)).toBe(parseEther('1.5'));
    const receipt = await waitFor(
      async () => {
        const list = await t.request('GET', `/api/wallet/${w.id}/transaction`, { token: user.token });
        return list.body.data.find((x: any) => x.type === 'receipt' && x.status === 'confirmed') ?? null;
      },
      { message: 'the funding recorded as a confirmed receipt' },
    );
    expect([receipt.amount, receipt.tx_hash]).toEqual(['1.500000000000000000', r.json.tx_hash]);
  });

  it('is refused on any other network, with nothing sent', async () => {
    const other = await upsertNetwork(
      t.store.db,
      {
        name: 'Not a devnet',
        rpc_url: chain.rpcUrl,
        chain_id: 1,
        currency_symbol: 'ETH',
        block_explorer: '',
        is_mainnet: true,
        confirmations: 1,
      },
      Date.now(),
    );
    const w = (await t.request('POST', '/api/wallet/create', { token: user.token, body: { name: 'Prod', network_id: other.id } })).body
      .data;
    const r = await runCli(['devnet:fund', String(w.id), '1'], env);
    expect(r.code).toBe(1);
    expect(r.json.error).toBe(
      `only the local devnet (chain id 31337, an anvil node) can fund from its dev accounts; network ${other.id} (Not a devnet) has chain id 1`,
    );
    expect(await balanceOf(chain, w.address)).toBe(0n);
    const bad = await runCli(['devnet:fund', String(w.id), 'lots'], env);
    expect([bad.code, bad.json.error]).toEqual([1, 'amount "lots" is not an ETH amount (at most 18 decimal places)']);
  });

  it('through the API: funds a devnet wallet, refuses another network (400) and a stranger (404)', async () => {
    const networkId = await chain.register(t);
    const w = (await t.request('POST', '/api/wallet/create', { token: user.token, body: { name: 'API', network_id: networkId } })).body
      .data;
    const res = await t.request('POST', `/api/wallet/${w.id}/devnet/fund`, { token: user.token, body: { amount: '0.75' } });
    expect([res.status, res.body.message, res.body.data?.amount], res.text).toEqual([
      200,
      'Funded from the devnet',
      '0.750000000000000000',
    ]);
    expect(await balanceOf(chain, w.address)).toBe(parseEther('0.75'));
    const bad = await t.request('POST', `/api/wallet/${w.id}/devnet/fund`, { token: user.token, body: { amount: '-1' } });
    expect(bad.status).toBe(422);
    const stranger = await t.createUser();
    expect((await t.request('POST', `/api/wallet/${w.id}/devnet/fund`, { token: stranger.token, body: { amount: '1' } })).status).toBe(404);
    const other = await upsertNetwork(
      t.store.db,
      {
        name: 'Elsewhere',
        rpc_url: chain.rpcUrl,
        chain_id: 10,
        currency_symbol: 'ETH',
        block_explorer: '',
        is_mainnet: true,
        confirmations: 1,
      },
      Date.now(),
    );
    const o = (await t.request('POST', '/api/wallet/create', { token: user.token, body: { name: 'Prod', network_id: other.id } })).body
      .data;
    const refused = await t.request('POST', `/api/wallet/${o.id}/devnet/fund`, { token: user.token, body: { amount: '1' } });
    expect([refused.status, refused.body]).toEqual([
      400,
      { status: 'error', message: 'Only the local devnet can fund a wallet', data: null },
    ]);
    expect(await balanceOf(chain, o.address)).toBe(0n);
  });

  it('more than the dev account holds: 400 through the API, exit 1 with the CLI, nothing sent (was a 500, found by the fuzz test)', async () => {
    const networkId = await chain.register(t);
    const w = (await t.request('POST', '/api/wallet/create', { token: user.token, body: { name: 'Greedy', network_id: networkId } })).body
      .data;
    const res = await t.request('POST', `/api/wallet/${w.id}/devnet/fund`, { token: user.token, body: { amount: 461948329 } });
    expect([res.status, res.body]).toEqual([400, { status: 'error', message: 'The devnet account cannot fund that amount', data: null }]);
    const r = await runCli(['devnet:fund', String(w.id), '461948329'], env);
    expect(r.code).toBe(1);
    expect(r.json.error).toMatch(/^the devnet's dev account holds \d+\.\d{18} ETH, less than that amount and its fee$/);
    expect(await balanceOf(chain, w.address)).toBe(0n);
  });
});
