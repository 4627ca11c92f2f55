/**
 * Creates of one wallet that arrive while a read of its chain state is under way share that read
 * (TransactionService.snapshot): a hot wallet makes fewer node calls a create. Shared, the read
 * must still never let the wallet spend what it does not have: the balance check under the
 * wallet's lock counts every transfer recorded meanwhile.
 *
 * A JSON-RPC proxy holds the wallet's eth_getBalance for 400 ms, so four creates sent together all
 * arrive while the first read is under way; the chain does not mine by itself, so nothing else
 * reads that balance meanwhile.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ETH, fundedWallet, startProxiedSuite, RECIPIENT } from '../helpers/transfers.js';

let suite: Awaited<ReturnType<typeof startProxiedSuite>>;

beforeAll(async () => {
  suite = await startProxiedSuite();
  await suite.chain.rpc('evm_setAutomine', [false]);
});
afterAll(async () => suite?.close());

describe('creates of one wallet share a chain-state read under way', () => {
  it('four creates at once: one balance read, three of 1.5 ETH recorded from 5 ETH, the fourth refused', async () => {
    const { t, user, networkId, chain, proxy } = suite;
    const w = await fundedWallet(t, chain, user, networkId, 5n * ETH);
    let reads = 0;
    proxy.rule('eth_getBalance', {
      action: 'other-node',
      url: chain.rpcUrl,
      delayMs: 400,
      match: (params) => {
        const mine = String(params[0]).toLowerCase() === w.address.toLowerCase();
        if (mine) reads += 1;
        return mine;
      },
    });
    const body = { amount: '1.5', token: 'ETH', address: RECIPIENT };
    const answers = await Promise.all(
      Array.from({ length: 4 }, () => t.request('POST', `/api/wallet/${w.id}/transaction/create`, { token: user.token, body })),
    );

    expect(reads).toBe(1);
    const ok = answers.filter((a) => a.status === 200);
    const refused = answers.filter((a) => a.status !== 200);
    expect(ok).toHaveLength(3);
    expect(refused.map((a) => [a.status, a.body.message])).toEqual([[400, 'Insufficient balance for transaction']]);
    expect(ok.map((a) => a.body.data.nonce).sort()).toEqual([0, 1, 2]);
    expect(new Set(ok.map((a) => a.body.data.tx_hash)).size).toBe(3);

    // A create that starts after the read ended makes its own.
    const later = await t.request('POST', `/api/wallet/${w.id}/transaction/create`, {
      token: user.token,
      body: { ...body, amount: '0.1' },
    });
    expect(later.status).toBe(200);
    expect(later.body.data.nonce).toBe(3);
    expect(reads).toBe(2);
  });
});
