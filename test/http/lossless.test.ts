/**
 * JSON numbers in money fields are read exactly as written (no float rounding), through the
 * real body parser, while the depth limit and the prototype-poisoning protection still hold
 * and non-money numbers keep their validation.
 */
import type { Hex } from 'viem';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp, type TestUser } from '../helpers/app.js';
import { startTestChain, type TestChain } from '../helpers/chain.js';
import { expectValidationError } from '../helpers/expect.js';
import {
  dec18,
  ETH,
  fundedWallet,
  highMaxFeePerGas,
  publicClient,
  RECIPIENT,
  waitForCursor,
  waitForStatus,
  type FundedWallet,
} from '../helpers/transfers.js';

let t: TestApp;
let chain: TestChain;
let networkId: number;
let alice: TestUser;
let w: FundedWallet;

beforeAll(async () => {
  t = await startTestApp({ workers: true });
  chain = await startTestChain();
  networkId = await chain.register(t);
  await waitForCursor(t, networkId);
  alice = await t.createUser();
  w = await fundedWallet(t, chain, alice, networkId, 10n * ETH);
});

afterAll(async () => {
  await t?.close();
  await chain?.stop();
});

const post = (path: string, raw: string) =>
  t.request('POST', `/api/wallet/${w.id}${path}`, { token: alice.token, rawBody: raw, contentType: 'application/json' });

describe('money numbers read exactly', () => {
  it('sends a raw JSON number with 18 decimals exactly (response and on-chain value)', async () => {
    const res = await post('/transaction/create', `{"amount": 1.123456789012345678, "token": "ETH", "address": "${RECIPIENT}"}`);
    expect(res.status, res.text).toBe(200);
    expect(res.body.data.amount).toBe('1.123456789012345678');
    const onChain = await publicClient(chain.rpcUrl).getTransaction({ hash: res.body.data.tx_hash as Hex });
    expect(onChain.value).toBe(1_123456789012345678n);
    const confirmed = await waitForStatus(t, alice, w.id, res.body.data.id, 'confirmed');
    expect(confirmed.amount).toBe('1.123456789012345678');
  });

  it('rejects 19 decimal places as for strings', async () => {
    const res = await post('/transaction/create', `{"amount": 1.0000000000000000001, "token": "ETH", "address": "${RECIPIENT}"}`);
    expectValidationError(res, { amount: ['The amount field must not have more than 18 decimal places.'] });
  });

  it('reads 1.1 and "1.1" as the same amount, and a 23-digit integer exactly (charges)', async () => {
    const a = await post('/charge/create', '{"amount": 1.1, "token": "ETH"}');
    const b = await post('/charge/create', '{"amount": "1.1", "token": "ETH"}');
    expect([a.status, b.status]).toEqual([200, 200]);
    expect(a.body.data.amount).toBe('1.100000000000000000');
    expect(b.body.data.amount).toBe(a.body.data.amount);
    const big = await post('/charge/create', '{"amount": 99999999999999999999999, "token": "ETH"}');
    expect(big.status, big.text).toBe(200);
    expect(big.body.data.amount).toBe('99999999999999999999999.000000000000000000');
    const exp = await post('/charge/create', '{"amount": 1.5E-17, "token": "ETH"}');
    expect(exp.body.data.amount).toBe('0.000000000000000015');
  });

  it('reads explicit fees exactly', async () => {
    // 18-place JSON numbers a double cannot hold, within the fee cap (3× the high level).
    const maxFee = ((2n * (await highMaxFeePerGas(t, alice, w.id))) / 10n) * 10n + 1n;
    const tip = maxFee / 3n;
    const res = await post(
      '/transaction/create',
      `{"amount": 0.5, "token": "ETH", "address": "${RECIPIENT}", "max_fee_per_gas": ${dec18(maxFee)}, "max_priority_fee_per_gas": ${dec18(tip)}}`,
    );
    expect(res.status, res.text).toBe(200);
    const onChain = await publicClient(chain.rpcUrl).getTransaction({ hash: res.body.data.tx_hash as Hex });
    expect(onChain.maxFeePerGas).toBe(maxFee);
    expect(onChain.maxPriorityFeePerGas).toBe(tip);
  });
});

describe('the parser keeps its other guarantees', () => {
  it('non-money numbers keep their validation', async () => {
    const res = await post('/charge/create', '{"amount": 1, "token": "ETH", "expires": 30.5}');
    expectValidationError(res, { expires: ['The expires field must be an integer.'] });
  });

  it('drops __proto__ keys and still limits the depth', async () => {
    const poisoned = await post(
      '/charge/create',
      '{"amount": 2.000000000000000001, "token": "ETH", "__proto__": {"amount": 5}, "info": {"__proto__": {"x": 1}}}',
    );
    expect(poisoned.status, poisoned.text).toBe(200);
    expect(poisoned.body.data.amount).toBe('2.000000000000000001');
    expect(poisoned.body.data.info).toEqual({});
    const deep = await post('/charge/create', `{"amount": 1, "token": "ETH", "info": ${'['.repeat(80)}${']'.repeat(80)}}`);
    expectValidationError(deep, { info: ['The info field must not be nested more than 64 levels deep.'] });
  });
});
