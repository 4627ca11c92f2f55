/**
 * `npm run cli -- network:deploy-sweeper --network ID --wallet W` (src/modules/networks/sweeper-deploy.ts):
 * the Sweeper deployed from a wallet's main address through the deterministic-deployment proxy,
 * then a probe sweep that must leave its address deleted, each a `contract` transaction of the
 * wallet that the service records and confirms; the network then shows its `sweeper`. A probe
 * that fails leaves the network without one. Run again where the network uses it, it sends
 * nothing; on a network without the proxy, or for a wallet of another network, it refuses and
 * sends nothing. The service's deposit addresses are the contract's.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { getAddress, keccak256, parseEther, toHex, type Hex } from 'viem';
import { startTestApp, TEST_APP_KEY, type TestApp, type TestUser } from '../helpers/app.js';
import { startTestChain, type TestChain } from '../helpers/chain.js';
import { runCli } from '../helpers/process.js';
import { waitFor } from '../helpers/wait.js';
import {
  CREATE2_FACTORY,
  depositAddress,
  PROBE_SALT,
  probeLeftDeleted,
  sweeperAddress,
  sweeperDeployData,
} from '../../src/chain/sweeper.js';
import { sweeperAbi } from '../../src/chain/sweeper-artifact.js';
import { publicClient } from '../helpers/transfers.js';

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

  it("deploys and probes from the wallet's main address as recorded contract transactions; run again, it sends nothing", async () => {
    const w = await wallet();
    const address = sweeperAddress();
    expect(await code(address)).toBe('0x');
    // A probe address that cannot be created (a nonce already there): the probe would revert, is
    // refused before it is signed, and the network takes no sweeper, though the code is deployed.
    const probe = depositAddress(address, getAddress(w.address), PROBE_SALT);
    await chain.rpc('anvil_setNonce', [probe, '0x1']);
    const refused = await runCli(['network:deploy-sweeper', '--network', String(networkId), '--wallet', String(w.id)], env);
    expect(refused.code, refused.stdout).toBe(1);
    expect(refused.json.error).toMatch(
      new RegExp(`^network ${networkId} \\(Local devnet\\) failed the Sweeper's probe \\(it would revert\\): SELFDESTRUCT does not delete`),
    );
    expect((await code(address)).length).toBeGreaterThan(1000);
    expect(await sweeperOf(networkId)).toBeNull();
    expect(await nonceOf(w.address)).toBe(1);
    await chain.rpc('anvil_setNonce', [probe, '0x0']);

    const r = await runCli(['network:deploy-sweeper', '--network', String(networkId), '--wallet', String(w.id)], env);
    expect([r.code, r.json], r.stdout).toEqual([
      0,
      {
        network_id: networkId,
        sweeper: address,
        deployed: null,
        probe: { transaction_id: expect.any(Number), tx_hash: expect.stringMatching(/^0x[0-9a-f]{64}$/) },
      },
    ]);
    expect(await sweeperOf(networkId)).toBe(address);
    expect([await code(probe), await nonceOf(probe)]).toEqual(['0x', 0]);
    // The wallet's own record of them: contract calls, to the proxy and to the Sweeper, confirmed (their fees counted).
    const txs = await waitFor(
      async () => {
        const list = (await t.request('GET', `/api/wallet/${w.id}/transaction`, { token: user.token })).body.data as any[];
        const calls = list.filter((x) => x.type === 'contract');
        return calls.length === 2 && calls.every((x) => x.status === 'confirmed') ? calls.sort((a, b) => a.nonce - b.nonce) : null;
      },
      { message: 'the deploy and the probe confirmed in the wallet' },
    );
    expect(txs.map((x) => [x.nonce, x.amount, x.receipt_status])).toEqual([
      [0, '0.000000000000000000', true],
      [1, '0.000000000000000000', true],
    ]);
    expect(txs[0].data).toBe(sweeperDeployData());
    expect(txs[1].tx_hash).toBe(r.json.probe.tx_hash);
    const sent = await chain.rpc<{ to: string; from: string }>('eth_getTransactionByHash', [txs[0].tx_hash]);
    expect([sent.from, sent.to]).toEqual([w.address.toLowerCase(), CREATE2_FACTORY.toLowerCase()]);

    // The service's deposit addresses are the contract's.
    for (const salt of [PROBE_SALT, keccak256(toHex('a charge'))])
      expect(
        await publicClient(chain.rpcUrl).readContract({
          address,
          abi: sweeperAbi,
          functionName: 'depositAddress',
          args: [getAddress(w.address), salt],
        }),
      ).toBe(depositAddress(address, getAddress(w.address), salt));

    // What the probe's check reads: an address left with a nonce, or with code, is not deleted.
    const client = publicClient(chain.rpcUrl);
    const leftDeleted = async () => probeLeftDeleted(client, address, getAddress(w.address), BigInt(await chain.blockNumber()));
    expect(await leftDeleted()).toBe(true);
    await chain.rpc('anvil_setNonce', [probe, '0x1']);
    await chain.mine();
    expect(await leftDeleted()).toBe(false);
    await chain.rpc('anvil_setNonce', [probe, '0x0']);
    await chain.rpc('anvil_setCode', [probe, '0x00']);
    await chain.mine();
    expect(await leftDeleted()).toBe(false);
    await chain.rpc('anvil_setCode', [probe, '0x']);
    await chain.mine();
    expect(await leftDeleted()).toBe(true);

    const again = await runCli(['network:deploy-sweeper', '--network', String(networkId), '--wallet', String(w.id)], env);
    expect([again.code, again.json]).toEqual([0, { network_id: networkId, sweeper: address, deployed: null, probe: null }]);
    expect(await nonceOf(w.address)).toBe(2);
  });
});
