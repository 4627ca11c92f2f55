/**
 * A transfer whose first send never reached the node (a JSON-RPC proxy cuts every
 * eth_sendRawTransaction) and whose fees the chain then outgrew (anvil_setNextBlockBaseFeePerGas
 * 100× and a block): the watcher's re-send is refused by the real node ("max fee per gas less
 * than block base fee"), and a second transfer of the wallet waits behind its nonce. The watcher
 * signs the same transfer again at the same nonce with current fees (recorded as a speed-up),
 * both transfers confirm, and the recipient is paid exactly once each: to the wei.
 */
import type { Address, Hex } from 'viem';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waitFor } from '../helpers/wait.js';
import { ETH, eventsOf, fundedWallet, publicClient, startProxiedSuite, waitForStatus } from '../helpers/transfers.js';

let suite: Awaited<ReturnType<typeof startProxiedSuite>>;

beforeAll(async () => {
  suite = await startProxiedSuite();
});

afterAll(async () => {
  await suite?.close();
});

describe('a re-send refused for its fees', () => {
  it('is signed again at its nonce with current fees; it and the transfer queued behind it confirm, the recipient paid once', async () => {
    const { t, chain, proxy, networkId, user } = suite;
    const client = publicClient(chain.rpcUrl);
    const w = await fundedWallet(t, chain, user, networkId, 10n * ETH);
    const to: Address = privateKeyToAccount(generatePrivateKey()).address;
    const create = (amount: string) =>
      t.request('POST', `/api/wallet/${w.id}/transaction/create`, { token: user.token, body: { amount, token: 'ETH', address: to } });

    // The first send never reaches the node.
    proxy.drop('eth_sendRawTransaction');
    const first = await create('1');
    expect(first.status, first.text).toBe(200);
    expect(first.body.data).toMatchObject({ status: 'pending', nonce: 0 });
    const original = first.body.data.tx_hash as Hex;
    expect(await chain.rpc('eth_getTransactionByHash', [original])).toBeNull();
    const originalMaxFee = BigInt(
      (await t.store.db.selectFrom('transactions').select('gas_price').where('id', '=', first.body.data.id).executeTakeFirstOrThrow())
        .gas_price!,
    );

    // The fees rise far above what it was signed with.
    const base = (await client.getBlock()).baseFeePerGas!;
    await chain.rpc('anvil_setNextBlockBaseFeePerGas', [`0x${(base * 100n).toString(16)}`]);
    await chain.mine(1);
    expect((await client.getBlock()).baseFeePerGas! > originalMaxFee * 10n).toBe(true);

    // A second transfer, priced at the new fees, takes the next nonce (also unsent for now).
    const second = await create('0.5');
    expect(second.status, second.text).toBe(200);
    expect(second.body.data).toMatchObject({ status: 'pending', nonce: 1 });

    // The node is reachable again: the original's re-send is refused for its fees.
    proxy.allow('eth_sendRawTransaction');
    const done1 = await waitForStatus(t, user, w.id, first.body.data.id, 'confirmed', 30_000);
    const done2 = await waitForStatus(t, user, w.id, second.body.data.id, 'confirmed', 30_000);
    expect(t.logs.some((l) => l.includes('re-broadcast refused for its fees'))).toBe(true);

    // The same transfer at the same nonce, a new version (a speed-up) with current fees.
    expect(done1).toMatchObject({ nonce: 0, amount: '1.000000000000000000', replaced_hashes: [original], failure_reason: null });
    expect(done1.tx_hash).not.toBe(original);
    const mined = await client.getTransaction({ hash: done1.tx_hash as Hex });
    expect(mined).toMatchObject({ nonce: 0, to: to.toLowerCase(), value: ETH });
    expect(mined.maxFeePerGas! > originalMaxFee).toBe(true);
    const versions = await t.store.db
      .selectFrom('transaction_broadcasts')
      .select(['tx_hash', 'kind'])
      .where('transaction_id', '=', first.body.data.id)
      .orderBy('id', 'asc')
      .execute();
    expect(versions).toEqual([
      { tx_hash: original, kind: 'original' },
      { tx_hash: done1.tx_hash, kind: 'speed-up' },
    ]);
    expect(await chain.rpc('eth_getTransactionByHash', [original])).toBeNull();
    // The second may have been quoted from the fee market read before the rise (reused up to 1 s):
    // then it is refused and signed again the same way. Either way one version of it mined.
    expect(done2.nonce).toBe(1);
    expect([...done2.replaced_hashes, done2.tx_hash].slice(0, 1)).toEqual([second.body.data.tx_hash]);
    expect(await client.getTransaction({ hash: done2.tx_hash as Hex })).toMatchObject({ nonce: 1, to: to.toLowerCase(), value: ETH / 2n });

    // Paid exactly once each; two nonces used; the wallet's balance is exact to the wei.
    expect(await client.getBalance({ address: to })).toBe(ETH + ETH / 2n);
    expect(await client.getTransactionCount({ address: w.address })).toBe(2);
    const fee = async (hash: string) => {
      const r = await client.getTransactionReceipt({ hash: hash as Hex });
      return r.gasUsed * r.effectiveGasPrice;
    };
    const expected = 10n * ETH - ETH - ETH / 2n - (await fee(done1.tx_hash)) - (await fee(done2.tx_hash));
    expect(await client.getBalance({ address: w.address })).toBe(expected);
    const confirmed = (await eventsOf(t, w.id, 'transaction.confirmed')).map((e) => e.payload.transaction_id);
    expect(confirmed.sort()).toEqual([first.body.data.id, second.body.data.id].sort());
    await waitFor(async () => {
      const r = await t.request('GET', `/api/wallet/${w.id}/balance`, { token: user.token });
      return r.body.data.balance === `${expected / ETH}.${(expected % ETH).toString().padStart(18, '0')}`;
    });
  });
});
