/**
 * Restarts. A transaction recorded but never broadcast (the send is cut, then the service
 * stops, as a crash between commit and broadcast would leave it) is sent by the next process
 * on start and confirmed once; transfers to the wallet while the service was down are
 * recorded once; restarting again doubles nothing. A recorded transaction the node rejects
 * when it is sent again becomes failed, releases its reservation and gives its nonce back.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp, type TestUser } from '../helpers/app.js';
import { startTestChain, type TestChain } from '../helpers/chain.js';
import { createTestDatabase, type TestDatabase } from '../helpers/db.js';
import { waitFor } from '../helpers/wait.js';
import { upsertNetwork } from '../../src/modules/networks/networks.repository.js';
import { ETH, eventsOf, fundedWallet, publicClient, RECIPIENT, RpcProxy, sendFromOutsider, txRows, waitForCursor, waitForStatus } from './support.js';

let database: TestDatabase;
let chain: TestChain;
let proxy: RpcProxy;
let app: TestApp | null = null;
let networkId: number;
let user: TestUser;

/** Only the start-up pass may re-send: the periodic check is 10 minutes away. */
const ENV = { WATCHER_RECHECK_MS: '600000' };

async function boot(): Promise<TestApp> {
  app = await startTestApp({ database, keepDatabase: true, workers: true, env: ENV });
  return app;
}

async function stop(): Promise<void> {
  await app?.close();
  app = null;
}

beforeAll(async () => {
  database = await createTestDatabase();
  chain = await startTestChain();
  proxy = await RpcProxy.start(chain.rpcUrl);
  const t = await boot();
  const n = await upsertNetwork(
    t.store.db,
    { name: 'Proxied devnet', rpc_url: proxy.url, chain_id: 31337, currency_symbol: 'ETH', block_explorer: '', is_mainnet: false, confirmations: 1 },
    Date.now(),
  );
  networkId = n.id;
  await waitForCursor(t, networkId);
  user = await t.createUser();
});

afterAll(async () => {
  await stop();
  await database?.drop();
  await proxy?.down();
  await chain?.stop();
});

