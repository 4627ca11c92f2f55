/**
 * A transfer priced below the base fee, on a real anvil that mines a block every second and
 * keeps a mempool: sent with explicit fees just at the base fee, which is then raised 20×
 * (anvil_setNextBlockBaseFeePerGas) and keeps rising, each block full (a block gas limit of two
 * transfers, filled by an outside sender paying a higher tip); blocks keep coming and the
 * transfer waits in the pool. (anvil, unlike geth, evicts a transaction whose max fee is below
 * the base fee when it tries to include it: a full block never gets to it, as on a busy chain.)
 * Speed-up through the API prices it above the new base fee and it mines under the same id
 * with the new hash; cancel mines a self-transfer at its nonce, fails it as `cancelled` and
 * releases its reservation. Balances exact to the wei, read from the chain and the receipts.
 */
import { createWalletClient, formatUnits, http, type Address, type Hex } from 'viem';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { foundry } from 'viem/chains';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp, type TestUser } from '../helpers/app.js';
import { startTestChain, type TestChain } from '../helpers/chain.js';
import { waitFor } from '../helpers/wait.js';
import { ETH, OUTSIDER, dec18, fundedWallet, publicClient, waitForCursor, waitForStatus, type FundedWallet } from '../helpers/transfers.js';

let t: TestApp;
let chain: TestChain;
let networkId: number;
let user: TestUser;

/** Tip of the underpriced transfers (wei per gas unit). */
const TIP = 1_000n;
/** How many times the base fee is raised over the one the transfer was priced at. */
const RAISE = 20n;
/** Two transfers fill a block. */
const BLOCK_GAS_LIMIT = 42_000n;
/**
 * Filler transfers sent with each underpriced one: full blocks for FILLERS / 2 blocks. Their max
 * fee (45× the base fee the transfer was priced at) outlasts the base fee over those blocks
 * (20× then +12.5% a full block) but stays below what a speed-up or cancel quotes then (2× the
 * base fee + tip): anvil orders its pool by max fee per gas, so the replacement goes first.
 */
const FILLERS = 12;

beforeAll(async () => {
  // WATCHER_RECHECK_MS: the watcher re-checks (and re-sends) the waiting transfer many times meanwhile.
  t = await startTestApp({ workers: true, env: { WATCHER_RECHECK_MS: '300' } });
  chain = await startTestChain({ blockTimeS: 1 });
  networkId = await chain.register(t);
  await waitForCursor(t, networkId);
  user = await t.createUser();
  await chain.rpc('evm_setBlockGasLimit', [`0x${BLOCK_GAS_LIMIT.toString(16)}`]);
});

afterAll(async () => {
  await t?.close();
  await chain?.stop();
});

const client = () => publicClient(chain.rpcUrl);
const wei18 = (v: bigint) => formatUnits(v, 18);
const freshAddress = (): Address => privateKeyToAccount(generatePrivateKey()).address;
const create = (w: FundedWallet, body: Record<string, unknown>) =>
  t.request('POST', `/api/wallet/${w.id}/transaction/create`, { token: user.token, body: { token: 'ETH', ...body } });
const replace = (w: FundedWallet, id: number, kind: 'speed-up' | 'cancel', body: unknown = {}) =>
  t.request('POST', `/api/wallet/${w.id}/transaction/${id}/${kind}`, { token: user.token, body });

async function latestBaseFee(): Promise<bigint> {
  return (await client().getBlock({ blockTag: 'latest' })).baseFeePerGas!;
}

/** FILLERS transfers from the outsider, tip `tip`, max fee `maxFee` (enough for every block they fill). */
async function sendFillers(tip: bigint, maxFee: bigint): Promise<void> {
  const wallet = createWalletClient({ account: OUTSIDER, chain: foundry, transport: http(chain.rpcUrl) });
  const first = await client().getTransactionCount({ address: OUTSIDER.address, blockTag: 'pending' });
  for (let i = 0; i < FILLERS; i++) {
    await wallet.sendTransaction({
      to: OUTSIDER.address,
      value: 0n,
      gas: 21_000n,
      nonce: first + i,
      maxFeePerGas: maxFee,
      maxPriorityFeePerGas: tip,
    });
  }
}

async function paidFee(hash: string): Promise<bigint> {
  const r = await client().getTransactionReceipt({ hash: hash as Hex });
  return r.gasUsed * r.effectiveGasPrice;
}

