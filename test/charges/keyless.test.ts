/**
 * Keyless deposit addresses (docs/charges.md, "Keyless deposit addresses"): on a network with a
 * Sweeper, a charge paid in an ERC-20 token gets an address of the Sweeper (no key, no gas ever
 * sent there) and is swept with the wallet's other due addresses in one transaction of the main
 * address; a native-only charge keeps a keyed address. Against a real anvil with the Sweeper
 * deployed and probed as at the devnet's start:
 *
 * - three token charges paid (one also sent native coin): one Sweeper call from the main address
 *   sweeps all three, every charge's sweeps entries name it with what left each address; the
 *   addresses end empty, codeless and at nonce 0; the main address sent nothing else; the
 *   wallet's reconciliation agrees on every line but the native coin sent as a wrong token (the
 *   batch's fee once, on the main address);
 * - a token that refuses one address (blacklisted) fails that address alone (`refused`), the
 *   others are swept by the same call; once the token lets go, a later batch sweeps it;
 * - a reorg that removes the batch's block and drops its transaction: the rows go back in
 *   flight, the wallet's transaction is sent again as signed, and every address is swept once;
 * - a Sweeper without code at the batch's read block (a reset devnet): nothing is sent (a call
 *   to it would succeed and move nothing); once the code is back, the addresses are swept.
 */
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { getAddress, parseEther, type Address } from 'viem';
import { ManualClock, startTestApp, type TestApp, type TestUser } from '../helpers/app.js';
import { startTestChain, type TestChain } from '../helpers/chain.js';
import { waitForCursor } from '../helpers/transfers.js';
import { waitFor } from '../helpers/wait.js';
import { deployErc20, erc20BalanceOf, mintErc20 } from '../helpers/erc20.js';
import { findNetwork } from '../../src/modules/networks/networks.repository.js';
import { ensureDevnetSweeper } from '../../src/modules/networks/sweeper-deploy.js';
import { sweeperAddress } from '../../src/chain/sweeper.js';
import { balanceOf, chargeApi, clockToChain, pay } from './support.js';
import { deployPausable, pausableToken } from './pausable-token.js';

const clock = new ManualClock();
let chain: TestChain;
let t: TestApp;
let alice: TestUser;
let networkId: number;
const ZERO = '0.000000000000000000';

beforeAll(async () => {
  chain = await startTestChain();
  // A batch goes when three addresses are due (or after an hour of the test's clock).
  t = await startTestApp({ clock, env: { CHARGES_POLL_MS: '50', WATCHER_POLL_MS: '50', SWEEP_BATCH_MAX: '3', SWEEP_MAX_WAIT_S: '3600' } });
  networkId = await chain.register(t);
  await ensureDevnetSweeper(t.store.db, (await findNetwork(t.store.db, networkId))!, pino({ level: 'silent' }), Date.now());
  expect((await findNetwork(t.store.db, networkId))!.sweeper).toBe(sweeperAddress());
  alice = await t.createUser();
  t.startWorkers();
  await waitForCursor(t, networkId);
});

afterAll(async () => {
  await t?.close();
  await chain?.stop();
});

/** A wallet holding 10 ETH, paid to it from outside (a receipt, so its books start exact). */
async function fundedWallet(name: string) {
  const wallet = (await t.request('POST', '/api/wallet/create', { token: alice.token, body: { name, network_id: networkId } })).body
    .data as { id: number; address: Address };
  await pay(chain.rpcUrl, wallet.address, parseEther('10'));
  return wallet;
}

async function addToken(walletId: number, contract: Address) {
  const added = await t.request('POST', `/api/wallet/${walletId}/token/add`, { token: alice.token, body: { contract } });
  expect(added.status, added.text).toBe(200);
}

/** A funded wallet with a new test token `symbol` (6 decimals) and `n` charges of `amount` in it. */
async function tokenCharges(name: string, symbol: string, amount: string, n: number) {
  const wallet = await fundedWallet(name);
  const usd = await deployErc20(chain.rpcUrl, { name: `${symbol} token`, symbol, decimals: 6 });
  await addToken(wallet.id, usd);
  const api = chargeApi(t, wallet.id, alice.token);
  await clockToChain(clock, chain);
  const charges: any[] = [];
  for (let i = 0; i < n; i++) charges.push(await api.create({ amount, token: symbol, expires: 600 }));
  return { wallet, usd, api, charges };
}

const code = (address: string) => chain.rpc<string>('eth_getCode', [address, 'latest']);
const nonceOf = async (address: string) => Number(BigInt(await chain.rpc<string>('eth_getTransactionCount', [address, 'latest'])));

