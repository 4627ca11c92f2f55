/**
 * More open charges than a block's log query can filter on (MAX_TOPIC_ADDRESSES, 500): the chain
 * follower no longer reads every watched deposit address for each block (100,000 open charges
 * cost ~230 ms and a quarter GiB a block that way: BENCHMARKS.md, issue 23) but looks up the
 * block's own recipients by address. Every kind of payment is still found exactly:
 * - a native transfer, an ERC-20 transfer with 6 decimals, and native coin forwarded by a
 *   contract (an internal transfer) pay their charges;
 * - a deposit address stored in lowercase (as the bench's seed writes them) is found from the
 *   block's checksummed or lowercase form;
 * - money to an address no charge watches, and a transfer of a token the wallet does not hold,
 *   are not payments.
 * Fails when the lookup by address finds nothing (no charge is paid).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { getAddress, parseEther, type Address } from 'viem';
import { startTestApp, type TestApp, type TestUser } from '../helpers/app.js';
import { startTestChain, type TestChain } from '../helpers/chain.js';
import { deployErc20, deployForwarder, forwardValue, mintErc20 } from '../helpers/erc20.js';
import { waitFor } from '../helpers/wait.js';
import { waitForCursor } from '../helpers/transfers.js';
import { chargeApi, pay } from './support.js';
import { MAX_TOPIC_ADDRESSES } from '../../src/chain/blocks.js';
import { listWatchedDeposits } from '../../src/modules/charges/charges.payments.repository.js';

const FILLERS = MAX_TOPIC_ADDRESSES + 100;

/** A deposit address of filler charge `i`, lowercase, with letters (so its checksummed form differs). */
function fillerAddress(i: number): string {
  return `0x${'ab'.repeat(10)}${(0xc0000000 + i).toString(16).padStart(20, '0')}`.toLowerCase();
}

function fillerUuid(i: number): string {
  return `filler-${String(i).padStart(6, '0')}`;
}