async function chainTx(hash: string) {
  return chain.rpc<{ blockNumber: string | null; maxFeePerGas: string; nonce: string } | null>('eth_getTransactionByHash', [hash]);
}

/**
 * Sends `amount` to `to` with a max fee of the latest base fee + TIP, then FILLERS transfers
 * paying a far higher tip, and raises the next block's base fee RAISE×. Interval mining is held
 * for those calls only (so no block falls between the broadcast and the raise), then runs
 * again at one block a second. Returns the
 * creation response, the transfer's max fee and the block number the raise applies after.
 */
async function underpricedTransfer(w: FundedWallet, to: Address, amount: string) {
  // After an empty block (no filler left), the next base fee is at most the latest one.
  await waitFor(
    async () =>
      (await chain.rpc<{ pending: string }>('txpool_status')).pending === '0x0' &&
      (await client().getBlock({ blockTag: 'latest' })).gasUsed === 0n,
    {
      timeoutMs: 20_000,
      message: 'an empty block, nothing in the pool',
    },
  );
  await chain.rpc('evm_setIntervalMining', [0]);
  try {
    const base = await latestBaseFee();
    const maxFee = base + TIP;
    const res = await create(w, { amount, address: to, max_fee_per_gas: wei18(maxFee), max_priority_fee_per_gas: wei18(TIP) });
    expect(res.status, res.text).toBe(200);
    const sent = await chainTx(res.body.data.tx_hash);
    expect(sent).not.toBeNull();
    expect(BigInt(sent!.maxFeePerGas)).toBe(maxFee);
    await sendFillers(base * 10n, base * 45n);
    await chain.rpc('anvil_setNextBlockBaseFeePerGas', [`0x${(base * RAISE).toString(16)}`]);
    return { res, maxFee, from: await chain.blockNumber() };
  } finally {
    await chain.rpc('evm_setIntervalMining', [1]);
  }
}

/**
 * Waits for 3 blocks after `from`, each with a base fee above `maxFee`; the transfer is still
 * pending in the service and unmined at the node.
 */
async function expectWaitingInPool(w: FundedWallet, id: number, hash: string, maxFee: bigint, from: number): Promise<void> {
  await waitFor(async () => (await chain.blockNumber()) >= from + 3, { timeoutMs: 15_000, message: `3 blocks after ${from}` });
  for (let n = from + 1; n <= from + 3; n++) {
    const block = await client().getBlock({ blockNumber: BigInt(n) });
    expect(block.baseFeePerGas! > maxFee).toBe(true);
    expect(block.gasUsed).toBe(BLOCK_GAS_LIMIT);
    expect(block.transactions).not.toContain(hash);
  }
  const shown = await t.request('GET', `/api/wallet/${w.id}/transaction/show/${id}`, { token: user.token });
  expect(shown.body.data).toMatchObject({
    status: 'pending',
    tx_hash: hash,
    block_number: null,
    replaced_hashes: [],
    failure_reason: null,
  });
  const tx = await chainTx(hash);
  expect(tx).not.toBeNull();
  expect(tx!.blockNumber).toBeNull();
}

