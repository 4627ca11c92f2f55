/**
 * The chain watcher on a real anvil: incoming native and ERC-20 transfers become receipts,
 * the network's confirmation count is honoured, a reverted transfer becomes failed, and two
 * kinds of reorg are rolled back, told (`transaction.reorged`) and re-applied: `anvil_reorg`
 * re-mining the same transactions in new blocks, and `evm_snapshot`/`evm_revert` removing them
 * altogether (the watcher then sends the outgoing ones again from their stored raw transaction;
 * the receipt waits, pending, until its sender uses its nonce for another transaction, then
 * fails as `dropped`).
 */
import { encodeAbiParameters, encodeFunctionData, keccak256, parseAbi, type Address, type Hex } from 'viem';
import { privateKeyToAccount } from 'viem/accounts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp, type TestUser } from '../helpers/app.js';
import { startTestChain, type TestChain } from '../helpers/chain.js';
import { deployErc20, erc20BalanceOf, mintErc20 } from '../helpers/erc20.js';
import { waitFor } from '../helpers/wait.js';
import {
  dec18,
  ETH,
  eventsOf,
  fundedWallet,
  OUTSIDER,
  publicClient,
  RECIPIENT,
  sendFromOutsider,
  signFromOutsider,
  txRows,
  waitForCursor,
  waitForStatus,
} from '../helpers/transfers.js';

let t: TestApp;
let chain: TestChain;
let networkId: number;
let user: TestUser;
let usd: Address;

beforeAll(async () => {
  t = await startTestApp({ workers: true, env: { WATCHER_RECHECK_MS: '300' } });
  chain = await startTestChain();
  networkId = await chain.register(t);
  await waitForCursor(t, networkId);
  user = await t.createUser();
  usd = await deployErc20(chain.rpcUrl, { name: 'Test USD', symbol: 'TUSD', decimals: 6 });
});

afterAll(async () => {
  await t?.close();
  await chain?.stop();
});

const create = (walletId: number, body: unknown) =>
  t.request('POST', `/api/wallet/${walletId}/transaction/create`, { token: user.token, body });
const rpc = <T = unknown>(method: string, params: unknown[] = []) => chain.rpc<T>(method, params);

async function feeOf(txId: number): Promise<bigint> {
  const r = await t.store.db.selectFrom('transactions').select(['gas_used', 'gas_price']).where('id', '=', txId).executeTakeFirstOrThrow();
  return BigInt(r.gas_used!) * BigInt(r.gas_price!);
}

async function apiBalance(walletId: number): Promise<string> {
  const r = await t.request('GET', `/api/wallet/${walletId}/balance`, { token: user.token });
  return r.body.data.balance;
}

