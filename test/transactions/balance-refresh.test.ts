/**
 * The chain watcher stores the recorded wallets' balances beside its ticks, not inside them
 * (src/workers/watcher.ts, `queueRefresh`): a slow balance read does not hold back the next
 * block's transfers. A node that holds one wallet's `eth_getBalance` until the test lets it go
 * (test/helpers/transfers.ts, RpcProxy): another wallet's transfer, mined meanwhile, is
 * confirmed; once the read is answered, the first wallet's balance is stored.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waitFor } from '../helpers/wait.js';
import { ETH, RECIPIENT, startProxiedSuite, waitForStatus } from '../helpers/transfers.js';

type Suite = Awaited<ReturnType<typeof startProxiedSuite>>;

describe('a slow balance read after a batch', () => {
  let s: Suite;

  beforeAll(async () => {
    s = await startProxiedSuite();
  });

  afterAll(async () => {
    await s?.close();
  });

  const wallet = async (name: string) => {
    const res = await s.t.request('POST', '/api/wallet/create', { token: s.user.token, body: { name, network_id: s.networkId } });
    expect(res.status, res.text).toBe(200);
    await s.chain.setBalance(res.body.data.address, 5n * ETH);
    return { id: res.body.data.id as number, address: (res.body.data.address as string).toLowerCase() };
  };
  const send = async (walletId: number) => {
    const res = await s.t.request('POST', `/api/wallet/${walletId}/transaction/create`, {
      token: s.user.token,
      body: { amount: '1', token: 'ETH', address: RECIPIENT },
    });
    expect(res.status, res.text).toBe(200);
    return res.body.data.id as number;
  };

  it('does not hold back the next transfers: they are confirmed while it waits, and its balance is stored after', async () => {
    const x = await wallet('slow balance');
    const y = await wallet('other');
    await s.chain.rpc('evm_setAutomine', [false]);
    const a = await send(x.id);
    let xAfter = -1n;
    const onChainX = () => xAfter;
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const heldFrom = s.proxy.seen.length;
    // Every balance read of wallet x waits for the gate (then is answered by the node as it is).
    s.proxy.rule('eth_getBalance', {
      action: 'other-node',
      url: s.chain.rpcUrl,
      until: gate,
      match: (p) => String(p[0]).toLowerCase() === x.address,
    });
    try {
      await s.chain.mine(1);
      await waitForStatus(s.t, s.user, x.id, a, 'confirmed');
      xAfter = BigInt(await s.chain.rpc<string>('eth_getBalance', [x.address, 'latest']));
      // The watcher's refresh of x's balance is now waiting on the node.
      await waitFor(() => s.proxy.seen.slice(heldFrom).some((c) => c.method === 'eth_getBalance' && c.action === 'other-node'), {
        message: "x's balance read held",
      });

      const b = await send(y.id);
      await s.chain.mine(1);
      // Within seconds: held inside the tick, it waited for the read to time out.
      const confirmed = await waitForStatus(s.t, s.user, y.id, b, 'confirmed', 5_000);
      expect(confirmed.status).toBe('confirmed');
      // x's balance after its transfer is not stored yet: its read is still held.
      expect([...(await s.t.services.balances.cached(x.id)).values()].map((c) => c.amount)).not.toContain(onChainX());
    } finally {
      release();
    }
    // Answered: x's balance, as the chain shows it after the transfer, is stored.
    const onChain = onChainX();
    expect(onChain).toBeLessThan(4n * ETH);
    await waitFor(async () => ([...(await s.t.services.balances.cached(x.id)).values()].some((c) => c.amount === onChain) ? true : null), {
      timeoutMs: 15_000,
      message: "x's balance stored",
    });
  });
});