describe('a transfer priced below a rising base fee', () => {
  it('waits in the pool while blocks are mined; speed-up prices it above the base fee and it confirms under the same id with the new hash', async () => {
    const w = await fundedWallet(t, chain, user, networkId, 5n * ETH);
    const to = freshAddress();
    const { res, maxFee, from } = await underpricedTransfer(w, to, '1.25');
    const id = res.body.data.id as number;
    const old = res.body.data.tx_hash as string;
    await expectWaitingInPool(w, id, old, maxFee, from);

    const fast = await replace(w, id, 'speed-up', { fee_level: 'high' });
    expect(fast.status).toBe(200);
    expect(fast.body.message).toBe('Transaction sped up');
    expect(fast.body.data).toMatchObject({ id, status: 'pending', nonce: 0, replaced_hashes: [old], failure_reason: null });
    const hash = fast.body.data.tx_hash as string;
    expect(hash).not.toBe(old);
    // The new version carries a max fee above the raised base fee, as the node holds it.
    const sent = await chainTx(hash);
    expect(sent).not.toBeNull();
    expect(BigInt(sent!.nonce)).toBe(0n);
    expect(BigInt(sent!.maxFeePerGas) > maxFee * RAISE).toBe(true);
    expect(fast.body.data.gas_price).toBe(dec18(BigInt(sent!.maxFeePerGas)));

    const done = await waitForStatus(t, user, w.id, id, 'confirmed');
    expect(done).toMatchObject({
      id,
      tx_hash: hash,
      replaced_hashes: [old],
      failure_reason: null,
      amount: '1.250000000000000000',
      receipt_status: true,
    });
    const receipt = await client().getTransactionReceipt({ hash: hash as Hex });
    expect(receipt.status).toBe('success');
    expect(Number(receipt.blockNumber)).toBe(done.block_number);
    expect(receipt.blockNumber > BigInt(from + 3)).toBe(true);
    expect(done.gas_used).toBe(`${receipt.gasUsed}.000000000000000000`);
    expect(await chain.rpc('eth_getTransactionReceipt', [old])).toBeNull();
    expect(await client().getBalance({ address: to })).toBe(1_250_000_000_000_000_000n);
    expect(await client().getBalance({ address: w.address })).toBe(
      5n * ETH - 1_250_000_000_000_000_000n - receipt.gasUsed * receipt.effectiveGasPrice,
    );
  });

  it('cancel: a self-transfer at its nonce mines, it fails as cancelled, nothing reaches the recipient, and its reservation is released', async () => {
    const w = await fundedWallet(t, chain, user, networkId, 5n * ETH);
    const to = freshAddress();
    const { res, maxFee, from } = await underpricedTransfer(w, to, '2');
    const id = res.body.data.id as number;
    const old = res.body.data.tx_hash as string;
    await expectWaitingInPool(w, id, old, maxFee, from);
    // 2 ETH is reserved while it waits: 3.5 more does not fit.
    const over = await create(w, { amount: '3.5', address: to });
    expect(over.status).toBe(400);
    expect(over.body.message).toBe('Insufficient balance for transaction');

    const c = await replace(w, id, 'cancel', { fee_level: 'high' });
    expect(c.status).toBe(200);
    expect(c.body.message).toBe('Transaction cancel sent');
    expect(c.body.data).toMatchObject({ id, status: 'pending', replaced_hashes: [old] });
    const cancelHash = c.body.data.tx_hash as string;
    const sent = await chainTx(cancelHash);
    expect(sent).not.toBeNull();
    expect(BigInt(sent!.maxFeePerGas) > maxFee * RAISE).toBe(true);

    const failed = await waitForStatus(t, user, w.id, id, 'failed');
    expect(failed).toMatchObject({
      failure_reason: 'cancelled',
      tx_hash: cancelHash,
      replaced_hashes: [old],
      amount: '2.000000000000000000',
    });
    expect(await chain.rpc('eth_getTransactionReceipt', [old])).toBeNull();
    const cancelReceipt = await client().getTransactionReceipt({ hash: cancelHash as Hex });
    expect(cancelReceipt.to?.toLowerCase()).toBe(w.address.toLowerCase());
    expect(await client().getBalance({ address: to })).toBe(0n);
    const left = 5n * ETH - (await paidFee(cancelHash));
    expect(await client().getBalance({ address: w.address })).toBe(left);
    const balance = await waitFor(
      async () => {
        const r = await t.request('GET', `/api/wallet/${w.id}/balance`, { token: user.token });
        return r.body.data?.balance === dec18(left) ? r.body.data : null;
      },
      { timeoutMs: 20_000, message: `balance route at ${dec18(left)}` },
    );
    expect(balance.balance).toBe(dec18(left));

    // Nothing is reserved any more: everything left but the next transfer's own max fee can be sent.
    // (Its tip outbids the fillers still waiting.)
    const base = await latestBaseFee();
    const nextTip = base;
    const nextMaxFee = 2n * base + nextTip;
    const all = left - 21_000n * nextMaxFee;
    const next = await create(w, {
      amount: dec18(all),
      address: to,
      max_fee_per_gas: wei18(nextMaxFee),
      max_priority_fee_per_gas: wei18(nextTip),
    });
    expect(next.status).toBe(200);
    expect(next.body.data.nonce).toBe(1);
    const done = await waitForStatus(t, user, w.id, next.body.data.id, 'confirmed');
    expect(await client().getBalance({ address: to })).toBe(all);
    expect(await client().getBalance({ address: w.address })).toBe(left - all - (await paidFee(done.tx_hash)));
  });
});
