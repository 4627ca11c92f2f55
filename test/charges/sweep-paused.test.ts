/**
 * A paid charge whose token stops its transfers for a while (real anvil, a pausable and
 * blacklisting ERC-20 compiled with solc): the token paused, or the deposit address blacklisted,
 * before the sweep. The sweep's estimate reverts; the charge stays due and is looked at again,
 * each wait longer than the last (from REVERT_WAIT_FIRST_MS), never given up; once the token is
 * unpaused or the address cleared, the tokens reach the wallet's main address.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseEther, type Address } from 'viem';
import { ManualClock, type TestApp, type TestUser } from '../helpers/app.js';
import type { TestChain } from '../helpers/chain.js';
import { erc20BalanceOf } from '../helpers/erc20.js';
import { waitFor } from '../helpers/wait.js';
import { REVERT_WAIT_FIRST_MS } from '../../src/modules/charges/charges.sweeps.js';
import { chargeApi, clockToChain, startSweepingService } from './support.js';
import { deployPausable, pausableToken } from './pausable-token.js';

type Token = ReturnType<typeof pausableToken>;

const cases: {
  what: string;
  stop: (token: Token, deposit: Address) => Promise<void>;
  resume: (token: Token, deposit: Address) => Promise<void>;
}[] = [
  { what: 'the token paused', stop: (token) => token.pause(), resume: (token) => token.unpause() },
  {
    what: 'the deposit address blacklisted',
    stop: (token, deposit) => token.blacklist(deposit, true),
    resume: (token, deposit) => token.blacklist(deposit, false),
  },
];

describe('a paid charge whose token stops its transfers for a while', () => {
  const clock = new ManualClock();
  let chain: TestChain;
  let t: TestApp;
  let alice: TestUser;
  let networkId: number;

  beforeAll(async () => {
    ({ chain, t, alice, networkId } = await startSweepingService(clock));
  });
  afterAll(async () => {
    await t?.close();
    await chain?.stop();
  });

  const dueAt = async (chargeId: number) => {
    const r = await t.store.db.selectFrom('charges').select('sweep_due_at').where('id', '=', chargeId).executeTakeFirstOrThrow();
    return r.sweep_due_at === null ? null : Number(r.sweep_due_at);
  };
  const reverted = () => t.logs.filter((l) => l.includes('cannot be moved now')).length;

  it.each(cases)('$what, then cleared: the tokens reach the main address', async ({ what, stop, resume }) => {
    const wallet = (await t.request('POST', '/api/wallet/create', { token: alice.token, body: { name: what, network_id: networkId } })).body
      .data as { id: number; address: Address };
    await chain.setBalance(wallet.address, parseEther('10'));
    const usd = await deployPausable(chain.rpcUrl, { name: 'Pausable USD', symbol: 'PUSD', decimals: 6 });
    const token = pausableToken(chain.rpcUrl, usd);
    expect((await t.request('POST', `/api/wallet/${wallet.id}/token/add`, { token: alice.token, body: { contract: usd } })).status).toBe(
      200,
    );
    const api = chargeApi(t, wallet.id, alice.token);
    await clockToChain(clock, chain);
    const c = await api.create({ amount: '5', token: 'PUSD', expires: 600 });
    const deposit = c.address as Address;

    const before = reverted();
    await stop(token, deposit);
    await token.mint(deposit, 5_000_000n);
    await api.until(c.id, (x) => x.status === 'paid', 'paid');

    // While the transfer reverts: each look leaves the charge due, later each time.
    const waits: number[] = [];
    for (let look = 1; look <= 3; look++) {
      await waitFor(() => reverted() >= before + look, { timeoutMs: 15_000, message: `look ${look} reverted` });
      const due = await waitFor(
        async () => {
          const at = await dueAt(c.id);
          return at !== null && at > clock.nowMs() ? at : null;
        },
        { timeoutMs: 10_000, message: `look ${look}: still due, later` },
      );
      waits.push(due - clock.nowMs());
      clock.advance(due - clock.nowMs());
    }
    expect(waits[0]).toBeGreaterThanOrEqual(REVERT_WAIT_FIRST_MS);
    expect(waits[1]).toBeGreaterThanOrEqual(waits[0]!);
    expect(waits[2]).toBeGreaterThanOrEqual(waits[1]!);
    expect(await erc20BalanceOf(chain.rpcUrl, usd, deposit)).toBe(5_000_000n);

    await resume(token, deposit);
    const swept = await waitFor(
      async () => {
        const at = await dueAt(c.id);
        if (at !== null && at > clock.nowMs()) clock.advance(at - clock.nowMs());
        const x = await api.show(c.id);
        return x.sweeps.some((w: { token: string; status: string }) => w.token === 'PUSD' && w.status === 'confirmed') ? x : null;
      },
      { timeoutMs: 30_000, intervalMs: 200, message: 'PUSD swept after the token let it go' },
    );
    expect(swept.status).toBe('paid');
    expect(await erc20BalanceOf(chain.rpcUrl, usd, deposit)).toBe(0n);
    expect(await erc20BalanceOf(chain.rpcUrl, usd, wallet.address)).toBe(5_000_000n);
  });
});
