/**
 * `npm run cli -- network:deploy-sweeper --network ID --wallet W` (src/modules/networks/sweeper-deploy.ts):
 * the Sweeper deployed from a wallet's main address through the deterministic-deployment proxy,
 * as a `contract` transaction of the wallet that the service records and confirms; the network
 * then shows its `sweeper`. Run again where the code is, it sends nothing; on a network without
 * the proxy, or for a wallet of another network, it refuses and sends nothing.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseEther, type Hex } from 'viem';
import { startTestApp, TEST_APP_KEY, type TestApp, type TestUser } from '../helpers/app.js';
import { startTestChain, type TestChain } from '../helpers/chain.js';
import { runCli } from '../helpers/process.js';
import { waitFor } from '../helpers/wait.js';
import { CREATE2_FACTORY, sweeperAddress, sweeperDeployData } from '../../src/chain/sweeper.js';

let chain: TestChain;
let t: TestApp;
let user: TestUser;
let env: Record<string, string>;
let networkId: number;

beforeAll(async () => {
  chain = await startTestChain();
  t = await startTestApp({ workers: true, env: { WATCHER_POLL_MS: '50' } });
  user = await t.createUser();
  const db = t.database;
  env = { NODE_ENV: 'test', DATA_DIR: db.dataDir, APP_KEY: TEST_APP_KEY, ...(db.databaseUrl ? { DATABASE_URL: db.databaseUrl } : {}) };
  networkId = await chain.register(t);
});

afterAll(async () => {
  await t?.close();
  await chain?.stop();
});

const code = (address: string) => chain.rpc<Hex>('eth_getCode', [address, 'latest']);
const nonceOf = async (address: string) => Number(BigInt(await chain.rpc<Hex>('eth_getTransactionCount', [address, 'latest'])));
const sweeperOf = async (id: number) =>
  (await t.request('GET', '/api/networks', { token: user.token })).body.data.find((n: any) => n.id === id).sweeper;

async function wallet(network = networkId) {
  const w = (await t.request('POST', '/api/wallet/create', { token: user.token, body: { name: 'Deployer', network_id: network } })).body
    .data;
  await chain.setBalance(w.address, parseEther('1'));
  return w as { id: number; address: string };
}

describe('network:deploy-sweeper', () => {
  it('refuses on a network without the deterministic-deployment proxy, sending nothing', async () => {
    const proxy = await code(CREATE2_FACTORY);
    expect(proxy.length).toBeGreaterThan(2);
    const w = await wallet();
    await chain.rpc('anvil_setCode', [CREATE2_FACTORY, '0x']);
    try {
      const r = await runCli(['network:deploy-sweeper', '--network', String(networkId), '--wallet', String(w.id)], env);
      expect([r.code, r.json]).toEqual([
        1,
        {
          error: `network ${networkId} (Local devnet) has no deterministic-deployment proxy at ${CREATE2_FACTORY}, through which the Sweeper is deployed; keyless deposit addresses stay off there`,
        },
      ]);
    } finally {
      await chain.rpc('anvil_setCode', [CREATE2_FACTORY, proxy]);
    }
    expect(await nonceOf(w.address)).toBe(0);
    expect(await sweeperOf(networkId)).toBeNull();
  });

  it('refuses a wallet of another network, and bad arguments', async () => {
    const other = await chain.register(t, { name: 'Another' });
    const w = await wallet(other);
    const r = await runCli(['network:deploy-sweeper', '--network', String(networkId), '--wallet', String(w.id)], env);
    expect([r.code, r.json]).toEqual([1, { error: `wallet ${w.id} is on network ${other}, not on network ${networkId}` }]);
    const bad = await runCli(['network:deploy-sweeper', '--network', 'x', '--wallet', String(w.id)], env);
    expect([bad.code, bad.json]).toEqual([1, { error: '--network must be a network id' }]);
    expect(await nonceOf(w.address)).toBe(0);
  });

  it("deploys from the wallet's main address as a recorded contract transaction; run again, it sends nothing", async () => {
    const w = await wallet();
    const address = sweeperAddress();
    expect(await code(address)).toBe('0x');
    const r = await runCli(['network:deploy-sweeper', '--network', String(networkId), '--wallet', String(w.id)], env);
    expect([r.code, r.json], r.stdout).toEqual([
      0,
      {
        network_id: networkId,
        sweeper: address,
        deployed: true,
        transaction_id: expect.any(Number),
        tx_hash: expect.stringMatching(/^0x[0-9a-f]{64}$/),
      },
    ]);
    expect((await code(address)).length).toBeGreaterThan(1000);
    expect(await sweeperOf(networkId)).toBe(address);
    // The wallet's own record of it: a contract call to the proxy, confirmed, its fee counted.
    const tx = await waitFor(
      async () => {
        const one = await t.request('GET', `/api/wallet/${w.id}/transaction/show/${r.json.transaction_id}`, { token: user.token });
        return one.body.data?.status === 'confirmed' ? one.body.data : null;
      },
      { message: 'the deploy confirmed in the wallet' },
    );
    expect([tx.type, tx.amount, tx.tx_hash, tx.data]).toEqual(['contract', '0.000000000000000000', r.json.tx_hash, sweeperDeployData()]);
    const sent = await chain.rpc<{ to: string; from: string }>('eth_getTransactionByHash', [r.json.tx_hash]);
    expect([sent.from, sent.to]).toEqual([w.address.toLowerCase(), CREATE2_FACTORY.toLowerCase()]);
    expect(await nonceOf(w.address)).toBe(1);

    const again = await runCli(['network:deploy-sweeper', '--network', String(networkId), '--wallet', String(w.id)], env);
    expect([again.code, again.json]).toEqual([
      0,
      { network_id: networkId, sweeper: address, deployed: false, transaction_id: null, tx_hash: null },
    ]);
    expect(await nonceOf(w.address)).toBe(1);
  });
});
