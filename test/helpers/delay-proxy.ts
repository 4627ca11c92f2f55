/**
 * A TCP proxy in front of PostgreSQL that holds every chunk the server sends for `delayMs`: each
 * round trip costs it, so a test can count a transaction's round trips by its duration.
 */
import { createServer, connect, type Socket } from 'node:net';

export interface DelayProxy {
  /** `databaseUrl` with its host and port the proxy's. */
  url: string;
  close(): Promise<void>;
}

export async function startDelayProxy(databaseUrl: string, delayMs: number): Promise<DelayProxy> {
  const target = new URL(databaseUrl);
  const sockets = new Set<Socket>();
  const listener = createServer((client) => {
    const server = connect(Number(target.port || 5432), target.hostname);
    sockets.add(client).add(server);
    client.on('data', (d) => server.write(d));
    server.on('data', (d) => setTimeout(() => client.write(d), delayMs));
    const close = () => (client.destroy(), server.destroy());
    client.on('close', close).on('error', close);
    server.on('close', close).on('error', close);
  });
  await new Promise<void>((resolve) => listener.listen(0, '127.0.0.1', resolve));
  const url = new URL(databaseUrl);
  url.hostname = '127.0.0.1';
  url.port = String((listener.address() as { port: number }).port);
  return {
    url: url.toString(),
    close: async () => {
      for (const s of sockets) s.destroy();
      await new Promise((resolve) => listener.close(resolve));
    },
  };
}