describe('restart', () => {
  it('loses nothing between recording and broadcasting, and doubles nothing', async () => {
    let t = app!;
    const start = 10n * ETH;
    const w = await fundedWallet(t, chain, user, networkId, start);
    proxy.drop('eth_sendRawTransaction');
    const res = await t.request('POST', `/api/wallet/${w.id}/transaction/create`, { token: user.token, body: { amount: '1', token: 'ETH', address: RECIPIENT } });
    expect(res.status).toBe(200);
    const txId = res.body.data.id as number;
    const hash = res.body.data.tx_hash as string;
    expect(await chain.rpc('eth_getTransactionByHash', [hash])).toBeNull();
    await stop();

    // While the service is down: two transfers to the wallet and a few more blocks.
    proxy.allow('eth_sendRawTransaction');
    const in1 = await sendFromOutsider(chain.rpcUrl, w.address, 2n * ETH);
    const in2 = await sendFromOutsider(chain.rpcUrl, w.address, 3n * ETH);
    await chain.mine(3);

    t = await boot();
    const done = await waitForStatus(t, user, w.id, txId, 'confirmed');
    expect(done.tx_hash).toBe(hash);
    expect(t.logs.some((l) => l.includes('re-broadcast'))).toBe(true);
    const rows = await waitFor(async () => {
      const r = await txRows(t, w.id);
      return r.some((x) => x.tx_hash === in1) && r.some((x) => x.tx_hash === in2) ? r : null;
    });
    expect(rows.map((r) => [r.type, r.status, r.amount])).toEqual([
      ['transfer', 'confirmed', String(ETH)],
      ['receipt', 'confirmed', String(2n * ETH)],
      ['receipt', 'confirmed', String(3n * ETH)],
    ]);
    const client = publicClient(chain.rpcUrl);
    expect(await client.getTransactionCount({ address: w.address })).toBe(1);
    const fee = BigInt(rows[0]!.gas_used!) * BigInt(rows[0]!.gas_price!);
    expect(await client.getBalance({ address: w.address })).toBe(start - ETH - fee + 5n * ETH);

    const counts = async () => {
      const e = await eventsOf(t, w.id);
      return {
        created: e.filter((x) => x.name === 'transaction.created').length,
        confirmed: e.filter((x) => x.name === 'transaction.confirmed').length,
        rows: (await txRows(t, w.id)).length,
      };
    };
    expect(await counts()).toEqual({ created: 1, confirmed: 3, rows: 3 });

    // Another restart, with new blocks: nothing is recorded or announced twice.
    await stop();
    await chain.mine(2);
    t = await boot();
    await waitForCursor(t, networkId, await chain.blockNumber());
    expect(await counts()).toEqual({ created: 1, confirmed: 3, rows: 3 });
  });

  it('a recorded transaction the node rejects fails, releases its reservation and gives its nonce back', async () => {
    let t = app!;
    const w = await fundedWallet(t, chain, user, networkId, 2n * ETH);
    proxy.drop('eth_sendRawTransaction');
    const res = await t.request('POST', `/api/wallet/${w.id}/transaction/create`, { token: user.token, body: { amount: '1.5', token: 'ETH', address: RECIPIENT } });
    expect(res.status).toBe(200);
    expect(res.body.data.nonce).toBe(0);
    // The reservation holds: another 1.5 does not fit next to it.
    const second = await t.request('POST', `/api/wallet/${w.id}/transaction/create`, { token: user.token, body: { amount: '1.5', token: 'ETH', address: RECIPIENT } });
    expect(second.status).toBe(400);
    await stop();

    // The funds leave by another way before the service comes back: the send must be refused.
    await chain.setBalance(w.address, 0n);
    proxy.allow('eth_sendRawTransaction');
    t = await boot();
    const failed = await waitForStatus(t, user, w.id, res.body.data.id, 'failed');
    expect(failed.block_number).toBeNull();
    const [row] = await txRows(t, w.id);
    expect(row!.error).toMatch(/insufficient funds/i);
    const events = await eventsOf(t, w.id, 'transaction.failed');
    expect(events.map((e) => e.payload)).toEqual([expect.objectContaining({ transaction_id: res.body.data.id, status: 'failed', block_number: null })]);
    const wallet = await t.store.db.selectFrom('wallets').select('next_nonce').where('id', '=', w.id).executeTakeFirstOrThrow();
    expect(wallet.next_nonce).toBe(0);

    // Funded again: the whole balance is available (nothing reserved) and nonce 0 is reused.
    await chain.setBalance(w.address, 2n * ETH);
    const again = await t.request('POST', `/api/wallet/${w.id}/transaction/create`, { token: user.token, body: { amount: '1.5', token: 'ETH', address: RECIPIENT } });
    expect(again.status).toBe(200);
    expect(again.body.data.nonce).toBe(0);
    // The same request for the same nonce signs to the same bytes: a second row with that hash.
    expect(again.body.data.tx_hash).toBe(res.body.data.tx_hash);
    expect(again.body.data.id).not.toBe(res.body.data.id);
    await waitForStatus(t, user, w.id, again.body.data.id, 'confirmed');
    expect(await publicClient(chain.rpcUrl).getTransactionCount({ address: w.address })).toBe(1);
    // The mined bytes belong to the new row only: the failed one stays failed, counted once.
    const rows = await txRows(t, w.id);
    expect(rows.map((r) => [r.id, r.status])).toEqual([
      [res.body.data.id, 'failed'],
      [again.body.data.id, 'confirmed'],
    ]);
  });

  it('a transfer stuck behind a rejected nonce is freed by a 1 wei self-transfer at that nonce', async () => {
    let t = app!;
    const w = await fundedWallet(t, chain, user, networkId, 3n * ETH);
    proxy.drop('eth_sendRawTransaction');
    const create = (amount: string) =>
      t.request('POST', `/api/wallet/${w.id}/transaction/create`, { token: user.token, body: { amount, token: 'ETH', address: RECIPIENT } });
    const first = await create('1');
    const second = await create('0.5');
    expect([first.body.data.nonce, second.body.data.nonce]).toEqual([0, 1]);
    await stop();

    // Before the service is back, the balance drops: nonce 0 (1 ETH) is now refused, nonce 1
    // (0.5 ETH) is accepted by the node but waits in its queue behind the missing nonce 0.
    await chain.setBalance(w.address, (7n * ETH) / 10n);
    proxy.allow('eth_sendRawTransaction');
    const before = await publicClient(chain.rpcUrl).getBalance({ address: RECIPIENT });
    t = await boot();
    await waitForStatus(t, user, w.id, first.body.data.id, 'failed');
    await waitForStatus(t, user, w.id, second.body.data.id, 'confirmed');

    const rows = await txRows(t, w.id);
    const toSelf = await t.store.db
      .selectFrom('transactions')
      .select(['id', 'type', 'nonce', 'status', 'amount'])
      .where('wallet_id', '=', w.id)
      .where('to_address', '=', w.address)
      .orderBy('id', 'asc')
      .execute();
    // The filler, and (the wallet being its own recipient) the receipt the watcher records for it.
    expect(toSelf.map((r) => ({ type: r.type, nonce: r.nonce, status: r.status, amount: String(r.amount) }))).toEqual([
      { type: 'transfer', nonce: 0, status: 'confirmed', amount: '1' },
      { type: 'receipt', nonce: 0, status: 'confirmed', amount: '1' },
    ]);
    expect(rows.filter((r) => r.type === 'transfer').map((r) => [r.nonce, r.status])).toEqual([
      [0, 'failed'],
      [1, 'confirmed'],
      [0, 'confirmed'],
    ]);
    const client = publicClient(chain.rpcUrl);
    expect(await client.getTransactionCount({ address: w.address })).toBe(2);
    expect(await client.getBalance({ address: RECIPIENT })).toBe(before + ETH / 2n);
    const fees = rows.filter((r) => r.type === 'transfer' && r.status === 'confirmed').reduce((s, r) => s + BigInt(r.gas_used!) * BigInt(r.gas_price!), 0n);
    expect(await client.getBalance({ address: w.address })).toBe((7n * ETH) / 10n - ETH / 2n - fees);
    expect(t.logs.some((l) => l.includes('nonce gap: sending a 1 wei self-transfer'))).toBe(true);
  });
});
