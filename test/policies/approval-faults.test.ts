/**
 * Approving a held transfer when the node misbehaves (a JSON-RPC proxy in front of anvil):
 * - a rate limit (-32005) on the approval's gas estimate answers 503 with Retry-After, and the
 *   transfer is still awaiting approval, unsigned, its reservation held: approving again later
 *   signs and sends it once;
 * - a broadcast cut mid-request after the approval committed leaves it pending (signed, its
 *   nonce taken): the watcher sends the same signed transfer again, and it is confirmed once,
 *   with the exact amount at the recipient.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseEther } from 'viem';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { ETH, fundedWallet, publicClient, startProxiedSuite, waitForStatus, type FundedWallet } from '../helpers/transfers.js';

let s: Awaited<ReturnType<typeof startProxiedSuite>>;

beforeAll(async () => {
  s = await startProxiedSuite();
});

afterAll(async () => s?.close());

/** A wallet holding 2 ETH whose policy holds every ETH transfer over 0.5, and one such transfer held. */
async function held(): Promise<{ w: FundedWallet; id: number; to: `0x${string}` }> {
  const w = await fundedWallet(s.t, s.chain, s.user, s.networkId, 2n * ETH);
  const set = await s.t.request('POST', `/api/wallet/${w.id}/policy`, { token: s.user.token, body: { approval_above: { ETH: '0.5' } } });
  expect(set.status, set.text).toBe(200);
  const to = privateKeyToAccount(generatePrivateKey()).address;
  const res = await s.t.request('POST', `/api/wallet/${w.id}/transaction/create`, {
    token: s.user.token,
    body: { amount: '0.7', token: 'ETH', address: to },
  });
  expect([res.status, res.body.data?.status], res.text).toEqual([200, 'awaiting_approval']);
  return { w, id: res.body.data.id, to };
}

const approve = (walletId: number, id: number) =>
  s.t.request('POST', `/api/wallet/${walletId}/transaction/${id}/approve`, { token: s.user.token, body: {} });

describe('approving under node faults', () => {
  it('a rate limit on the estimate is 503 with Retry-After and changes nothing; the next approve sends it once', async () => {
    const { w, id, to } = await held();
    s.proxy.rule('eth_estimateGas', { action: 'error', code: -32005, message: 'limit exceeded', times: 10 });
    const refused = await approve(w.id, id);
    s.proxy.allow('eth_estimateGas');
    expect([refused.status, refused.body.message], refused.text).toEqual([503, 'The blockchain node is unavailable']);
    expect(refused.headers.get('retry-after')).toMatch(/^\d+$/);
    const shown = await s.t.request('GET', `/api/wallet/${w.id}/transaction/show/${id}`, { token: s.user.token });
    expect(shown.body.data).toMatchObject({ status: 'awaiting_approval', tx_hash: null, nonce: null });
    const ok = await approve(w.id, id);
    expect([ok.status, ok.body.data?.status], ok.text).toEqual([200, 'pending']);
    await waitForStatus(s.t, s.user, w.id, id, 'confirmed');
    expect(await publicClient(s.chain.rpcUrl).getBalance({ address: to })).toBe(parseEther('0.7'));
    expect(await publicClient(s.chain.rpcUrl).getTransactionCount({ address: w.address })).toBe(1);
  });

  it('a broadcast cut after the approval committed: pending, sent again by the watcher, confirmed once', async () => {
    const { w, id, to } = await held();
    s.proxy.drop('eth_sendRawTransaction');
    const res = await approve(w.id, id);
    expect([res.status, res.body.data?.status], res.text).toEqual([200, 'pending']);
    const hash = res.body.data.tx_hash as string;
    expect(await s.chain.rpc('eth_getTransactionByHash', [hash])).toBeNull();
    s.proxy.allow('eth_sendRawTransaction');
    const done = await waitForStatus(s.t, s.user, w.id, id, 'confirmed');
    expect(done.tx_hash).toBe(hash);
    expect(await publicClient(s.chain.rpcUrl).getBalance({ address: to })).toBe(parseEther('0.7'));
    expect(await publicClient(s.chain.rpcUrl).getTransactionCount({ address: w.address })).toBe(1);
  });
});
