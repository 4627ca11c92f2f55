/**
 * A pending transfer whose re-send every endpoint refuses for a reason other than its fee (on an
 * OP chain, the L1 data fee rose past its reserve: "insufficient funds") is `stuck: true` at once
 * with `stuck_reason` (the node's words), in its object and in the list, and `transaction.stuck`
 * is emitted once however many re-sends are refused (docs/transactions.md, "The re-send
 * queue, stuck transfers, the pending cap"). It keeps
 * its nonce: once the node takes it again it confirms at that nonce, and `stuck_reason` is gone.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { waitFor } from '../helpers/wait.js';
import { ETH, eventsOf, fundedWallet, RECIPIENT, startProxiedSuite, waitForStatus } from '../helpers/transfers.js';

let s: Awaited<ReturnType<typeof startProxiedSuite>>;

beforeAll(async () => {
  s = await startProxiedSuite({ WATCHER_POLL_MS: '100' });
});
afterAll(async () => s?.close());

const REFUSAL = 'insufficient funds for gas * price + value: have 1000 want 2000';

it('every endpoint refusing a re-send (not for its fee): stuck at once with the reason, transaction.stuck once, the nonce kept', async () => {
  const w = await fundedWallet(s.t, s.chain, s.user, s.networkId, 10n * ETH);
  // The create's send never reaches the node (HTTP 502, the client's retry too): pending, unknown.
  s.proxy.rule('eth_sendRawTransaction', { action: 'error', status: 502, message: 'bad gateway', times: 2 });
  const res = await s.t.request('POST', `/api/wallet/${w.id}/transaction/create`, {
    token: s.user.token,
    body: { amount: '0.01', token: 'ETH', address: RECIPIENT },
  });
  expect({ status: res.status, tx: res.body.data?.status, nonce: res.body.data?.nonce }).toEqual({ status: 200, tx: 'pending', nonce: 0 });
  // Every re-send is then refused for a reason a higher fee does not mend.
  s.proxy.rule('eth_sendRawTransaction', { action: 'error', code: -32000, message: REFUSAL });
  const show = () => s.t.request('GET', `/api/wallet/${w.id}/transaction/show/${res.body.data.id}`, { token: s.user.token });
  const stuck = await waitFor(
    async () => {
      const r = await show();
      return r.body.data.stuck ? r.body.data : null;
    },
    { timeoutMs: 20_000, message: 'the transfer stuck' },
  );
  expect({ status: stuck.status, stuck: stuck.stuck, stuck_reason: stuck.stuck_reason, nonce: stuck.nonce }).toEqual({
    status: 'pending',
    stuck: true,
    stuck_reason: REFUSAL,
    nonce: 0,
  });
  const listed = await s.t.request('GET', `/api/wallet/${w.id}/transaction`, { token: s.user.token });
  expect(listed.body.data[0]).toMatchObject({ id: res.body.data.id, stuck: true, stuck_reason: REFUSAL });

  // More refused re-sends: still one event.
  const sendsBefore = s.proxy.calls.filter((m) => m === 'eth_sendRawTransaction').length;
  await waitFor(async () => s.proxy.calls.filter((m) => m === 'eth_sendRawTransaction').length >= sendsBefore + 2 || null, {
    timeoutMs: 20_000,
    message: 'two more re-sends',
  });
  const events = await eventsOf(s.t, w.id, 'transaction.stuck');
  expect(events).toHaveLength(1);
  expect(events[0]!.payload).toMatchObject({
    transaction_id: res.body.data.id,
    status: 'pending',
    stuck_reason: REFUSAL,
    tx_hash: res.body.data.tx_hash,
    amount: '0.010000000000000000',
  });

  // The node takes it again: confirmed at the nonce it kept.
  s.proxy.allow('eth_sendRawTransaction');
  const done = await waitForStatus(s.t, s.user, w.id, res.body.data.id, 'confirmed', 30_000);
  expect({ tx_hash: done.tx_hash, nonce: done.nonce, stuck: done.stuck, stuck_reason: done.stuck_reason }).toEqual({
    tx_hash: res.body.data.tx_hash,
    nonce: 0,
    stuck: false,
    stuck_reason: null,
  });
  const receipt = await s.chain.rpc<{ status: string }>('eth_getTransactionReceipt', [done.tx_hash]);
  expect(receipt.status).toBe('0x1');
});
