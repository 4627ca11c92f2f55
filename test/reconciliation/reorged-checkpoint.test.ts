/**
 * A reorg deeper than the network's confirmations below a reconciliation checkpoint. An `ok`
 * answer moved the checkpoint to the confirmed height with the balance the chain had there,
 * a receipt included; the reorg takes that receipt out of the blocks below the checkpoint and the
 * new chain mines it again above it. The checkpoint's balance was the old chain's: counted from
 * it, the receipt was in the balance and again in the records after it (the wallet showed one
 * receipt more than the chain). The rollback moves the checkpoint back to the common ancestor and
 * the next answer reads the balance there, on the chain as it now is: ok.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createWalletClient, http, parseEther, type Address, type Hex } from 'viem';
import { foundry } from 'viem/chains';
import { startTestApp, type TestApp, type TestUser } from '../helpers/app.js';
import { startTestChain, type TestChain } from '../helpers/chain.js';
import { waitFor } from '../helpers/wait.js';
import { waitForCursor } from '../helpers/transfers.js';
import { PAYER } from '../charges/support.js';

describe('a reconciliation checkpoint under a reorg deeper than the confirmations', () => {
  let chain: TestChain;
  let t: TestApp;
  let alice: TestUser;
  let networkId: number;

  beforeAll(async () => {
    chain = await startTestChain();
    t = await startTestApp({ env: { WATCHER_POLL_MS: '50' } });
    networkId = await chain.register(t);
    alice = await t.createUser();
    t.startWorkers();
    await waitForCursor(t, networkId);
  });
  afterAll(async () => {
    await t?.close();
    await chain?.stop();
  });

  const reconcile = async (walletId: number) => {
    const r = await t.request('GET', `/api/wallet/${walletId}/reconciliation`, { token: alice.token });
    expect(r.status, r.text).toBe(200);
    return r.body.data as { ok: boolean; block_number: number; addresses: Array<{ kind: string; tokens: Array<{ difference: string }> }> };
  };

  it('is moved back to the common ancestor by the rollback, and the receipt mined again above it counts once', async () => {
    const wallet = (await t.request('POST', '/api/wallet/create', { token: alice.token, body: { name: 'Shop', network_id: networkId } }))
      .body.data as { id: number; address: Address };
    const before = await chain.rpc<Hex>('evm_snapshot');
    const payer = createWalletClient({ account: PAYER, chain: foundry, transport: http(chain.rpcUrl) });
    const raw = await payer.signTransaction(await payer.prepareTransactionRequest({ to: wallet.address, value: parseEther('0.7') }));
    await chain.rpc('eth_sendRawTransaction', [raw]);
    await chain.mine(2);
    const oldHead = await chain.blockNumber();
    await waitForCursor(t, networkId, oldHead);
    const first = await reconcile(wallet.id);
    expect(first.ok).toBe(true);
    expect(first.block_number).toBe(oldHead);

    // The new chain: the receipt's block and the checkpoint's are gone; it is mined again above the old head.
    expect(await chain.rpc('evm_revert', [before])).toBe(true);
    await chain.mine(oldHead - (await chain.blockNumber()) + 1);
    await chain.rpc('eth_sendRawTransaction', [raw]);
    await chain.mine(1);
    await waitFor(() => t.logs.some((l) => l.includes('reorg: rolled back to the common ancestor')), {
      message: 'the follower rolled back',
    });
    await waitForCursor(t, networkId, await chain.blockNumber());
    await waitFor(
      async () => {
        const r = await t.request('GET', `/api/wallet/${wallet.id}/transaction?type=receipt`, { token: alice.token });
        return r.body.data.some((x: { status: string; block_number: number }) => x.status === 'confirmed' && x.block_number > oldHead)
          ? true
          : null;
      },
      { message: 'the receipt confirmed again above the old checkpoint' },
    );

    const after = await reconcile(wallet.id);
    expect(after.addresses[0]!.tokens.map((x) => x.difference)).toEqual(['0.000000000000000000']);
    expect(after.ok).toBe(true);
  }, 60_000);
});
