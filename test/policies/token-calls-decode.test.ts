/**
 * The token-call decoder (src/modules/policies/token-calls.ts) on every call it reads, and on
 * what it must not read as a token call: what the policy counts and what the wallet's balance
 * gives up for each.
 */
import { describe, expect, it } from 'vitest';
import { encodeFunctionData, getAddress, maxUint256, parseAbi, type Address } from 'viem';
import { decodeTokenCall } from '../../src/modules/policies/token-calls.js';

const ABI = parseAbi([
  'function transfer(address to, uint256 amount) returns (bool)',
  'function transferFrom(address from, address to, uint256 amount) returns (bool)',
  'function approve(address spender, uint256 amount) returns (bool)',
  'function increaseAllowance(address spender, uint256 addedValue) returns (bool)',
  'function permit(address owner, address spender, uint256 value, uint256 deadline, uint8 v, bytes32 r, bytes32 s)',
  'function mint(address to, uint256 amount)',
]);
const TOKEN: Address = getAddress('0x5fbdb2315678afecb367f032d93f642f64180aa3');
const OTHER_CONTRACT: Address = getAddress('0xe7f1725e7734ce288f8367e1bb143e90bb3f0512');
const WALLET: Address = getAddress('0x23ad571d5e63319bff9ee13692bf5f135956b78c');
const TO: Address = getAddress('0xa0ee7a142d267c1f36714e4a8f75612f20a79720');
const SOMEONE: Address = getAddress('0x1111111111111111111111111111111111111111');
const tokens = [
  { id: 1, contract: '0x0000000000000000000000000000000000000000', is_native: 1 },
  { id: 7, contract: TOKEN.toLowerCase(), is_native: 0 },
];
const ZERO32 = `0x${'00'.repeat(32)}` as const;

describe('decodeTokenCall', () => {
  it('reads transfer, transferFrom, approve, increaseAllowance and permit as that token', () => {
    const d = (data: `0x${string}`) => decodeTokenCall(tokens, WALLET, TOKEN, data);
    expect(d(encodeFunctionData({ abi: ABI, functionName: 'transfer', args: [TO, 5n] }))).toEqual({
      kind: 'transfer',
      tokenId: 7,
      contract: TOKEN,
      to: TO,
      amount: 5n,
      spend: 5n,
    });
    expect(d(encodeFunctionData({ abi: ABI, functionName: 'transferFrom', args: [WALLET, TO, 6n] }))).toEqual({
      kind: 'transferFrom',
      tokenId: 7,
      contract: TOKEN,
      to: TO,
      amount: 6n,
      spend: 6n,
    });
    // Another's allowance: counted, but nothing leaves the wallet's own balance.
    expect(d(encodeFunctionData({ abi: ABI, functionName: 'transferFrom', args: [SOMEONE, TO, 6n] }))).toMatchObject({
      amount: 6n,
      spend: 0n,
      to: TO,
    });
    expect(d(encodeFunctionData({ abi: ABI, functionName: 'approve', args: [TO, maxUint256] }))).toEqual({
      kind: 'approve',
      tokenId: 7,
      contract: TOKEN,
      to: TO,
      amount: maxUint256,
      spend: 0n,
    });
    expect(d(encodeFunctionData({ abi: ABI, functionName: 'increaseAllowance', args: [TO, 9n] }))).toMatchObject({
      kind: 'increaseAllowance',
      to: TO,
      amount: 9n,
      spend: 0n,
    });
    expect(d(encodeFunctionData({ abi: ABI, functionName: 'permit', args: [WALLET, TO, 11n, 0n, 27, ZERO32, ZERO32] }))).toMatchObject({
      kind: 'permit',
      to: TO,
      amount: 11n,
      spend: 0n,
    });
  });

  it('is none for another contract, another function, or calldata that does not decode', () => {
    const transfer = encodeFunctionData({ abi: ABI, functionName: 'transfer', args: [TO, 5n] });
    expect(decodeTokenCall(tokens, WALLET, OTHER_CONTRACT, transfer)).toBeNull();
    expect(decodeTokenCall(tokens, WALLET, TOKEN, encodeFunctionData({ abi: ABI, functionName: 'mint', args: [TO, 5n] }))).toBeNull();
    // The transfer selector with its amount cut off.
    expect(decodeTokenCall(tokens, WALLET, TOKEN, transfer.slice(0, 10 + 64) as `0x${string}`)).toBeNull();
    expect(decodeTokenCall(tokens, WALLET, TOKEN, '0x')).toBeNull();
  });
});
