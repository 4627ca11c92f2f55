/**
 * The OP-stack L1 data fee: with code at the GasPriceOracle predeploy (here a stub whose every
 * call returns 0.001 ETH), the fee preview and the reservation include it (with 25% headroom).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp, type TestUser } from '../helpers/app.js';
import { startTestChain, type TestChain } from '../helpers/chain.js';
import { GAS_PRICE_ORACLE } from '../../src/chain/fees.js';
import { dec18, ETH, fundedWallet, highMaxFeePerGas, RECIPIENT, waitForCursor } from '../helpers/transfers.js';

/** Runtime code: PUSH7 1e15, PUSH1 0, MSTORE, PUSH1 32, PUSH1 0, RETURN (answers 1e15 to any call). */
const ORACLE_STUB = '0x66038d7ea4c6800060005260206000f3';
const L1_RESERVED = (10n ** 15n * 125n) / 100n;

let t: TestApp;
let chain: TestChain;
let networkId: number;
let alice: TestUser;

beforeAll(async () => {
  t = await startTestApp({ workers: true });
  chain = await startTestChain();
  await chain.rpc('anvil_setCode', [GAS_PRICE_ORACLE, ORACLE_STUB]);
  networkId = await chain.register(t);
  await waitForCursor(t, networkId);
  alice = await t.createUser();
});

afterAll(async () => {
  await t?.close();
  await chain?.stop();
});

describe('L1 data fee', () => {
  it('is part of every level of the fee preview', async () => {
    const w = await fundedWallet(t, chain, alice, networkId, ETH);
    const res = await t.request('GET', `/api/wallet/${w.id}/transaction/fees?token=ETH&address=${RECIPIENT}&amount=0.1`, {
      token: alice.token,
    });
    expect(res.status, res.text).toBe(200);
    expect(res.body.data.l1_fee).toBe('0.001250000000000000');
    const maxFeePerGas = BigInt(res.body.data.levels.medium.max_fee_per_gas.replace('.', ''));
    expect(BigInt(res.body.data.levels.medium.max_fee.replace('.', ''))).toBe(21_000n * maxFeePerGas + L1_RESERVED);
  });

  it('is reserved: a balance covering gas × max fee but not the L1 fee is 400', async () => {
    const w = await fundedWallet(t, chain, alice, networkId, ETH);
    // Twice the high level: within the fee cap.
    const perGas = 2n * (await highMaxFeePerGas(t, alice, w.id));
    const body = {
      amount: '1',
      token: 'ETH',
      address: RECIPIENT,
      max_fee_per_gas: dec18(perGas),
      max_priority_fee_per_gas: dec18(perGas / 2n),
    };
    const gasFee = 21_000n * perGas;
    await chain.setBalance(w.address, ETH + gasFee + L1_RESERVED - 1n);
    const short = await t.request('POST', `/api/wallet/${w.id}/transaction/create`, { token: alice.token, body });
    expect(short.status).toBe(400);
    expect(short.body.message).toBe('Insufficient balance for transaction');
    await chain.setBalance(w.address, ETH + gasFee + L1_RESERVED);
    const ok = await t.request('POST', `/api/wallet/${w.id}/transaction/create`, { token: alice.token, body });
    expect(ok.status, ok.text).toBe(200);
    const row = await t.store.db
      .selectFrom('transactions')
      .select(['fee_reserved', 'l1_fee'])
      .where('id', '=', ok.body.data.id)
      .executeTakeFirstOrThrow();
    expect(BigInt(row.l1_fee)).toBe(L1_RESERVED);
    expect(BigInt(row.fee_reserved)).toBe(gasFee + L1_RESERVED);
  });
});