describe('incoming transfers', () => {
  it('records a native transfer to the wallet as a confirmed receipt, with events and the balance', async () => {
    const w = await fundedWallet(t, chain, user, networkId, 0n);
    const hash = await sendFromOutsider(chain.rpcUrl, w.address, 1_234_567_890_000_000_000n);
    const row = await waitFor(async () => (await txRows(t, w.id)).find((r) => r.tx_hash === hash));
    expect(row).toMatchObject({ type: 'receipt', status: 'confirmed', amount: '1234567890000000000', log_index: -1 });
    const receipt = await publicClient(chain.rpcUrl).getTransactionReceipt({ hash });
    expect(row.block_number).toBe(Number(receipt.blockNumber));
    expect(row.block_hash).toBe(receipt.blockHash);

    const shown = await t.request('GET', `/api/wallet/${w.id}/transaction/show/${row.id}`, { token: user.token });
    expect(shown.body.data).toMatchObject({
      type: 'receipt',
      status: 'confirmed',
      amount: '1.234567890000000000',
      symbol: 'ETH',
      receipt_status: true,
      gas_used: '21000.000000000000000000',
    });
    const confirmed = await eventsOf(t, w.id, 'transaction.confirmed');
    expect(confirmed.map((e) => e.payload)).toEqual([
      expect.objectContaining({
        transaction_id: row.id,
        type: 'receipt',
        status: 'confirmed',
        amount: '1.234567890000000000',
        token: 'ETH',
      }),
    ]);
    const updated = await waitFor(async () =>
      (await eventsOf(t, w.id, 'balance.updated')).find((e) => e.payload.new_balance === '1.234567890000000000'),
    );
    expect(updated.payload.change).toBe('1.234567890000000000');
    expect(await apiBalance(w.id)).toBe('1.234567890000000000');
  });

  it('records an ERC-20 Transfer log to the wallet for an active token, and ignores inactive ones', async () => {
    const w = await fundedWallet(t, chain, user, networkId, 0n);
    const add = await t.request('POST', `/api/wallet/${w.id}/token/add`, { token: user.token, body: { contract: usd } });
    expect(add.status).toBe(200);
    const hash = await mintErc20(chain.rpcUrl, usd, w.address, 42_500_000n);
    const row = await waitFor(async () => (await txRows(t, w.id)).find((r) => r.tx_hash === hash));
    expect(row).toMatchObject({ type: 'receipt', status: 'confirmed', amount: '42500000' });
    expect(row.log_index).toBeGreaterThanOrEqual(0);
    const list = await t.request('GET', `/api/wallet/${w.id}/transaction?token=TUSD`, { token: user.token });
    expect(list.body.data.map((x: any) => [x.type, x.amount, x.symbol])).toEqual([['receipt', '42.500000000000000000', 'TUSD']]);

    // A token that is not active on the wallet is not watched for it.
    const other = await deployErc20(chain.rpcUrl, { name: 'Other', symbol: 'OTH', decimals: 18 });
    const ignored = await mintErc20(chain.rpcUrl, other, w.address, 5n);
    const later = await sendFromOutsider(chain.rpcUrl, w.address, 1n); // a block after it
    await waitFor(async () => (await txRows(t, w.id)).find((r) => r.tx_hash === later));
    expect((await txRows(t, w.id)).some((r) => r.tx_hash === ignored)).toBe(false);
  });

  it('holds receipts and transfers pending until the network’s confirmations are reached', async () => {
    const deep = await chain.register(t, { name: 'Deep devnet', confirmations: 3 });
    await waitForCursor(t, deep);
    const w = await fundedWallet(t, chain, user, deep, 5n * ETH);
    const hash = await sendFromOutsider(chain.rpcUrl, w.address, ETH);
    const row = await waitFor(async () => (await txRows(t, w.id)).find((r) => r.tx_hash === hash));
    expect(row.status).toBe('pending');
    expect(row.block_number).not.toBeNull();

    const out = await create(w.id, { amount: '0.5', token: 'ETH', address: RECIPIENT });
    expect(out.status).toBe(200);
    const mined = await waitFor(async () => (await txRows(t, w.id)).find((r) => r.id === out.body.data.id && r.block_number !== null));
    expect(mined.status).toBe('pending');
    // The receipt's own block counts as one confirmation: two more blocks settle both.
    await chain.mine(2);
    await waitForStatus(t, user, w.id, out.body.data.id, 'confirmed');
    expect((await txRows(t, w.id)).find((r) => r.tx_hash === hash)!.status).toBe('confirmed');
  });
});

