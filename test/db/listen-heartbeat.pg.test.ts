/**
 * A LISTEN connection that dies without a word (src/db/listen-postgres.ts): a TCP proxy in front
 * of PostgreSQL stops passing bytes on the connections it holds, keeping them open, as a NAT
 * gateway does that has forgotten an idle connection. Without the heartbeat the listener would
 * stay "up" and miss every notification (the read cache would go on serving); with it, it is
 * declared down within the heartbeat's time, connects again, and hears notifications again.
 * PostgreSQL only (collected when DATABASE_URL is set).
 */
import { connect, createServer, type Server, type Socket } from 'node:net';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { listenPostgres } from '../../src/db/listen-postgres.js';
import { waitFor } from '../helpers/wait.js';

interface Pair {
  client: Socket;
  upstream: Socket;
  silent: boolean;
}

/** A TCP proxy to PostgreSQL; `silence()` drops every byte of the connections open now, both ways, and closes none. */
class SilentProxy {
  private constructor(
    private readonly server: Server,
    private readonly open: Set<Pair>,
    readonly port: number,
  ) {}

  static async start(host: string, port: number): Promise<SilentProxy> {
    const open = new Set<Pair>();
    const server = createServer((client) => {
      const upstream = connect(port, host);
      const pair: Pair = { client, upstream, silent: false };
      open.add(pair);
      client.on('data', (d) => void (pair.silent || upstream.write(d)));
      upstream.on('data', (d) => void (pair.silent || client.write(d)));
      const close = () => {
        open.delete(pair);
        client.destroy();
        upstream.destroy();
      };
      client.on('close', close).on('error', close);
      upstream.on('close', close).on('error', close);
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const address = server.address();
    if (address === null || typeof address === 'string') throw new Error('no address');
    return new SilentProxy(server, open, address.port);
  }

  /** Connections open now go silent; new ones pass. Returns how many went silent. */
  silence(): number {
    for (const p of this.open) p.silent = true;
    return this.open.size;
  }

  async stop(): Promise<void> {
    for (const p of this.open) {
      p.client.destroy();
      p.upstream.destroy();
    }
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}

const base = new URL(process.env.DATABASE_URL!);
let proxy: SilentProxy;
let notifier: pg.Client;

beforeAll(async () => {
  proxy = await SilentProxy.start(base.hostname, Number(base.port || 5432));
  notifier = new pg.Client({ connectionString: base.toString() });
  await notifier.connect();
});

afterAll(async () => {
  await notifier?.end();
  await proxy?.stop();
});

describe('a LISTEN connection that goes silent', () => {
  it('is declared down within the heartbeat, made again, and hears notifications again', async () => {
    const through = new URL(base.toString());
    through.hostname = '127.0.0.1';
    through.port = String(proxy.port);
    const events: string[] = [];
    const heard: string[] = [];
    const stop = listenPostgres(
      through.toString(),
      'heartbeat_test',
      { notify: (p) => heard.push(p), onError: () => undefined, up: () => events.push('up'), down: () => events.push('down') },
      { heartbeatMs: 200, timeoutMs: 400, reconnectMs: 100 },
    );
    try {
      await waitFor(() => events.join() === 'up', { timeoutMs: 5_000, message: 'listening' });
      await notifier.query(`NOTIFY heartbeat_test, 'first'`);
      await waitFor(() => heard.includes('first'), { timeoutMs: 2_000, message: 'the first notification' });

      // Silent from here: no reset, no close; a notification sent now never arrives.
      expect(proxy.silence()).toBe(1);
      const silencedAt = Date.now();
      await notifier.query(`NOTIFY heartbeat_test, 'lost'`);
      await waitFor(() => events.includes('down'), { timeoutMs: 3_000, message: 'declared down' });
      // At most a heartbeat's interval and its timeout, with room for a loaded machine.
      expect(Date.now() - silencedAt).toBeLessThan(200 + 400 + 1_000);

      // A new connection through the proxy (new connections pass): listening again.
      await waitFor(() => events.join() === 'up,down,up', { timeoutMs: 5_000, message: 'listening again' });
      await notifier.query(`NOTIFY heartbeat_test, 'second'`);
      await waitFor(() => heard.includes('second'), { timeoutMs: 2_000, message: 'the second notification' });
      expect(heard).toEqual(['first', 'second']);
    } finally {
      await stop();
    }
    expect(events.at(-1)).toBe('down');
  });
});