describe('keyless deposit addresses', () => {
  it('three token charges swept by one call of the main address; nothing sent to them, nothing left, the main address’s books agree', async () => {
    const wallet = await fundedWallet('Keyless');
    const usd = await deployErc20(chain.rpcUrl, { name: 'Test USD', symbol: 'TUSD', decimals: 6 });
    await addToken(wallet.id, usd);
    const api = chargeApi(t, wallet.id, alice.token);
    await clockToChain(clock, chain);
    const charges = [];
    for (const amount of ['5', '6', '7']) charges.push(await api.create({ amount, token: 'TUSD', expires: 600 }));
    const native = await api.create({ amount: '0.1', token: 'ETH', expires: 600 });
    expect(charges.map((c) => c.deposit_kind)).toEqual(['keyless', 'keyless', 'keyless']);
    expect(native.deposit_kind).toBe('keyed');
    for (const c of charges) expect([await code(c.address), await nonceOf(c.address)]).toEqual(['0x', 0]);

    // Paid from outside: each its amount, and the first also some native coin.
    await pay(chain.rpcUrl, charges[0].address, parseEther('0.01'));
    for (const [i, c] of charges.entries()) await mintErc20(chain.rpcUrl, usd, c.address, BigInt(5 + i) * 1_000_000n);
    const swept = [];
    for (const c of charges)
      swept.push(
        await api.until(
          c.id,
          (x) => x.status === 'paid' && x.sweeps.length > 0 && x.sweeps.every((s: any) => s.status === 'confirmed'),
          'paid and swept',
          30_000,
        ),
      );
    const hash = swept[0].sweeps[0].tx_hash;
    expect(swept.map((c) => c.sweeps.map((s: any) => [s.token, s.amount, s.status, s.reason, s.tx_hash]))).toEqual([
      [
        ['ETH', '0.010000000000000000', 'confirmed', null, hash],
        ['TUSD', '5.000000000000000000', 'confirmed', null, hash],
      ],
      [['TUSD', '6.000000000000000000', 'confirmed', null, hash]],
      [['TUSD', '7.000000000000000000', 'confirmed', null, hash]],
    ]);

    // The chain: the addresses empty, codeless, never used; the main address holds it all, sent by one call.
    for (const c of charges) {
      expect([await erc20BalanceOf(chain.rpcUrl, usd, c.address), await balanceOf(chain, c.address)]).toEqual([0n, 0n]);
      expect([await code(c.address), await nonceOf(c.address)]).toEqual(['0x', 0]);
    }
    expect(await erc20BalanceOf(chain.rpcUrl, usd, wallet.address)).toBe(18_000_000n);
    const sent = await chain.rpc<{ from: string; to: string }>('eth_getTransactionByHash', [hash]);
    expect([getAddress(sent.from), getAddress(sent.to)]).toEqual([wallet.address, sweeperAddress()]);
    expect(await nonceOf(wallet.address)).toBe(1);
    const outgoing = (await t.request('GET', `/api/wallet/${wallet.id}/transaction`, { token: alice.token })).body.data.filter(
      (x: any) => x.type !== 'receipt',
    );
    expect(outgoing.map((x: any) => [x.type, x.tx_hash, x.amount])).toEqual([['contract', hash, ZERO]]);

    // The books: the batch's fee once, on the main address; each deposit address in and out.
    await chain.mine(1);
    await waitForCursor(t, networkId, await chain.blockNumber());
    const rec = await waitFor(
      async () => {
        const r = await t.request('GET', `/api/wallet/${wallet.id}/reconciliation`, { token: alice.token });
        return r.status === 200 ? r.body.data : null;
      },
      { message: 'reconciliation answered' },
    );
    // Every line agrees but the first address's ether, which came as another token than the
    // charge's: not a payment, so its way in is not recorded (docs/reconciliation.md), only its way
    // out. The main address agrees: the call's fee once, the tokens and the ether as its receipts.
    const differing = rec.addresses.flatMap((a: any) =>
      a.tokens.filter((x: any) => x.difference !== ZERO).map((x: any) => [a.address, x.token, x.difference]),
    );
    expect(differing).toEqual([[charges[0].address, 'ETH', '0.010000000000000000']]);
    const main = rec.addresses.find((a: any) => a.address === wallet.address);
    expect(main.tokens.map((x: any) => [x.token, x.difference])).toEqual([
      ['ETH', ZERO],
      ['TUSD', ZERO],
    ]);
  });

  it('a token that refuses one address fails it alone; a later batch sweeps it once the token lets go', async () => {
    const wallet = await fundedWallet('Refused');
    const usd = await deployPausable(chain.rpcUrl, { name: 'Pausable USD', symbol: 'PUSD', decimals: 6 });
    const token = pausableToken(chain.rpcUrl, usd);
    await addToken(wallet.id, usd);
    const api = chargeApi(t, wallet.id, alice.token);
    await clockToChain(clock, chain);
    const charges = [];
    for (let i = 0; i < 3; i++) charges.push(await api.create({ amount: '2', token: 'PUSD', expires: 600 }));
    await token.blacklist(charges[1].address, true);
    for (const c of charges) await token.mint(c.address, 2_000_000n);

    const settled = async (c: any) =>
      api.until(c.id, (x) => x.sweeps.length > 0 && x.sweeps.every((s: any) => s.status !== 'pending'), 'swept', 30_000);
    const [a, b, c] = [await settled(charges[0]), await settled(charges[1]), await settled(charges[2])];
    const batch = a.sweeps[0].tx_hash;
    expect([a, b, c].map((x) => x.sweeps.map((s: any) => [s.amount, s.status, s.reason, s.tx_hash]))).toEqual([
      [['2.000000000000000000', 'confirmed', null, batch]],
      [['2.000000000000000000', 'failed', 'refused', batch]],
      [['2.000000000000000000', 'confirmed', null, batch]],
    ]);
    expect(await erc20BalanceOf(chain.rpcUrl, usd, charges[1].address)).toBe(2_000_000n);
    expect(await erc20BalanceOf(chain.rpcUrl, usd, wallet.address)).toBe(4_000_000n);

    // Cleared; the refused address is looked at again after its wait (the test's clock moves on),
    // and swept by a batch of its own once the wait for a full batch is over too.
    await token.blacklist(charges[1].address, false);
    clock.advance(2 * 3_600_000);
    const again = await api.until(
      charges[1].id,
      (x) => x.sweeps.some((s: any) => s.status === 'confirmed'),
      'swept once the token let go',
      30_000,
    );
    const second = again.sweeps[1];
    expect([second.amount, second.status, second.reason]).toEqual(['2.000000000000000000', 'confirmed', null]);
    expect(second.tx_hash).not.toBe(batch);
    expect(await erc20BalanceOf(chain.rpcUrl, usd, charges[1].address)).toBe(0n);
    expect(await erc20BalanceOf(chain.rpcUrl, usd, wallet.address)).toBe(6_000_000n);
  });

  it('a batch removed by a reorg is sent again: each address swept once, its rows confirmed in the new chain', async () => {
    const { wallet, usd, api, charges } = await tokenCharges('Reorged', 'RUSD', '3', 3);
    for (const c of charges) await mintErc20(chain.rpcUrl, usd, c.address, 3_000_000n);
    const first = await api.until(
      charges[2].id,
      (x) => x.sweeps.length === 1 && x.sweeps[0].status === 'confirmed',
      'the batch confirmed',
      30_000,
    );
    const hash = first.sweeps[0].tx_hash as string;
    const mined = await chain.rpc<{ blockNumber: string }>('eth_getTransactionReceipt', [hash]);

    // Every block from the batch's on removed, its transaction with them (anvil drops it).
    const head = await chain.blockNumber();
    await waitForCursor(t, networkId, head);
    const seen = t.logs.filter((l) => l.includes('reorg: rolled back to the common ancestor')).length;
    await chain.rpc('anvil_reorg', [head - Number(BigInt(mined.blockNumber)) + 1, []]);
    expect(await chain.rpc('eth_getTransactionByHash', [hash])).toBeNull();
    expect(await erc20BalanceOf(chain.rpcUrl, usd, charges[0].address)).toBe(3_000_000n);
    await chain.mine(1);
    await waitFor(() => t.logs.filter((l) => l.includes('reorg: rolled back to the common ancestor')).length > seen, {
      timeoutMs: 15_000,
      message: 'the watcher saw the reorg',
    });

    // Sent again (the node no longer knows it) and confirmed anew; the test's clock moves the re-checks on.
    const again = await waitFor(
      async () => {
        clock.advance(5_000);
        const shown = await Promise.all(charges.map((c) => api.show(c.id)));
        if (!shown.every((x) => x.sweeps.length === 1 && x.sweeps[0].status === 'confirmed')) return null;
        const r = await chain.rpc<{ blockHash: string; blockNumber: string } | null>('eth_getTransactionReceipt', [
          shown[0].sweeps[0].tx_hash,
        ]);
        if (!r) return null;
        const b = await chain.rpc<{ hash: string }>('eth_getBlockByNumber', [r.blockNumber, false]);
        return b.hash === r.blockHash ? shown : null;
      },
      { timeoutMs: 40_000, intervalMs: 100, message: 'the batch confirmed in the new chain' },
    ).catch(async (e: Error) => {
      const rows = await t.store.db
        .selectFrom('charge_sweeps')
        .select(['charge_id', 'kind', 'status', 'error', 'tx_hash', 'transaction_id', 'block_number', 'live_key'])
        .where(
          'charge_id',
          'in',
          charges.map((c) => c.id),
        )
        .execute();
      const txs = await t.store.db
        .selectFrom('transactions')
        .select(['id', 'status', 'tx_hash', 'block_number', 'failure_reason'])
        .where('wallet_id', '=', wallet.id)
        .where('type', '=', 'contract')
        .execute();
      const log = t.logs.filter((l) => /batch|reorg|rolled|sweep|transaction (re)?sent|dropped/i.test(l)).slice(-40);
      throw new Error(`${e.message}: rows ${JSON.stringify(rows)} transactions ${JSON.stringify(txs)}\n${log.join('\n')}`);
    });
    expect(again.map((x) => x.sweeps.map((s: any) => [s.amount, s.status, s.tx_hash]))).toEqual(
      charges.map(() => [['3.000000000000000000', 'confirmed', hash]]),
    );
    for (const c of charges) expect(await erc20BalanceOf(chain.rpcUrl, usd, c.address)).toBe(0n);
    expect(await erc20BalanceOf(chain.rpcUrl, usd, wallet.address)).toBe(9_000_000n);
    expect(await nonceOf(wallet.address)).toBe(1);
  });

  it('sends no batch to a Sweeper without code (a reset devnet), and sweeps once it is back', async () => {
    const { wallet, usd, api, charges } = await tokenCharges('No code', 'CUSD', '1', 3);
    const code = await chain.rpc<string>('eth_getCode', [sweeperAddress(), 'latest']);
    await chain.rpc('anvil_setCode', [sweeperAddress(), '0x']);
    const refusedBefore = t.logs.filter((l) => l.includes('has no code at block')).length;
    try {
      for (const c of charges) await mintErc20(chain.rpcUrl, usd, c.address, 1_000_000n);
      for (const c of charges) await api.until(c.id, (x) => x.status === 'paid', 'paid');
      await waitFor(() => t.logs.filter((l) => l.includes('has no code at block')).length > refusedBefore, {
        message: 'the batch refused for the Sweeper without code',
      });
      expect(await nonceOf(wallet.address)).toBe(0);
      for (const c of charges) expect((await api.show(c.id)).sweeps).toEqual([]);
    } finally {
      await chain.rpc('anvil_setCode', [sweeperAddress(), code]);
    }
    const done = await waitFor(
      async () => {
        clock.advance(5_000);
        const shown = await Promise.all(charges.map((c) => api.show(c.id)));
        return shown.every((x) => x.sweeps.length === 1 && x.sweeps[0].status === 'confirmed') ? shown : null;
      },
      { timeoutMs: 30_000, intervalMs: 100, message: 'swept once the Sweeper is back' },
    );
    expect(new Set(done.map((x) => x.sweeps[0].tx_hash)).size).toBe(1);
    expect(await erc20BalanceOf(chain.rpcUrl, usd, wallet.address)).toBe(3_000_000n);
    expect(await nonceOf(wallet.address)).toBe(1);
  });

  it('reconciliation names a keyless address left holding money with nothing due: not dust, it pays no fee of its own', async () => {
    const { wallet, usd, api, charges } = await tokenCharges('Left', 'LUSD', '2', 1);
    const c = charges[0];
    await mintErc20(chain.rpcUrl, usd, c.address, 2_000_000n);
    await pay(chain.rpcUrl, c.address, 10n ** 13n);
    await api.until(c.id, (x) => x.status === 'paid', 'paid');
    // One address of three due waits for its batch; a lost schedule leaves it with nothing due.
    await t.store.db.updateTable('charges').set({ sweep_due_at: null }).where('id', '=', c.id).execute();
    await chain.mine(1);
    await waitForCursor(t, networkId, await chain.blockNumber());
    const r = (await t.request('GET', `/api/wallet/${wallet.id}/reconciliation`, { token: alice.token })).body.data;
    const reason = 'not swept: the Sweeper call left it there (refused, or its batch failed)';
    expect(r.unswept).toEqual([
      { address: c.address, charge_id: c.id, token: 'ETH', amount: '0.000010000000000000', reason },
      { address: c.address, charge_id: c.id, token: 'LUSD', amount: '2.000000000000000000', reason },
    ]);
    expect(r.ok).toBe(false);
  });
});