describe('a transfer that reverts on chain', () => {
  it('becomes failed with its receipt, and the fee it paid is gone from the balance', async () => {
    const w = await fundedWallet(t, chain, user, networkId, ETH);
    await t.request('POST', `/api/wallet/${w.id}/token/add`, { token: user.token, body: { contract: usd } });
    await mintErc20(chain.rpcUrl, usd, w.address, 10_000_000n);
    await waitFor(async () => (await txRows(t, w.id)).length === 1);
    await rpc('evm_setAutomine', [false]);
    try {
      const res = await create(w.id, { amount: '7', token: 'TUSD', address: RECIPIENT });
      expect(res.status).toBe(200);
      // Before it is mined, the wallet's token balance vanishes (balanceOf is mapping slot 4).
      const slot = keccak256(encodeAbiParameters([{ type: 'address' }, { type: 'uint256' }], [w.address, 4n]));
      await rpc('anvil_setStorageAt', [usd, slot, `0x${'0'.repeat(64)}`]);
      await rpc('evm_mine');
      const failed = await waitForStatus(t, user, w.id, res.body.data.id, 'failed');
      expect(failed.receipt_status).toBe(false);
      expect(failed.block_number).toBeGreaterThan(0);
      const events = await eventsOf(t, w.id, 'transaction.failed');
      expect(events.map((e) => e.payload)).toEqual([
        expect.objectContaining({
          transaction_id: res.body.data.id,
          status: 'failed',
          type: 'transfer',
          block_number: failed.block_number,
          failed_at: expect.any(String),
        }),
      ]);
      const fee = await feeOf(res.body.data.id);
      expect(await publicClient(chain.rpcUrl).getBalance({ address: w.address })).toBe(ETH - fee);
      await waitFor(async () => (await apiBalance(w.id)) === dec18(ETH - fee));
    } finally {
      await rpc('evm_setAutomine', [true]);
    }
  });
});

describe('the chain is the truth', () => {
  it('a transfer taken for rejected but mined after all is brought back and confirmed', async () => {
    const w = await fundedWallet(t, chain, user, networkId, ETH);
    await rpc('evm_setAutomine', [false]);
    try {
      const res = await create(w.id, { amount: '0.1', token: 'ETH', address: RECIPIENT });
      expect(res.status).toBe(200);
      // As if a node had refused it: failed, never mined (another node still has it in its pool).
      await t.store.db
        .updateTable('transactions')
        .set({ status: 'failed', failed_at: Date.now(), error: 'refused' })
        .where('id', '=', res.body.data.id)
        .execute();
      await rpc('evm_mine');
    } finally {
      await rpc('evm_setAutomine', [true]);
    }
    const rows = await waitFor(async () => {
      const r = await txRows(t, w.id);
      return r[0]?.status === 'confirmed' ? r : null;
    });
    expect(rows[0]!.block_number).not.toBeNull();
    expect(rows[0]!.error).toBeNull();
    expect(t.logs.some((l) => l.includes('marked failed was mined after all'))).toBe(true);
  });
});

