/** GET /api/supervisor: the health of the database, each network, the webhook queue and the workers. */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock, startTestApp, type TestApp, type TestUser } from '../helpers/app.js';
import { startTestChain, type TestChain } from '../helpers/chain.js';
import { waitFor } from '../helpers/wait.js';

describe('supervisor', () => {
  let t: TestApp;
  let chain: TestChain;
  let u: TestUser;
  let networkId: number;
  const clock = new ManualClock();

  beforeAll(async () => {
    t = await startTestApp({ clock });
    chain = await startTestChain();
    networkId = await chain.register(t);
    u = await t.createUser();
  });
  afterAll(async () => {
    await t?.close();
    await chain?.stop();
  });

  it('requires authentication', async () => {
    const res = await t.request('GET', '/api/supervisor');
    expect(res.status).toBe(401);
  });

  it('reports ok with every dependency up, and the workers and watcher progress', async () => {
    const before = await t.request('GET', '/api/supervisor', { token: u.token });
    expect(before.status).toBe(200);
    expect(before.body.data.workers).toEqual({ watcher: 'disabled', deliveries: 'disabled', charges: 'disabled' });
    expect(before.body.data.uptime_s).toBe(0);
    clock.advance(90_500); // uptime is whole seconds since the service started

    t.startWorkers();
    const head = await chain.blockNumber();
    const res = await waitFor(
      async () => {
        const r = await t.request('GET', '/api/supervisor', { token: u.token });
        return r.body.data.networks[0]?.synced_block !== null ? r : null;
      },
      { message: 'watcher synced' },
    );
    expect(res.body.message).toBe('All systems operational');
    const d = res.body.data;
    expect(Object.keys(d).sort()).toEqual(['database', 'networks', 'status', 'transactions', 'uptime_s', 'version', 'webhooks', 'workers']);
    expect(d.status).toBe('ok');
    expect(d.version).toBe('0.1.0');
    expect(d.uptime_s).toBe(90);
    expect(d.database).toEqual({ ok: true, driver: t.store.driver, latency_ms: expect.any(Number) });
    expect(d.networks).toEqual([
      {
        id: networkId,
        name: 'Local devnet',
        chain_id: 31337,
        rpc_ok: true,
        head_block: head,
        synced_block: head,
        lag_blocks: 0,
        traces_pending: 0,
        endpoints: [
          {
            url: new URL(chain.rpcUrl).origin,
            ok: true,
            head_block: head,
            lag_blocks: 0,
            latency_ms: expect.any(Number),
            error: null,
            traces: true,
          },
        ],
      },
    ]);
    expect(d.webhooks).toEqual({ pending: 0, retrying: 0, failed: 0, delivered_last_hour: 0 });
    expect(d.transactions).toEqual({ pending: 0, stuck: 0 });
    expect(d.workers).toEqual({ watcher: 'running', deliveries: 'running', charges: 'running' });
    await t.workers!.stop();
    const stopped = await t.request('GET', '/api/supervisor', { token: u.token });
    expect(stopped.body.data.workers).toEqual({ watcher: 'stopped', deliveries: 'stopped', charges: 'stopped' });
  });

  it('reports degraded (still 200) when a node is down', async () => {
    await chain.stop();
    const res = await t.request('GET', '/api/supervisor', { token: u.token });
    expect(res.status).toBe(200);
    expect(res.body.message).toBe('Degraded: a dependency is unavailable');
    expect(res.body.data.status).toBe('degraded');
    expect(res.body.data.database.ok).toBe(true);
    expect(res.body.data.networks[0]).toMatchObject({ rpc_ok: false, head_block: null, lag_blocks: null });
  });
});
