/**
 * The real `npm start` entry point as a child process: devnet spawned and registered (with its Sweeper),
 * bootstrap user, data surviving a restart, SIGTERM draining in-flight requests and exiting 0,
 * production refusing to start without APP_KEY, and a public HOST refusing to start without
 * NODE_ENV.
 */
import { createServer, type Server, type Socket } from 'node:net';
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { findFreePort } from '../../src/chain/devnet.js';
import { sweeperAddress } from '../../src/chain/sweeper.js';
import { createTestDatabase, type TestDatabase } from '../helpers/db.js';
import { runTs, until } from '../helpers/process.js';

async function rpc(url: string, method: string, params: unknown[] = []) {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
  });
  return ((await res.json()) as { result: any }).result;
}

describe('server process', () => {
  let db: TestDatabase;
  let hanging: Server;
  const sockets: Socket[] = [];
  let hangingPort = 0;

  beforeAll(async () => {
    db = await createTestDatabase();
    // An RPC node that accepts connections and never answers: makes the supervisor probe slow.
    hanging = createServer((s) => sockets.push(s));
    await new Promise<void>((r) => hanging.listen(0, '127.0.0.1', () => r()));
    hangingPort = (hanging.address() as { port: number }).port;
  });
  afterAll(async () => {
    for (const s of sockets) s.destroy();
    hanging?.close();
    await db?.drop();
  });

  it('starts with a devnet, drains on SIGTERM, exits 0, and keeps its data across a restart', async () => {
    const port = await findFreePort();
    const devnetPort = await findFreePort();
    const networksFile = join(db.dataDir, 'networks.json');
    writeFileSync(
      networksFile,
      JSON.stringify([{ name: 'Stuck node', rpc_url: `http://127.0.0.1:${hangingPort}`, chain_id: 999, currency_symbol: 'STK' }]),
    );
    const env = {
      PORT: String(port),
      DEVNET_PORT: String(devnetPort),
      DATA_DIR: db.dataDir,
      BOOTSTRAP_EMAIL: 'admin@example.com',
      BOOTSTRAP_PASSWORD: 'admin-password',
      NETWORKS_FILE: networksFile,
      LOG_LEVEL: 'info',
      ...(db.databaseUrl ? { DATABASE_URL: db.databaseUrl } : {}),
    };
    const base = `http://127.0.0.1:${port}`;
    const login = async () => {
      const r = await fetch(`${base}/api/auth/login`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ email: 'admin@example.com', password: 'admin-password' }),
      });
      return r.status === 200 ? ((await r.json()).data.token as string) : null;
    };
    const get = async (path: string, token: string) => {
      const r = await fetch(`${base}${path}`, { headers: { authorization: `Bearer ${token}` } });
      return { status: r.status, body: await r.json() };
    };

    const first = runTs('src/server.ts', [], env);
    let address: string;
    try {
      const token = await until(login, 30_000, `server to answer (output: ${first.output()})`);
      const nets = await get('/api/networks', token);
      const devnet = nets.body.data.find((n: any) => n.name === 'Local devnet');
      expect(devnet).toMatchObject({ chain_id: 31337, currency_symbol: 'ETH', rpc_url: `http://127.0.0.1:${devnetPort}` });
      expect(await rpc(`http://127.0.0.1:${devnetPort}`, 'eth_chainId')).toBe('0x7a69');
      // The devnet's Sweeper, deployed and probed at start (keyless deposit addresses).
      expect(devnet.sweeper).toBe(sweeperAddress());
      expect((await rpc(`http://127.0.0.1:${devnetPort}`, 'eth_getCode', [devnet.sweeper, 'latest'])).length).toBeGreaterThan(1000);
      expect(first.output()).toContain('sweeper ready on the local devnet');

      const created = await fetch(`${base}/api/wallet/create`, {
        method: 'POST',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        body: JSON.stringify({ name: 'Survivor', network_id: devnet.id }),
      });
      expect(created.status).toBe(200);
      address = (await created.json()).data.address;
      await rpc(`http://127.0.0.1:${devnetPort}`, 'anvil_setBalance', [address, '0xde0b6b3a7640000']);

      // An in-flight request (the supervisor waits up to 2 s on the stuck node) survives SIGTERM.
      const inflight = get('/api/supervisor', token);
      await new Promise((r) => setTimeout(r, 300));
      first.child.kill('SIGTERM');
      const answered = await inflight;
      expect(answered.status).toBe(200);
      expect(answered.body.data.status).toBe('degraded');
      expect(answered.body.data.networks.find((n: any) => n.name === 'Stuck node').rpc_ok).toBe(false);
      expect(await first.exited, `exit code; output: ${first.output().slice(-3000)}`).toBe(0);
      expect(first.output()).toContain('shutdown complete');
    } finally {
      first.child.kill('SIGKILL');
    }

    const second = runTs('src/server.ts', [], env);
    try {
      const token = await until(login, 30_000, 'restarted server to answer');
      const wallets = await get('/api/wallets', token);
      expect(wallets.body.data.map((w: any) => w.address)).toEqual([address]);
      // The Sweeper came back with the devnet's state: nothing deployed or probed again.
      const devnet = (await get('/api/networks', token)).body.data.find((n: any) => n.name === 'Local devnet');
      expect(devnet.sweeper).toBe(sweeperAddress());
      expect(second.output()).not.toContain('sweeper ready');
      // The devnet's chain state was saved on shutdown and loaded again.
      expect(BigInt(await rpc(`http://127.0.0.1:${devnetPort}`, 'eth_getBalance', [address, 'latest']))).toBe(10n ** 18n);
      second.child.kill('SIGTERM');
      expect(await second.exited).toBe(0);
    } finally {
      second.child.kill('SIGKILL');
    }
  });

  it('refuses to start in production without APP_KEY, with one line naming it', async () => {
    const p = runTs('src/server.ts', [], { NODE_ENV: 'production', DATA_DIR: db.dataDir });
    expect(await p.exited).toBe(1);
    expect(p.output().trim()).toBe('Invalid configuration: APP_KEY is required when NODE_ENV=production (32 bytes, base64)');
  });

  it('refuses to start on a public HOST without NODE_ENV, before generating a key or starting a devnet', async () => {
    const dataDir = join(db.dataDir, 'public-bind');
    const p = runTs('src/server.ts', [], {
      HOST: '0.0.0.0',
      PORT: String(await findFreePort()),
      DEVNET_PORT: String(await findFreePort()),
      DATA_DIR: dataDir,
    });
    // Should it start after all, it is stopped (SIGTERM also stops its devnet) rather than left behind.
    const started = setTimeout(() => p.child.kill('SIGTERM'), 30_000);
    try {
      expect(await p.exited).toBe(1);
    } finally {
      clearTimeout(started);
    }
    expect(p.output().trim()).toMatch(
      /^Invalid configuration: NODE_ENV must be set when HOST \(0\.0\.0\.0\) is not a loopback address: NODE_ENV=production .*$/,
    );
    expect(existsSync(join(dataDir, 'app.key'))).toBe(false);
  });
});
