/**
 * The simulation's several-provider invariants on made-up observations (no chain, no service):
 * each finds what it is meant to find, and nothing in a consistent picture.
 */
import { describe, expect, it } from 'vitest';
import type { ChainTx, Observed } from '../../sim/checks.js';
import { checkNonceGap, checkRefusals, type ChainView } from '../../sim/refusals.js';
import type { Refusal, Workload } from '../../sim/workload.js';

const MAIN = '0x00000000000000000000000000000000000000aa';
const PAYEE = '0x00000000000000000000000000000000000000b1';
const w = { id: 1, address: MAIN as `0x${string}` };
const h = (n: number) => `0x${n.toString(16).padStart(64, '0')}`;
const row = (id: number, nonce: number | null, status: string, extra: Record<string, unknown> = {}) => ({
  id,
  wallet_id: 1,
  type: 'transfer',
  amount: '1',
  symbol: 'ETH',
  nonce,
  status,
  failure_reason: null,
  tx_hash: null,
  replaced_hashes: [],
  ...extra,
});
const observed = (txs: any[]): Observed => ({ wallets: [{ w, shown: {}, txs, charges: [], payouts: [], deposits: [] }], events: [] });
const chain = (txs: Array<[string, Partial<ChainTx>]>, status = '0x1'): ChainView => ({
  txs: new Map(txs.map(([hash, t]) => [hash, { from: MAIN, to: PAYEE, value: 1n, block: 10, input: '0x', nonce: 0, ...t }])),
  tokenMoves: [],
  receipt: async () => ({ status, blockNumber: '0xa', blockHash: h(99), from: MAIN, to: PAYEE, logs: [] }) as never,
});
const work = (refusals: Refusal[]): Workload => ({ refusals, replacements: [], accepted: [] }) as unknown as Workload;

describe('no nonce gap', () => {
  it('names the nonce nothing will fill and the transfers behind it', () => {
    const v = checkNonceGap(
      w,
      [row(1, 5, 'failed', { failure_reason: 'rejected', tx_hash: h(1) }), row(2, 6, 'pending'), row(3, 7, 'pending')],
      5,
    );
    expect(v).toHaveLength(1);
    expect(v[0]!.detail).toMatch(
      /next nonce is 5, held by transaction 1 failed rejected .*2 pending transfer\(s\) wait behind it.*2@6, 3@7/,
    );
  });

  it('is quiet when the next nonce is pending, or nothing waits', () => {
    expect(checkNonceGap(w, [row(1, 5, 'pending'), row(2, 6, 'pending')], 5)).toEqual([]);
    expect(checkNonceGap(w, [row(1, 4, 'confirmed')], 5)).toEqual([]);
  });
});

describe('no refusal for what mined', () => {
  it('finds a refused create whose recipient the wallet paid on chain', async () => {
    const refusal: Refusal = {
      what: 'transfer-native',
      walletId: 1,
      key: 'k1',
      status: 400,
      message: 'The blockchain node rejected the transaction: nonce too low',
      to: [PAYEE],
    };
    const v = await checkRefusals(observed([]), work([refusal]), chain([[h(7), {}]]));
    expect(v.map((x) => x.check)).toContain('no refusal for what mined');
    expect(v.find((x) => x.check === 'no refusal for what mined')!.detail).toMatch(/answered 400 .*nonce too low.*paying 0x0+b1/);
  });

  it('finds a refused speed-up whose forgotten version mined, and a mined hash whose row failed', async () => {
    const t = row(2, 3, 'failed', { failure_reason: 'rejected', tx_hash: h(8) });
    const refusal: Refusal = {
      what: 'speed-up',
      walletId: 1,
      key: 'k2',
      status: 400,
      message: 'The blockchain node rejected the transaction: replacement transaction underpriced',
      txId: 2,
      replace: 'speed-up',
    };
    const forgotten = await checkRefusals(
      observed([t]),
      work([refusal]),
      chain([[h(9), { nonce: 3, to: '0x00000000000000000000000000000000000000c1' }]]),
    );
    expect(forgotten.map((x) => x.detail).join('\n')).toMatch(/mined 0x0+9 .* at its nonce 3, a version the transaction does not list/);
    const failedMined = await checkRefusals(observed([t]), work([]), chain([[h(8), { nonce: 3 }]]));
    expect(failedMined).toEqual([
      expect.objectContaining({
        check: 'mined is confirmed',
        detail: expect.stringMatching(/mined \(status 0x1.*but the transaction is failed rejected/),
      }),
    ]);
  });

  it('is quiet when the refused request sent nothing and each mined transaction is its confirmed row', async () => {
    const refusal: Refusal = {
      what: 'transfer-native',
      walletId: 1,
      key: 'k3',
      status: 400,
      message: 'Insufficient balance for transaction',
      to: ['0x00000000000000000000000000000000000000d1'],
    };
    expect(await checkRefusals(observed([row(3, 0, 'confirmed', { tx_hash: h(5) })]), work([refusal]), chain([[h(5), {}]]))).toEqual([]);
  });
});
