/**
 * New heads followed over a WebSocket (src/chain/heads.ts, WATCHER_FOLLOW_HEADS): with the
 * watcher's and the charge worker's polls set to a minute, a block is read within moments of its
 * mining, because the node announced it, and a charge paid in it is settled moments later (the
 * follower's commit wakes the charge worker); a socket cut under it (a TCP proxy in front of anvil that drops every
 * connection) is replaced and heads are followed again; a node that answers HTTP only (the
 * JSON-RPC proxy of the other tests) is polled, said once in the log, retried with backoff, and
 * the API key in its URL's path never reaches the log.
 */
import { createServer, connect, type Server, type Socket } from 'node:net';
import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { startTestChain, type TestChain } from '../helpers/chain.js';
import { waitFor } from '../helpers/wait.js';
import { upsertNetwork } from '../../src/modules/networks/networks.repository.js';
import { createLogger } from '../../src/logger.js';
import { followHeads } from '../../src/chain/heads.js';
import { RpcProxy, waitForCursor } from '../helpers/transfers.js';
import { chargeApi, pay } from '../charges/support.js';

/** Bytes both ways between a client and anvil (HTTP and WebSocket alike); `cut()` drops every connection. */
class TcpProxy {
  private constructor(
    private readonly server: Server,
    private readonly sockets: Set<Socket>,
    readonly url: string,
  ) {}

  static async start(target: string): Promise<TcpProxy> {
    const { hostname, port } = new URL(target);
    const sockets = new Set<Socket>();
    const server = createServer((client) => {
      const upstream = connect(Number(port), hostname);
      for (const s of [client, upstream]) {
        sockets.add(s);
        s.on('close', () => sockets.delete(s));
        s.on('error', () => undefined);
      }
      client.pipe(upstream).pipe(client);
      client.on('close', () => upstream.destroy());
      upstream.on('close', () => client.destroy());
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const address = server.address();
    if (address === null || typeof address === 'string') throw new Error('no address');
    return new TcpProxy(server, sockets, `http://127.0.0.1:${address.port}`);
  }

  cut(): number {
    const n = this.sockets.size;
    for (const s of this.sockets) s.destroy();
    return n;
  }

  async stop(): Promise<void> {
    this.cut();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}

const lines = (t: TestApp, msg: string) => t.logs.filter((l) => l.includes(`"msg":"${msg}"`));

describe('the watcher follows new heads over a WebSocket', () => {
  let t: TestApp;
  let chain: TestChain;
  let proxy: TcpProxy;
  let networkId: number;

  beforeAll(async () => {
    chain = await startTestChain();
    proxy = await TcpProxy.start(chain.rpcUrl);
    // Polls a minute apart: only an announced head brings a tick sooner.
    t = await startTestApp({
      workers: false,
      env: { WATCHER_POLL_MS: '60000', WATCHER_PENDING_POLL_MS: '60000', CHARGES_POLL_MS: '60000' },
    });
    const n = await upsertNetwork(
      t.store.db,
      {
        name: 'Followed',
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
    t.startWorkers();
    await waitForCursor(t, networkId, await chain.blockNumber());
    await waitFor(() => lines(t, 'following new heads over WebSocket').length === 1, { message: 'following heads' });
  });

  afterAll(async () => {
    await t?.close();
    await proxy?.stop();
    await chain?.stop();
  });

  /** Mines one block and answers how long the watcher's cursor took to reach it (ms). */
  async function mineAndTime(): Promise<number> {
    const target = (await chain.blockNumber()) + 1;
    const started = Date.now();
    await chain.mine(1);
    await waitForCursor(t, networkId, target);
    return Date.now() - started;
  }

  it('reads a block as soon as the node announces it, not at the next poll', async () => {
    for (let i = 0; i < 3; i++) expect(await mineAndTime()).toBeLessThan(3000);
  });

  it('settles a charge paid in a new block moments after it, not at the next poll of the charge worker', async () => {
    const user = await t.createUser();
    const wallet = (await t.request('POST', '/api/wallet/create', { token: user.token, body: { name: 'Till', network_id: networkId } }))
      .body.data as { id: number };
    const api = chargeApi(t, wallet.id, user.token);
    const charge = await api.create({ amount: '0.5', token: 'ETH', expires: 600 });
    const started = Date.now();
    await pay(chain.rpcUrl, charge.address, 5n * 10n ** 17n);
    const paid = await api.until(charge.id, (c) => c.status === 'paid', 'the charge paid', 10_000);
    expect(Date.now() - started).toBeLessThan(3000);
    expect(paid.paid_amount).toBe('0.500000000000000000');
  });

  it('replaces a socket that drops and follows heads again', async () => {
    expect(proxy.cut()).toBeGreaterThan(0);
    await waitFor(() => lines(t, 'new heads not followed over WebSocket; the watcher polls').length === 1, { message: 'the drop logged' });
    await waitFor(() => lines(t, 'following new heads over WebSocket').length === 2, { timeoutMs: 10_000, message: 'following again' });
    expect(await mineAndTime()).toBeLessThan(3000);
  });
});

describe('a node without WebSockets', () => {
  it('is polled: said once, retried with backoff, its URL path (an API key) never logged', async () => {
    const chain = await startTestChain();
    const http = await RpcProxy.start(chain.rpcUrl);
    const logs: string[] = [];
    const log = createLogger('debug', new Writable({ write: (c, _e, cb) => void (logs.push(c.toString()), cb()) }));
    const heads: bigint[] = [];
    const follower = followHeads({
      urls: [`${http.url}/v2/SECRET-KEY-123`],
      log,
      onHead: (n) => heads.push(n ?? -1n),
      retryMinMs: 50,
      retryMaxMs: 200,
    });
    try {
      await waitFor(() => logs.filter((l) => l.includes('still unavailable')).length >= 3, { message: 'three retries' });
      await chain.mine(1);
      expect(follower.following).toBeNull();
      expect(heads).toEqual([]);
      const said = logs.filter((l) => l.includes('new heads not followed over WebSocket; the watcher polls'));
      expect(said).toHaveLength(1);
      expect(said[0]).toContain(`"host":"${new URL(http.url).host}"`);
      expect(logs.join('')).not.toContain('SECRET-KEY-123');
    } finally {
      follower.stop();
      await http.down();
      await chain.stop();
    }
  });

  it('a node that does serve them: heads arrive with their numbers', async () => {
    const chain = await startTestChain();
    const log = createLogger('silent', new Writable({ write: (_c, _e, cb) => cb() }));
    const heads: bigint[] = [];
    const follower = followHeads({ urls: ['not a url', chain.rpcUrl], log, onHead: (n) => heads.push(n ?? -1n), retryMinMs: 50 });
    try {
      await waitFor(() => follower.following !== null, { message: 'subscribed' });
      const before = await chain.blockNumber();
      await chain.mine(2);
      await waitFor(() => heads.length >= 2, { message: 'two heads' });
      expect(heads.slice(0, 2)).toEqual([BigInt(before + 1), BigInt(before + 2)]);
    } finally {
      follower.stop();
      await chain.stop();
    }
  });
});
