/**
 * `function` + `args` obey the 64 KiB calldata limit (docs/transactions.md, "Routes"): arguments whose
 * encoding would pass it are refused with 422 on `args` before anything is encoded, so a body of
 * zeros cannot make the event loop encode megabytes; arguments that fit are encoded as before.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp, type TestUser } from '../helpers/app.js';
import { createWalletRow } from '../helpers/factories.js';
import { expectValidationError } from '../helpers/expect.js';
import { encodedSizeFloor, encodeCall, parseFunction } from '../../src/chain/contract.js';

const TARGET = '0xa0Ee7A142d267C1f36714E4a8F75612F20a79720';

describe('contract-call arguments and the calldata limit', () => {
  let t: TestApp;
  let user: TestUser;
  let walletId: number;
  beforeAll(async () => {
    t = await startTestApp();
    user = await t.createUser();
    walletId = (await createWalletRow(t, user.id)).id;
  });
  afterAll(async () => t?.close());

  const create = (args: unknown) =>
    t.request('POST', `/api/wallet/${walletId}/transaction/create`, {
      token: user.token,
      body: { amount: '0', token: 'ETH', address: TARGET, function: 'f(uint256[])', args },
    });

  // Timed against a request with the same 600 KB body refused before its args are looked at (an
  // unparsable function), alternately, three of each, the fastest of each compared: both pay for
  // reading the body, only a refusal that encoded would pay ~1.2-1.9 s more (encoding alone; the
  // body's reading ~0.2 s idle). A fixed bound on one request failed under CI's load (2.8 s of wall
  // time, 2.0 s of CPU with a major GC of the shared fork's heap, against 0.24 s idle).
  it('refuses 300,000 zeros (9.6 MB once encoded) with 422 on args, at the cost of reading the body', async () => {
    const zeros = [Array(300_000).fill(0)];
    const timed = async (body: Record<string, unknown>) => {
      const started = performance.now();
      const res = await t.request('POST', `/api/wallet/${walletId}/transaction/create`, { token: user.token, body });
      return { res, ms: performance.now() - started };
    };
    const call = { amount: '0', token: 'ETH', address: TARGET, args: zeros };
    const refusals: number[] = [];
    const baselines: number[] = [];
    for (let i = 0; i < 3; i += 1) {
      const refused = await timed({ ...call, function: 'f(uint256[])' });
      expectValidationError(refused.res, { args: ['The args field must not encode to more than 64 kilobytes.'] });
      refusals.push(refused.ms);
      const baseline = await timed({ ...call, function: 'not a function' });
      expectValidationError(baseline.res, { function: ['The function field must be a valid function signature.'] });
      baselines.push(baseline.ms);
    }
    expect(Math.min(...refusals)).toBeLessThan(3 * Math.min(...baselines));
  });

  it('walks the args only until their floor passes the limit', () => {
    let visited = 0;
    const zeros = new Proxy(Array(300_000).fill(0), {
      get(target, key, receiver) {
        if (typeof key === 'string' && /^\d+$/.test(key)) visited += 1;
        return Reflect.get(target, key, receiver);
      },
    });
    expect(encodedSizeFloor([zeros])).toBe(2_049 * 32);
    expect(visited).toBe(2_049);
  });

  it('refuses 2,100 values (just over 64 KiB encoded) and lets 2,000 through validation', async () => {
    expectValidationError(await create([Array(2_100).fill('1')]), { args: ['The args field must not encode to more than 64 kilobytes.'] });
    const fits = await create([Array(2_000).fill('1')]);
    // 4 + 32 + 32 + 2,000 × 32 = 64,068 bytes: valid calldata.
    // The wallet's network is unreachable here, so the first step past validation answers 503.
    expect(fits.status).toBe(503);
    expect(fits.body.message).toBe('The blockchain node is unavailable');
  });

  it('bounds the encoding from below: never over the real size', () => {
    const fn = parseFunction('g(uint256[],string,bytes)')!;
    for (const args of [
      [[], '', '0x'],
      [['1', '2', '3'], 'x'.repeat(500), `0x${'ab'.repeat(300)}`],
    ]) {
      const real = (encodeCall(fn, args)!.length - 2) / 2 - 4;
      expect(encodedSizeFloor(args)).toBeLessThanOrEqual(real);
    }
  });
});
