/** The double-spend race shared by the one-service and the two-instance tests. */
import { expect } from 'vitest';
import type { ApiResponse, TestApp, TestUser } from '../helpers/app.js';
import type { TestChain } from '../helpers/chain.js';
import { waitFor } from '../helpers/wait.js';
import { ETH, publicClient, RECIPIENT, txRows, type FundedWallet } from '../helpers/transfers.js';

/** 5 × 1 ETH plus their fees fit; a sixth does not. */
export const START = 5n * ETH + ETH / 2n;

/** 20 creates of 1 ETH at once, spread over the given service instances. */
export async function race(apps: TestApp[], user: TestUser, w: FundedWallet): Promise<ApiResponse[]> {
  const body = { amount: '1', token: 'ETH', address: RECIPIENT };
  return Promise.all(
    Array.from({ length: 20 }, (_, i) =>
      apps[i % apps.length]!.request('POST', `/api/wallet/${w.id}/transaction/create`, { token: user.token, body }),
    ),
  );
}

export async function expectExactlyFive(app: TestApp, chain: TestChain, w: FundedWallet, results: ApiResponse[]): Promise<void> {
  const accepted = results.filter((r) => r.status === 200);
  const refused = results.filter((r) => r.status !== 200);
  expect(accepted).toHaveLength(5);
  expect(refused).toHaveLength(15);
  for (const r of refused) expect(r.body).toEqual({ status: 'error', message: 'Insufficient balance for transaction', data: null });
  expect(accepted.map((r) => r.body.data.nonce).sort()).toEqual([0, 1, 2, 3, 4]);

  // All five mined and confirmed; the chain shows exactly five transactions from the wallet.
  const rows = await waitFor(
    async () => {
      const r = await txRows(app, w.id);
      return r.filter((x) => x.type === 'transfer').length === 5 && r.every((x) => x.status === 'confirmed') ? r : null;
    },
    { timeoutMs: 30_000 },
  );
  const client = publicClient(chain.rpcUrl);
  expect(await client.getTransactionCount({ address: w.address })).toBe(5);
  const fees = rows.reduce((s, r) => s + BigInt(r.gas_used!) * BigInt(r.gas_price!), 0n);
  expect(await client.getBalance({ address: w.address })).toBe(START - 5n * ETH - fees);
}
