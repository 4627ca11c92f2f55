/**
 * `function` + `args` obey the 64 KiB calldata limit (CONTRACT.md, "Hardening"): arguments whose
 * encoding would pass it are refused with 422 on `args` before anything is encoded, so a body of
 * zeros cannot make the event loop encode megabytes; arguments that fit are encoded as before.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp, type TestUser } from '../helpers/app.js';
import { createWalletRow } from '../helpers/factories.js';
import { expectValidationError } from '../helpers/expect.js';
import { encodedSizeFloor, encodeCall, parseFunction } from '../../src/chain/contract.js';

const TARGET = '0xa0Ee7A142d267C1f36714E4a8F75612F20a79720';
const cpuMs = (used: NodeJS.CpuUsage) => (used.user + used.system) / 1000;

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

  // Measured in CPU time of this process (the app runs in it), not wall time: under CI's load the
  // refusal once took 2.8 s of wall time (0.24 s idle) while other files ran on both cores. The
  // yardstick is encoding the same arguments, timed in the same run: the refusal must cost less
  // than half of that alone (idle: ~0.2 s against ~1.4 s).
  it('refuses 300,000 zeros (9.6 MB once encoded) with 422 on args, for less CPU than encoding them', async () => {
    const zeros = [Array(300_000).fill(0)];
    const refusing = process.cpuUsage();
    const res = await create(zeros);
    const refusal = cpuMs(process.cpuUsage(refusing));
    expectValidationError(res, { args: ['The args field must not encode to more than 64 kilobytes.'] });
    const encoding = process.cpuUsage();
    expect(encodeCall(parseFunction('f(uint256[])')!, zeros)!.length).toBe(2 + 2 * (4 + 32 + 32 + 300_000 * 32));
    expect(refusal).toBeLessThan(cpuMs(process.cpuUsage(encoding)) / 2);
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
    for (const args of [[[], '', '0x'], [['1', '2', '3'], 'x'.repeat(500), `0x${'ab'.repeat(300)}`]]) {
      const real = (encodeCall(fn, args)!.length - 2) / 2 - 4;
      expect(encodedSizeFloor(args)).toBeLessThanOrEqual(real);
    }
  });
});
