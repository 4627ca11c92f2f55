/**
 * Where a network's endpoints come from (docs/operating.md, "Several RPC providers"): `network:add` with
 * `--rpc-url` given more than once (a real CLI process against anvil behind two proxies), a
 * NETWORKS_FILE entry with `rpc_urls`, a comma-separated DEVNET_RPC_URL; each endpoint shown by
 * its origin only, in order, with its health; a bad list refused naming the field.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { registerNetworksFile } from '../../src/modules/networks/networks.service.js';
import { createTestDatabase, type TestDatabase } from '../helpers/db.js';
import { runCli } from '../helpers/process.js';
import { TEST_APP_KEY, startTestApp, type TestApp } from '../helpers/app.js';
import { startTestChain, type TestChain } from '../helpers/chain.js';
import { waitFor } from '../helpers/wait.js';
import { RpcProxy } from '../helpers/transfers.js';

let db: TestDatabase;
let env: Record<string, string>;
let chain: TestChain;
let a: RpcProxy;
let b: RpcProxy;

beforeAll(async () => {
  db = await createTestDatabase();
  env = { NODE_ENV: 'test', DATA_DIR: db.dataDir, APP_KEY: TEST_APP_KEY, ...(db.databaseUrl ? { DATABASE_URL: db.databaseUrl } : {}) };
  chain = await startTestChain();
  a = await RpcProxy.start(chain.rpcUrl);
  b = await RpcProxy.start(chain.rpcUrl);
});

afterAll(async () => {
  await a?.down();
  await b?.down();
  await chain?.stop();
  await db?.drop();
});

const level = (url: string, head: number) => ({
  url,
  ok: true,
  head_block: head,
  lag_blocks: 0,
  latency_ms: expect.any(Number),
  error: null,
  traces: true,
});

describe('network:add --rpc-url repeated', () => {
  it('stores every endpoint in order (the API key in a path never shown) and reports each one healthy', async () => {
    const head = await chain.blockNumber();
    const n = await runCli(
      [
        'network:add',
        '--name',
        'Anvil twice',
        '--rpc-url',
        `${a.url}/v2/secret-key-a`,
        '--rpc-url',
        `${b.url}/?key=secret-b`,
        '--chain-id',
        '31337',
        '--symbol',
        'ETH',
      ],
      env,
    );
    expect(n.code).toBe(0);
    expect(n.stdout).not.toContain('secret');
    expect(n.json).toEqual({
      id: 1,
      name: 'Anvil twice',
      rpc_url: a.url,
      rpc_endpoints: [level(a.url, head), level(b.url, head)],
      chain_id: 31337,
      currency_symbol: 'ETH',
      block_explorer: '',
      preset: null,
      sweeper: null,
      is_mainnet: false,
      confirmations: 1,
    });

    const t = await startTestApp({ database: db, keepDatabase: true });
    try {
      const row = await t.store.db.selectFrom('networks').select(['rpc_url', 'rpc_urls']).where('id', '=', 1).executeTakeFirstOrThrow();
      expect(row).toEqual({
        rpc_url: `${a.url}/v2/secret-key-a`,
        rpc_urls: JSON.stringify([`${a.url}/v2/secret-key-a`, `${b.url}/?key=secret-b`]),
      });
      const u = await t.createUser();
      const nets = await t.request('GET', '/api/networks', { token: u.token });
      expect(nets.text).not.toContain('secret');
      expect(nets.body.data[0].rpc_endpoints).toEqual([level(a.url, head), level(b.url, head)]);
    } finally {
      await t.close();
    }
  });

  it('refuses a list with a bad URL or a URL twice, naming rpc_urls', async () => {
    const bad = await runCli(
      ['network:add', '--name', 'Bad', '--rpc-url', a.url, '--rpc-url', 'not a url', '--chain-id', '31337', '--symbol', 'ETH'],
      env,
    );
    expect(bad.code).toBe(1);
    expect(bad.json.fields).toEqual({ rpc_urls: ['The rpc_urls field must be a list of 1 to 10 valid URLs.'] });
    const twice = await runCli(
      ['network:add', '--name', 'Bad', '--rpc-url', a.url, '--rpc-url', a.url, '--chain-id', '31337', '--symbol', 'ETH'],
      env,
    );
    expect(twice.code).toBe(1);
    expect(twice.json.fields).toEqual({ rpc_urls: ['The rpc_urls field must not list a URL twice.'] });
  });
});

describe('NETWORKS_FILE rpc_urls', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp();
  });
  afterAll(async () => t?.close());

  it('registers the list in order; the first is rpc_url; the API shows both by origin', async () => {
    const file = join(db.dataDir, 'networks.json');
    writeFileSync(
      file,
      JSON.stringify([{ name: 'From file', rpc_urls: [`${b.url}/k/secret`, a.url], chain_id: 31337, currency_symbol: 'ETH' }]),
    );
    const [n] = await registerNetworksFile(t.store.db, file, Date.now());
    expect({ rpc_url: n!.rpc_url, rpc_urls: n!.rpc_urls }).toEqual({
      rpc_url: `${b.url}/k/secret`,
      rpc_urls: JSON.stringify([`${b.url}/k/secret`, a.url]),
    });
    const u = await t.createUser();
    const listed = await waitFor(
      async () => {
        const res = await t.request('GET', '/api/networks', { token: u.token });
        const net = res.body.data.find((x: { name: string }) => x.name === 'From file');
        return net?.rpc_endpoints.every((e: { ok: boolean }) => e.ok) ? net : null;
      },
      { message: 'both endpoints ok' },
    );
    expect(listed.rpc_url).toBe(b.url);
    expect(listed.rpc_endpoints.map((e: { url: string }) => e.url)).toEqual([b.url, a.url]);
  });

  it('refuses an empty list, naming rpc_urls', async () => {
    const file = join(db.dataDir, 'bad-networks.json');
    writeFileSync(file, JSON.stringify([{ name: 'Empty', rpc_urls: [], chain_id: 31337, currency_symbol: 'ETH' }]));
    await expect(registerNetworksFile(t.store.db, file, Date.now())).rejects.toMatchObject({
      data: { rpc_urls: ['The rpc_urls field must be a list of 1 to 10 valid URLs.'] },
    });
  });
});

describe('DEVNET_RPC_URL and RPC_MAX_LAG_BLOCKS', () => {
  it('takes a comma-separated list, the first as rpc_url; the lag limit defaults to 3', () => {
    const c = loadConfig({ NODE_ENV: 'test', DEVNET_RPC_URL: 'http://127.0.0.1:8545, https://rpc.example.com/v2/key' });
    expect(c.devnet).toMatchObject({
      spawn: false,
      register: true,
      rpcUrl: 'http://127.0.0.1:8545',
      rpcUrls: ['http://127.0.0.1:8545', 'https://rpc.example.com/v2/key'],
    });
    expect(c.rpcMaxLagBlocks).toBe(3);
    expect(loadConfig({ NODE_ENV: 'test', RPC_MAX_LAG_BLOCKS: '5' }).rpcMaxLagBlocks).toBe(5);
    expect(() => loadConfig({ NODE_ENV: 'test', DEVNET_RPC_URL: 'http://127.0.0.1:8545,ftp://x' })).toThrow(/DEVNET_RPC_URL/);
  });
});
