/** Shared by the policy tests: the routes through HTTP, and the outcome of many creates at once. */
import { expect } from 'vitest';
import type { ApiResponse, TestApp, TestUser } from '../helpers/app.js';
import type { TestChain } from '../helpers/chain.js';
import { waitFor } from '../helpers/wait.js';
import { ETH, publicClient, RECIPIENT, type FundedWallet } from '../helpers/transfers.js';

export function policyApi(t: TestApp, walletId: number, token: string) {
  const base = `/api/wallet/${walletId}`;
  return {
    policy: () => t.request('GET', `${base}/policy`, { token }),
    setPolicy: (body: Record<string, unknown>) => t.request('POST', `${base}/policy`, { token, body }),
    allowlist: () => t.request('GET', `${base}/allowlist`, { token }),
    add: (body: Record<string, unknown>) => t.request('POST', `${base}/allowlist/add`, { token, body }),
    remove: (entry: number | string) => t.request('POST', `${base}/allowlist/${entry}/remove`, { token, body: {} }),
    create: (body: Record<string, unknown>) => t.request('POST', `${base}/transaction/create`, { token, body }),
  };
}

export const refusal = (message: string) => ({ status: 'error', message, data: null });

/** 20 creates of 0.1 ETH at once to RECIPIENT, spread over the given service instances. */
export function race20(apps: TestApp[], user: TestUser, walletId: number): Promise<ApiResponse[]> {
  const body = { amount: '0.1', token: 'ETH', address: RECIPIENT };
  return Promise.all(
    Array.from({ length: 20 }, (_, i) =>
      apps[i % apps.length]!.request('POST', `/api/wallet/${walletId}/transaction/create`, { token: user.token, body }),
    ),
  );
}

/** Exactly 5 of 20 accepted (daily 0.5 ETH), 15 refused with the daily message; the chain shows 5 × 0.1 ETH to RECIPIENT. */
export async function expectFiveUnderDaily(
  chain: TestChain,
  w: FundedWallet,
  results: ApiResponse[],
  recipientBefore: bigint,
): Promise<void> {
  const accepted = results.filter((r) => r.status === 200);
  const refused = results.filter((r) => r.status !== 200);
  expect(accepted).toHaveLength(5);
  for (const r of refused) expect([r.status, r.body]).toEqual([400, refusal('Policy: over the daily limit')]);
  expect(accepted.map((r) => r.body.data.nonce).sort()).toEqual([0, 1, 2, 3, 4]);
  const client = publicClient(chain.rpcUrl);
  await waitFor(async () => (await client.getTransactionCount({ address: w.address })) === 5, { timeoutMs: 20_000, message: 'five mined' });
  for (const r of accepted) {
    const receipt = await client.getTransactionReceipt({ hash: r.body.data.tx_hash });
    const tx = await client.getTransaction({ hash: r.body.data.tx_hash });
    expect([receipt.status, tx.to?.toLowerCase(), tx.value]).toEqual(['success', RECIPIENT.toLowerCase(), ETH / 10n]);
  }
  expect(await client.getBalance({ address: RECIPIENT })).toBe(recipientBefore + ETH / 2n);
}
