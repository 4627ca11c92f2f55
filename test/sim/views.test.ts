/** The fault proxy's view behind the head (sim/views.ts): every read at its own height, null for what it has not seen. */
import { describe, expect, it } from 'vitest';
import { behindPlan } from '../../sim/views.js';

const V = 10;
const heightOf = async (hash: string) => (hash === '0xnew' ? 12 : 9);
const plan = (method: string, params: unknown[]) => behindPlan({ jsonrpc: '2.0', id: 1, method, params }, V, heightOf);

describe('a view behind the head', () => {
  it('answers its own height and reads state at it', async () => {
    expect((await plan('eth_blockNumber', [])).answer?.result).toBe('0xa');
    expect((await plan('eth_getBalance', ['0xabc', 'latest'])).forward?.params).toEqual(['0xabc', '0xa']);
    expect((await plan('eth_getTransactionCount', ['0xabc', 'pending'])).forward?.params).toEqual(['0xabc', '0xa']);
    expect((await plan('eth_estimateGas', [{ to: '0xabc' }])).forward?.params).toEqual([{ to: '0xabc' }, '0xa']);
    expect((await plan('eth_call', [{ to: '0xabc' }, '0xb'])).answer?.error?.message).toBe('header not found');
    expect((await plan('eth_call', [{ to: '0xabc' }, '0x9'])).forward?.params).toEqual([{ to: '0xabc' }, '0x9']);
  });

  it('has not seen a block, a receipt or a transaction above it', async () => {
    expect((await plan('eth_getBlockByNumber', ['0xb', false])).answer?.result).toBeNull();
    expect((await plan('eth_getBlockByNumber', ['latest', true])).forward?.params).toEqual(['0xa', true]);
    const receipt = await plan('eth_getTransactionReceipt', ['0xh']);
    expect(receipt.post!({ jsonrpc: '2.0', id: 1, result: { blockNumber: '0xb' } }).result).toBeNull();
    expect(receipt.post!({ jsonrpc: '2.0', id: 1, result: { blockNumber: '0xa' } }).result).toEqual({ blockNumber: '0xa' });
    const pending = await plan('eth_getTransactionByHash', ['0xh']);
    expect(pending.post!({ jsonrpc: '2.0', id: 1, result: { blockNumber: null } }).result).toEqual({ blockNumber: null });
    expect((await plan('debug_traceBlockByHash', ['0xnew', {}])).answer?.error?.message).toMatch(/not found/);
    expect((await plan('debug_traceBlockByHash', ['0xold', {}])).forward).toBeDefined();
  });

  it('clamps logs to its height, and has none from above it', async () => {
    const p = await plan('eth_getLogs', [{ fromBlock: '0x5', toBlock: 'latest' }]);
    expect(p.forward?.params).toEqual([{ fromBlock: '0x5', toBlock: '0xa' }]);
    expect(p.post!({ jsonrpc: '2.0', id: 1, result: [{ blockNumber: '0xa' }, { blockNumber: '0xb' }] }).result).toEqual([
      { blockNumber: '0xa' },
    ]);
    expect((await plan('eth_getLogs', [{ fromBlock: '0xb', toBlock: '0xc' }])).answer?.error?.message).toBe('header not found');
    expect((await plan('eth_getLogs', [{ blockHash: '0xnew' }])).answer?.error?.message).toBe('unknown block');
  });
});
