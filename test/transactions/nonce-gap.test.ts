/**
 * Nonce gaps the node's answers can open, injected with a proxy in front of the node:
 * - a first send refused "replacement transaction underpriced" says a pool holds another
 *   transaction of the wallet at that nonce (the node behind the proxy never saw this one). That
 *   is final neither for the transfer nor for its nonce: the transfer stays pending, the
 *   watcher sends it again and it confirms at its nonce, and the next transfer takes the next
 *   nonce (a refusal taken as final gave the nonce back, let later transfers pass it, and they
 *   waited behind it for ever once nothing used it);
 * - a transfer refused for good on its first send gives its nonce back, but the next create reads a
 *   pending count above it (a node whose pool holds a transaction at that nonce, one it never
 *   mines) and signs above it: the wallet's next nonce is then past a nonce nothing holds, and the
 *   transfer waits in the node behind it. The watcher's gap filler signs 1 wei to the wallet itself
 *   at exactly that nonce (it used to take the allocation, which starts at the next nonce, and
 *   gave up: "Nonce 0 is no longer the next to fill (allocation gave 2)"), and the transfer
 *   confirms.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { Address } from 'viem';
import { ETH, eventsOf, fundedWallet, publicClient, RECIPIENT, startProxiedSuite, txRows, waitForStatus } from '../helpers/transfers.js';

let s: Awaited<ReturnType<typeof startProxiedSuite>>;

beforeAll(async () => {
  s = await startProxiedSuite();
});
afterAll(async () => s?.close());

const create = (w: { id: number }, amount: string) =>
  s.t.request('POST', `/api/wallet/${w.id}/transaction/create`, {
    token: s.user.token,
    body: { amount, token: 'ETH', address: RECIPIENT },
  });
const client = () => publicClient(s.chain.rpcUrl);

it('a first send refused "replacement transaction underpriced" stays pending, is sent again and confirms at its nonce', async () => {
  const w = await fundedWallet(s.t, s.chain, s.user, s.networkId, 10n * ETH);
  const before = await client().getBalance({ address: RECIPIENT });
  s.proxy.rule('eth_sendRawTransaction', { action: 'error', code: -32000, message: 'replacement transaction underpriced', times: 1 });
  const first = await create(w, '0.1');
  expect({ status: first.status, tx: first.body.data?.status, nonce: first.body.data?.nonce }, first.text).toEqual({
    status: 200,
    tx: 'pending',
    nonce: 0,
  });
  const second = await create(w, '0.2');
  expect({ status: second.status, nonce: second.body.data?.nonce }, second.text).toEqual({ status: 200, nonce: 1 });

  const done = await waitForStatus(s.t, s.user, w.id, first.body.data.id, 'confirmed', 30_000);
  await waitForStatus(s.t, s.user, w.id, second.body.data.id, 'confirmed', 30_000);
  expect({ tx_hash: done.tx_hash, nonce: done.nonce }).toEqual({ tx_hash: first.body.data.tx_hash, nonce: 0 });
  expect(await eventsOf(s.t, w.id, 'transaction.failed')).toEqual([]);
  expect(await client().getTransactionCount({ address: w.address })).toBe(2);
  expect(await client().getBalance({ address: RECIPIENT })).toBe(before + (3n * ETH) / 10n);
  expect(s.t.logs.some((l) => l.includes('a pool holds another transaction at its nonce'))).toBe(true);
});

it('a gap below the next nonce (a pool counted a transaction there that it never mined) is filled at exactly that nonce', async () => {
  const w = await fundedWallet(s.t, s.chain, s.user, s.networkId, 10n * ETH);
  const before = await client().getBalance({ address: RECIPIENT });
  // Nonce 0 refused for good on its first send: failed, its nonce given back.
  s.proxy.rule('eth_sendRawTransaction', {
    action: 'error',
    code: -32000,
    message: 'insufficient funds for gas * price + value',
    times: 1,
  });
  const refused = await create(w, '0.1');
  expect(refused.status, refused.text).toBe(400);
  // The next create's node says the wallet's pending count is 1: its pool holds a transaction at
  // nonce 0, which it never mines. The create signs nonce 1; the wallet's next nonce becomes 2.
  const mine = (p: unknown[]) => String(p[0]).toLowerCase() === w.address.toLowerCase() && p[1] === 'pending';
  s.proxy.rule('eth_getTransactionCount', { action: 'result', result: '0x1', times: 1, match: mine });
  const waiting = await create(w, '0.2');
  expect({ status: waiting.status, nonce: waiting.body.data?.nonce }, waiting.text).toEqual({ status: 200, nonce: 1 });

  // Nonce 1 waits in the node behind nonce 0: the filler takes exactly 0, and both mine.
  await waitForStatus(s.t, s.user, w.id, waiting.body.data.id, 'confirmed', 45_000);
  const rows = await txRows(s.t, w.id);
  const toSelf = await s.t.store.db
    .selectFrom('transactions')
    .select(['type', 'nonce', 'status', 'amount'])
    .where('wallet_id', '=', w.id)
    .where('to_address', '=', w.address as Address)
    .orderBy('id', 'asc')
    .execute();
  expect(toSelf.map((r) => ({ type: r.type, nonce: r.nonce, status: r.status, amount: String(r.amount) }))).toEqual([
    { type: 'transfer', nonce: 0, status: 'confirmed', amount: '1' },
    { type: 'receipt', nonce: 0, status: 'confirmed', amount: '1' },
  ]);
  expect(rows.filter((r) => r.type === 'transfer').map((r) => [r.nonce, r.status])).toEqual([
    [0, 'failed'],
    [1, 'confirmed'],
    [0, 'confirmed'],
  ]);
  expect(await client().getTransactionCount({ address: w.address })).toBe(2);
  expect(await client().getBalance({ address: RECIPIENT })).toBe(before + (2n * ETH) / 10n);
  // The filler left the wallet's next nonce where it was: the next transfer takes 2.
  const next = await create(w, '0.01');
  expect({ status: next.status, nonce: next.body.data?.nonce }, next.text).toEqual({ status: 200, nonce: 2 });
});