describe('reorgs', () => {
  it('anvil_reorg: the same transactions in new blocks are rolled back and confirmed again on the new chain', async () => {
    const w = await fundedWallet(t, chain, user, networkId, 10n * ETH);
    const out = await create(w.id, { amount: '1', token: 'ETH', address: RECIPIENT });
    const first = await waitForStatus(t, user, w.id, out.body.data.id, 'confirmed');
    const nonce = await publicClient(chain.rpcUrl).getTransactionCount({ address: OUTSIDER.address });
    const rawIn = await signFromOutsider(chain.rpcUrl, w.address, 2n * ETH, nonce);
    const inHash = await rpc<Hex>('eth_sendRawTransaction', [rawIn]);
    const receiptRow = await waitFor(async () => (await txRows(t, w.id)).find((r) => r.tx_hash === inHash));
    const head = await chain.blockNumber();
    expect(head).toBe(first.block_number + 1);

    const { raw_tx } = await t.store.db
      .selectFrom('transactions')
      .select('raw_tx')
      .where('id', '=', out.body.data.id)
      .executeTakeFirstOrThrow();
    // Replace the last two blocks: the outgoing transfer and the receipt move to new blocks.
    await rpc('anvil_reorg', [
      2,
      [
        [raw_tx, 0],
        [rawIn, 1],
      ],
    ]);
    const client = publicClient(chain.rpcUrl);
    const newOut = await client.getTransactionReceipt({ hash: first.tx_hash });
    const newIn = await client.getTransactionReceipt({ hash: inHash });
    expect(newOut.blockHash).not.toBe(first.block_hash);

    const again = await waitFor(async () => {
      const r = await t.request('GET', `/api/wallet/${w.id}/transaction/show/${out.body.data.id}`, { token: user.token });
      return r.body.data.status === 'confirmed' && r.body.data.block_hash === newOut.blockHash ? r.body.data : null;
    });
    expect(again.block_number).toBe(Number(newOut.blockNumber));
    const rows = await waitFor(async () => {
      const r = await txRows(t, w.id);
      return r.find((x) => x.tx_hash === inHash && x.block_hash === newIn.blockHash) ? r : null;
    });
    // The receipt was taken out of the history and came back with the new block, under its id.
    expect(rows.filter((r) => r.type === 'receipt')).toHaveLength(1);
    expect(rows.find((r) => r.type === 'receipt')!.id).toBe(receiptRow.id);
    const receiptConfirms = (await eventsOf(t, w.id, 'transaction.confirmed')).filter((e) => e.payload.transaction_id === receiptRow.id);
    expect(receiptConfirms.map((e) => e.payload.block_number)).toEqual([receiptRow.block_number, Number(newIn.blockNumber)]);
    expect(t.logs.some((l) => l.includes('reorg: rolled back to the common ancestor'))).toBe(true);
    // Confirmed on the old chain, told reorged (pending, the removed block), confirmed again on the new one.
    const story = async (id: number) =>
      (await eventsOf(t, w.id))
        .filter((e) => e.name.startsWith('transaction.') && e.payload.transaction_id === id)
        .map((e) => [e.name, e.payload.status, e.payload.block_number]);
    expect(await story(out.body.data.id)).toEqual([
      ['transaction.created', 'pending', null],
      ['transaction.confirmed', 'confirmed', first.block_number],
      ['transaction.reorged', 'pending', first.block_number],
      ['transaction.confirmed', 'confirmed', Number(newOut.blockNumber)],
    ]);
    expect(await story(receiptRow.id)).toEqual([
      ['transaction.confirmed', 'confirmed', receiptRow.block_number],
      ['transaction.reorged', 'pending', receiptRow.block_number],
      ['transaction.confirmed', 'confirmed', Number(newIn.blockNumber)],
    ]);
    const reorged = (await eventsOf(t, w.id, 'transaction.reorged')).find((e) => e.payload.transaction_id === out.body.data.id)!;
    expect(reorged.payload).toEqual({
      transaction_id: out.body.data.id,
      wallet_id: w.id,
      amount: '1.000000000000000000',
      token: 'ETH',
      tx_hash: first.tx_hash,
      block_number: first.block_number,
      status: 'pending',
      type: 'transfer',
      reorged_at: expect.stringMatching(/^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}$/),
    });

    const fee = await feeOf(out.body.data.id);
    const expected = 10n * ETH - ETH - fee + 2n * ETH;
    expect(await client.getBalance({ address: w.address })).toBe(expected);
    await waitFor(async () => (await apiBalance(w.id)) === dec18(expected));
  });

  it('anvil_reorg: a token receipt moved to another log index in the new block is the same receipt, told reorged then confirmed again', async () => {
    const w = await fundedWallet(t, chain, user, networkId, ETH);
    const added = await t.request('POST', `/api/wallet/${w.id}/token/add`, { token: user.token, body: { contract: usd } });
    expect(added.status, added.text).toBe(200);
    const client = publicClient(chain.rpcUrl);
    const gasPrice = (await client.getGasPrice()) * 2n;
    const mintTo = (to: Address, amount: bigint) =>
      encodeFunctionData({ abi: parseAbi(['function mint(address to, uint256 amount)']), functionName: 'mint', args: [to, amount] });
    // The wallet's mint, from the outsider, alone in its block: log index 0.
    const nonce = await client.getTransactionCount({ address: OUTSIDER.address });
    const rawMint = await OUTSIDER.signTransaction({
      chainId: 31337,
      type: 'legacy',
      nonce,
      gas: 100_000n,
      gasPrice,
      to: usd,
      data: mintTo(w.address, 7_000_000n),
    });
    const mintHash = await rpc<Hex>('eth_sendRawTransaction', [rawMint]);
    const before = await waitFor(async () => (await txRows(t, w.id)).find((r) => r.tx_hash === mintHash && r.status === 'confirmed'));
    expect(before.log_index).toBe(0);

    // The new block puts another sender's mint (a Transfer log) first: the wallet's log is index 1.
    const other = privateKeyToAccount('0x5de4111afa1a4b94908f83103eb1f1706367c2e68ca870fc3fb9a804cdab365a');
    const otherNonce = await client.getTransactionCount({ address: other.address });
    const rawOther = await other.signTransaction({
      chainId: 31337,
      type: 'legacy',
      nonce: otherNonce,
      gas: 100_000n,
      gasPrice: gasPrice * 2n,
      to: usd,
      data: mintTo(RECIPIENT, 1n),
    });
    await rpc('anvil_reorg', [
      1,
      [
        [rawOther, 0],
        [rawMint, 0],
      ],
    ]);
    const moved = await client.getTransactionReceipt({ hash: mintHash });
    expect(moved.logs[0]!.logIndex).toBe(1);

    const after = await waitFor(async () => {
      const rows = (await txRows(t, w.id)).filter((r) => r.tx_hash === mintHash);
      return rows.length === 1 && rows[0]!.status === 'confirmed' && rows[0]!.block_hash === moved.blockHash ? rows[0]! : null;
    });
    expect(after).toMatchObject({ id: before.id, log_index: 1, block_number: Number(moved.blockNumber), amount: '7000000' });
    const story = (await eventsOf(t, w.id)).filter((e) => e.name.startsWith('transaction.') && e.payload.transaction_id === before.id);
    expect(story.map((e) => [e.name, e.payload.status, e.payload.block_number, e.payload.amount])).toEqual([
      ['transaction.confirmed', 'confirmed', before.block_number, '7.000000000000000000'],
      ['transaction.reorged', 'pending', before.block_number, '7.000000000000000000'],
      ['transaction.confirmed', 'confirmed', Number(moved.blockNumber), '7.000000000000000000'],
    ]);
    const list = await t.request('GET', `/api/wallet/${w.id}/transaction`, { token: user.token });
    expect(list.body.data.filter((x: any) => x.tx_hash === mintHash)).toHaveLength(1);
  });

  it('evm_revert: what the orphaned blocks confirmed is told reorged; transfers are re-sent and confirmed, the receipt whose nonce is taken fails as dropped', async () => {
    const start = 10n * ETH;
    const w = await fundedWallet(t, chain, user, networkId, start);
    await chain.mine(1);
    const snapshot = await rpc<Hex>('evm_snapshot');
    const client = publicClient(chain.rpcUrl);

    const out1 = await create(w.id, { amount: '1', token: 'ETH', address: RECIPIENT });
    const c1 = await waitForStatus(t, user, w.id, out1.body.data.id, 'confirmed');
    const inHash = await sendFromOutsider(chain.rpcUrl, w.address, 3n * ETH);
    const receipt = await waitFor(async () => (await txRows(t, w.id)).find((r) => r.tx_hash === inHash && r.status === 'confirmed'));
    const out2 = await create(w.id, { amount: '0.5', token: 'ETH', address: RECIPIENT });
    const c2 = await waitForStatus(t, user, w.id, out2.body.data.id, 'confirmed');
    const listBefore = await t.request('GET', `/api/wallet/${w.id}/transaction`, { token: user.token });
    expect(listBefore.body.data.map((x: any) => x.type)).toEqual(['transfer', 'receipt', 'transfer']);
    const outsiderNonce = (await client.getTransaction({ hash: inHash })).nonce;

    // The three blocks vanish; the new chain grows past the old head without them.
    expect(await rpc('evm_revert', [snapshot])).toBe(true);
    await chain.mine(4);

    // The receipt is pending again, told by transaction.reorged; the transfers are re-sent and confirm again.
    const pendingAgain = await waitFor(async () => (await txRows(t, w.id)).find((r) => r.id === receipt.id && r.status === 'pending'));
    expect(pendingAgain).toMatchObject({ block_number: null, block_hash: null, seq: receipt.seq });
    await waitFor(
      async () => {
        const r = await txRows(t, w.id);
        const visible = r.filter((x) => x.type === 'transfer');
        return visible.length === 2 && visible.every((x) => x.status === 'confirmed') ? r : null;
      },
      { timeoutMs: 20_000 },
    );
    const reorged = await eventsOf(t, w.id, 'transaction.reorged');
    expect(reorged.map((e) => [e.payload.transaction_id, e.payload.status, e.payload.block_number]).sort()).toEqual(
      [
        [out1.body.data.id, 'pending', c1.block_number],
        [receipt.id, 'pending', receipt.block_number],
        [out2.body.data.id, 'pending', c2.block_number],
      ].sort(),
    );
    const r1 = await client.getTransactionReceipt({ hash: out1.body.data.tx_hash });
    const r2 = await client.getTransactionReceipt({ hash: out2.body.data.tx_hash });
    expect(r1.status).toBe('success');
    expect(r2.status).toBe('success');
    const shown = await t.request('GET', `/api/wallet/${w.id}/transaction/show/${out1.body.data.id}`, { token: user.token });
    expect(shown.body.data.block_hash).toBe(r1.blockHash);
    expect(t.logs.some((l) => l.includes('re-broadcast'))).toBe(true);

    // The receipt waits while its sender's nonce is free (it could still be mined) ...
    const stillPending = await t.request('GET', `/api/wallet/${w.id}/transaction/show/${receipt.id}`, { token: user.token });
    expect(stillPending.body.data).toMatchObject({
      id: receipt.id,
      type: 'receipt',
      status: 'pending',
      block_number: null,
      tx_hash: inHash,
    });
    // ... until the sender uses that nonce for another transaction: then it can never be mined.
    const other = await sendFromOutsider(chain.rpcUrl, RECIPIENT, 1n);
    expect((await client.getTransaction({ hash: other })).nonce).toBe(outsiderNonce);
    const dropped = await waitForStatus(t, user, w.id, receipt.id, 'failed');
    expect(dropped).toMatchObject({ type: 'receipt', failure_reason: 'dropped', block_number: null, amount: '3.000000000000000000' });
    const failedEvents = (await eventsOf(t, w.id, 'transaction.failed')).filter((e) => e.payload.transaction_id === receipt.id);
    expect(failedEvents.map((e) => [e.payload.status, e.payload.failure_reason])).toEqual([['failed', 'dropped']]);

    // The list keeps its numbers: the three rows, newest first.
    const list = await t.request('GET', `/api/wallet/${w.id}/transaction`, { token: user.token });
    expect(list.headers.get('x-pagination-total')).toBe('3');
    expect(list.body.data.map((x: any) => [x.id, x.status])).toEqual([
      [out2.body.data.id, 'confirmed'],
      [receipt.id, 'failed'],
      [out1.body.data.id, 'confirmed'],
    ]);

    const fees = (await feeOf(out1.body.data.id)) + (await feeOf(out2.body.data.id));
    const expected = start - ETH - ETH / 2n - fees;
    expect(await client.getBalance({ address: w.address })).toBe(expected);
    await waitFor(async () => (await apiBalance(w.id)) === dec18(expected));
    expect(await erc20BalanceOf(chain.rpcUrl, usd, w.address)).toBe(0n);
  });
});
