/**
 * An endpoint's outcomes are ordered by when their calls were sent (src/chain/endpoints.ts,
 * `succeeded` and `failed`), also within one millisecond: a call sent first and answered last
 * (it was in flight when the node began to rate-limit) does not clear the rest's reason. With
 * `Date.now()` milliseconds, two calls sent in one millisecond were equals, and the late success
 * cleared it: health said `ok` false with `error` null (seen in CI, test/chain/endpoints.test.ts).
 * The clock is held at one millisecond here, so the two calls are always sent "together".
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { EndpointSet } from '../../src/chain/endpoints.js';
import { waitFor } from '../helpers/wait.js';

describe('an endpoint rate-limited while an earlier call is in flight', () => {
  let server: Server;
  let url: string;
  let requests = 0;
  let releaseFirst!: () => void;

  beforeAll(async () => {
    // The first request is answered (a chain id) only when released; every later one is HTTP 429.
    server = createServer((req, res) => {
      let text = '';
      req.on('data', (c: Buffer) => (text += c.toString('utf8')));
      req.on('end', () => {
        const calls = JSON.parse(text) as Array<{ id: number }>;
        const answer = () =>
          res
            .writeHead(200, { 'content-type': 'application/json' })
            .end(JSON.stringify(calls.map((c) => ({ jsonrpc: '2.0', id: c.id, result: '0x7a69' }))));
        if (++requests === 1) releaseFirst = answer;
        else res.writeHead(429, { 'content-type': 'text/plain' }).end('Too Many Requests');
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });

  afterAll(async () => {
    await new Promise((resolve) => server.close(resolve));
  });

  afterEach(() => {
    vi.restoreAllMocks();
  });

  it('stays rested with its reason when the earlier call succeeds after the limit', async () => {
    vi.spyOn(Date, 'now').mockReturnValue(1_800_000_000_000);
    const set = new EndpointSet([url], { timeoutMs: 5_000, maxLagBlocks: 5, healthEveryMs: 60_000 });
    const first = set.request('eth_chainId', []);
    // At the node, held there (its own HTTP request). waitFor's deadline reads the held clock: the
    // test's own time-out bounds this wait.
    await waitFor(async () => (requests >= 1 ? true : null), { message: 'the first call at the node' });
    // Sent after the first, in the same millisecond, and refused: the endpoint is rested.
    await expect(set.request('eth_chainId', [])).rejects.toThrow();
    expect(set.health()[0]).toMatchObject({ ok: false, error: 'HTTP 429: rested 1 s' });

    releaseFirst();
    await expect(first).resolves.toBe('0x7a69');
    expect(set.health()[0]).toMatchObject({ ok: false, error: 'HTTP 429: rested 1 s' });
    expect(requests).toBe(2);
  });
});