describe('more watched deposit addresses than a log query filters on', () => {
  let chain: TestChain;
  let t: TestApp;
  let user: TestUser;
  let wallet: { id: number; address: string };
  let networkId: number;
  let api: ReturnType<typeof chargeApi>;

  beforeAll(async () => {
    chain = await startTestChain();
    t = await startTestApp({ env: { CHARGES_POLL_MS: '50', WATCHER_POLL_MS: '50' } });
    networkId = await chain.register(t, { confirmations: 1 });
    user = await t.createUser();
    wallet = (await t.request('POST', '/api/wallet/create', { token: user.token, body: { name: 'Shop', network_id: networkId } })).body
      .data;
    api = chargeApi(t, wallet.id, user.token);

    // FILLERS open charges of 1 ETH each, written straight to the database (their keys are never used).
    const now = Date.now();
    const far = now + 86_400_000;
    const eth = await t.store.db
      .selectFrom('wallet_tokens')
      .select('id')
      .where('wallet_id', '=', wallet.id)
      .where('is_native', '=', 1)
      .executeTakeFirstOrThrow();
    for (let from = 0; from < FILLERS; from += 100) {
      const idx = Array.from({ length: Math.min(100, FILLERS - from) }, (_, k) => from + k);
      const subs = await t.store.db
        .insertInto('sub_wallets')
        .values(
          idx.map((i) => ({
            wallet_id: wallet.id,
            derivation_index: 1_000_000 + i,
            address: fillerAddress(i),
            private_key_enc: 'never-decrypted',
            created_at: now,
          })),
        )
        .returning('id')
        .execute();
      await t.store.db
        .insertInto('charges')
        .values(
          subs.map((s, k) => ({
            uuid: fillerUuid(idx[k]!),
            wallet_id: wallet.id,
            sub_wallet_id: s.id,
            token_id: eth.id,
            amount: parseEther('1').toString(),
            paid_amount: '0',
            status: 'pending',
            mode: 'exact',
            expires: 86_400,
            expires_at: far,
            created_at: now,
            updated_at: now,
            watch_until: far,
          })),
        )
        .execute();
    }
    t.startWorkers();
    await waitForCursor(t, networkId);
  });
  afterAll(async () => {
    await t?.close();
    await chain?.stop();
  });

  it('finds native, ERC-20 and internal payments by looking up the block’s recipients', { timeout: 60_000 }, async () => {
    const usdc = await deployErc20(chain.rpcUrl, { name: 'USD Coin', symbol: 'USDC', decimals: 6 });
    const stranger = await deployErc20(chain.rpcUrl, { name: 'Not Held', symbol: 'NOPE', decimals: 18 });
    expect((await t.request('POST', `/api/wallet/${wallet.id}/token/add`, { token: user.token, body: { contract: usdc } })).status).toBe(
      200,
    );
    const forwarder = await deployForwarder(chain.rpcUrl);

    const native = await api.create({ amount: '0.3', token: 'ETH', expires: 600 });
    const token = await api.create({ amount: '12.345678', token: 'USDC', expires: 600 });
    const internal = await api.create({ amount: '0.2', token: 'ETH', expires: 600 });
    const untouched = await api.create({ amount: '0.1', token: 'ETH', expires: 600 });
    const block = Number(await chain.blockNumber());
    const watched = await listWatchedDeposits(t.store.db, networkId, Date.now(), MAX_TOPIC_ADDRESSES + 1);
    expect(watched).toHaveLength(MAX_TOPIC_ADDRESSES + 1);

    const nativeHash = await pay(chain.rpcUrl, native.address, parseEther('0.3'));
    const tokenHash = await mintErc20(chain.rpcUrl, usdc, token.address as Address, 12_345_678n);
    const internalHash = await forwardValue(chain.rpcUrl, forwarder, internal.address as Address, parseEther('0.2'));
    // A filler's lowercase address, paid part of its amount, through the checksummed form.
    await pay(chain.rpcUrl, getAddress(fillerAddress(7)), parseEther('0.25'));
    // Not payments: a token the wallet does not hold, to a watched address; coin to an address nobody watches.
    await mintErc20(chain.rpcUrl, stranger, untouched.address as Address, 5n);
    await pay(chain.rpcUrl, getAddress(fillerAddress(FILLERS + 5)), parseEther('0.5'));

    const paidNative = await api.until(native.id, (c) => c.status === 'paid', 'native charge paid', 30_000);
    expect(paidNative.payments).toMatchObject([{ tx_hash: nativeHash, amount: '0.300000000000000000', internal: false }]);
    const paidToken = await api.until(token.id, (c) => c.status === 'paid', 'token charge paid', 30_000);
    expect(paidToken.payments).toMatchObject([{ tx_hash: tokenHash, amount: '12.345678000000000000', internal: false }]);
    const paidInternal = await api.until(internal.id, (c) => c.status === 'paid', 'internal payment', 30_000);
    expect(paidInternal.payments).toMatchObject([
      { tx_hash: internalHash, from: getAddress(forwarder), amount: '0.200000000000000000', internal: true },
    ]);

    const head = Number(await chain.blockNumber());
    await waitForCursor(t, networkId, head);
    const filler = await waitFor(
      async () => {
        const r = await t.store.db
          .selectFrom('charge_payments as p')
          .innerJoin('charges as c', 'c.id', 'p.charge_id')
          .select(['c.uuid', 'p.amount'])
          .where('c.uuid', 'like', 'filler-%')
          .execute();
        return r.length > 0 ? r : null;
      },
      { message: 'the filler’s payment recorded' },
    );
    expect(filler.map((r) => ({ uuid: r.uuid, amount: String(r.amount) }))).toEqual([
      { uuid: fillerUuid(7), amount: parseEther('0.25').toString() },
    ]);
    expect((await api.show(untouched.id)).payments).toEqual([]);
    const recorded = await t.store.db
      .selectFrom('charge_payments')
      .select((eb) => eb.fn.countAll<string>().as('n'))
      .where('block_number', '>', block)
      .executeTakeFirstOrThrow();
    expect(Number(recorded.n)).toBe(4);
  });
});
