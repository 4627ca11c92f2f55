/**
 * Charge sweeps under injected faults (issue 18, section 3), with the node behind a real
 * JSON-RPC proxy (test/helpers/transfers.ts, RpcProxy) and a real database fault:
 * - the write that schedules the next look after a gas top-up is confirmed fails (a trigger
 *   refuses it, as a lost connection would): the tokens are swept all the same once it passes;
 * - eth_estimateGas of a token sweep answers a JSON-RPC rate limit (-32005), a lagging node's
 *   "header not found" or HTTP 429 for a while: the tokens are swept once the node relents,
 *   never "left there";
 * - a lagging node answers "nonce too low" to the re-send of a sweep that mined: the sweep is
 *   not failed, and is confirmed once the follower sees its block;
 * - a sweep the node dropped and will not take again (insufficient funds): still followed (its
 *   first send may yet mine), replaced at the same nonce with higher fees (never held forever),
 *   and failed (`dropped`) once the chain shows the replacement used that nonce;
 * - a sweep whose first send the node refuses, then signed again to the very same bytes (same
 *   nonce, amount and fees): one row, put back in flight and confirmed, never a `failed` row
 *   under the hash the chain mined beside a confirmed one (the seeded simulation's seed 3601).
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { sql } from 'kysely';
import { keccak256, parseEther, type Address, type Hex } from 'viem';
import { ManualClock, type TestApp, type TestUser } from '../helpers/app.js';
import { type TestChain } from '../helpers/chain.js';
import { deployErc20, erc20BalanceOf, mintErc20 } from '../helpers/erc20.js';
import { waitFor } from '../helpers/wait.js';
import { SWEEP_RETRY_MS } from '../../src/modules/charges/charges.sweeps.js';
import { RpcProxy, type RpcRule } from '../helpers/transfers.js';
import { balanceOf, chargeApi, clockToChain, pay, proxiedChargeSuite } from './support.js';

type Sweep = { token: string; status: string; tx_hash: string };
const confirmedSweep = (token: string) => (c: { sweeps: Sweep[] }) => c.sweeps.some((w) => w.token === token && w.status === 'confirmed');

describe('charge sweeps under faults', () => {
  const clock = new ManualClock();
  let chain: TestChain;
  let proxy: RpcProxy;
  let t: TestApp;
  let user: TestUser;
  let wallet: { id: number; address: string };
  let usdc: Address;
  let api: ReturnType<typeof chargeApi>;

  const suite = proxiedChargeSuite(clock);
  beforeAll(async () => {
    ({ chain, proxy, t, user } = suite);
    const { networkId } = suite;
    wallet = (await t.request('POST', '/api/wallet/create', { token: user.token, body: { name: 'Shop', network_id: networkId } })).body
      .data;
    await chain.setBalance(wallet.address, parseEther('10'));
    usdc = await deployErc20(chain.rpcUrl, { name: 'USD Coin', symbol: 'USDC', decimals: 6 });
    expect((await t.request('POST', `/api/wallet/${wallet.id}/token/add`, { token: user.token, body: { contract: usdc } })).status).toBe(
      200,
    );
    api = chargeApi(t, wallet.id, user.token);
  });

  /** Polls `pred`, moving the service's clock past the sweep retry delay between polls. */
  const retryingUntil = <T>(pred: () => Promise<T | null | undefined | false>, message: string, timeoutMs = 30_000) =>
    waitFor(async () => (await pred()) || (clock.advance(SWEEP_RETRY_MS), null), { message, timeoutMs, intervalMs: 200 });

  /** Makes every write that schedules a charge's next look after a confirmed gas top-up fail, as a lost connection would. */
  async function refuseDueAfterTopUp(): Promise<void> {
    const when = `NEW.sweep_due_at IS NOT NULL AND OLD.status <> 'pending' AND EXISTS (SELECT 1 FROM charge_sweeps s WHERE s.charge_id = NEW.id AND s.kind = 'gas' AND s.status = 'confirmed')`;
    if (t.store.driver === 'postgres') {
      await sql
        .raw(
          `CREATE FUNCTION fault_sweep_due() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN IF ${when} THEN RAISE EXCEPTION 'injected fault: connection lost'; END IF; RETURN NEW; END $$`,
        )
        .execute(t.store.db);
      await sql
        .raw('CREATE TRIGGER fault_sweep_due BEFORE UPDATE ON charges FOR EACH ROW EXECUTE FUNCTION fault_sweep_due()')
        .execute(t.store.db);
    } else {
      await sql
        .raw(
          `CREATE TRIGGER fault_sweep_due BEFORE UPDATE OF sweep_due_at ON charges WHEN ${when} BEGIN SELECT RAISE(ABORT, 'injected fault: connection lost'); END`,
        )
        .execute(t.store.db);
    }
  }

  async function healDue(): Promise<void> {
    await sql.raw('DROP TRIGGER fault_sweep_due' + (t.store.driver === 'postgres' ? ' ON charges' : '')).execute(t.store.db);
    if (t.store.driver === 'postgres') await sql.raw('DROP FUNCTION fault_sweep_due()').execute(t.store.db);
  }

  it('a gas top-up confirmed while the write scheduling the token sweep fails: the tokens are swept once it passes', async () => {
    await clockToChain(clock, chain);
    await refuseDueAfterTopUp();
    let healed = false;
    try {
      const c = await api.create({ amount: '12', token: 'USDC', expires: 600 });
      await mintErc20(chain.rpcUrl, usdc, c.address, 12_000_000n);
      await waitFor(() => t.logs.some((l) => l.includes('could not follow a charge sweep') && l.includes('injected fault')), {
        timeoutMs: 30_000,
        message: 'the fault hit the top-up confirmation',
      });
      await healDue();
      healed = true;
      const done = await retryingUntil(async () => {
        const x = await api.show(c.id);
        return confirmedSweep('USDC')(x) ? x : null;
      }, 'USDC swept after the fault');
      expect(done.status).toBe('paid');
      expect(done.sweeps.filter((w: Sweep) => w.token === 'USDC')).toHaveLength(1);
      expect(await erc20BalanceOf(chain.rpcUrl, usdc, c.address as Address)).toBe(0n);
      const gas = await t.store.db
        .selectFrom('charge_sweeps')
        .select(['status'])
        .where('charge_id', '=', c.id)
        .where('kind', '=', 'gas')
        .execute();
      expect(gas).toEqual([{ status: 'confirmed' }]);
    } finally {
      if (!healed) await healDue();
    }
  });

  const estimateFaults: { fault: string; rule: RpcRule }[] = [
    { fault: 'a JSON-RPC rate limit (-32005)', rule: { action: 'error', code: -32005, message: 'rate limit exceeded' } },
    { fault: 'a lagging node’s "header not found"', rule: { action: 'error', code: -32000, message: 'header not found' } },
    { fault: 'HTTP 429', rule: { action: 'forward-error', status: 429, code: -32005, message: 'Too Many Requests' } },
  ];
  it.each(estimateFaults)(
    'a token sweep’s gas estimate answered with $fault is tried again: the tokens are swept once the node relents',
    async ({ rule }) => {
      await clockToChain(clock, chain);
      const c = await api.create({ amount: '30', token: 'USDC', expires: 600 });
      const deposit = c.address.toLowerCase();
      const before = await erc20BalanceOf(chain.rpcUrl, usdc, wallet.address as Address);
      let refused = 0;
      proxy.rule('eth_estimateGas', {
        ...rule,
        times: 6,
        match: (p) => (p[0] as { from?: string } | undefined)?.from?.toLowerCase() === deposit && ++refused > 0,
      });
      try {
        await mintErc20(chain.rpcUrl, usdc, c.address, 30_000_000n);
        const done = await retryingUntil(async () => {
          const x = await api.show(c.id);
          return confirmedSweep('USDC')(x) ? x : null;
        }, 'USDC swept once the node relents');
        expect(refused).toBe(6);
        expect(done.status).toBe('paid');
        expect(done.sweeps.filter((w: Sweep) => w.token === 'USDC')).toHaveLength(1);
        expect(await erc20BalanceOf(chain.rpcUrl, usdc, c.address as Address)).toBe(0n);
        expect(await erc20BalanceOf(chain.rpcUrl, usdc, wallet.address as Address)).toBe(before + 30_000_000n);
        expect(t.logs.some((l) => l.includes('cannot be moved'))).toBe(false);
      } finally {
        proxy.allow('eth_estimateGas');
      }
    },
  );

  it('a lagging node answers "nonce too low" to the re-send of a sweep that mined: not failed, confirmed once its block is seen', async () => {
    await clockToChain(clock, chain);
    const c = await api.create({ amount: '0.5', token: 'ETH', expires: 600 });
    await chain.rpc('evm_setAutomine', [false]);
    try {
      await pay(chain.rpcUrl, c.address, parseEther('0.5'));
      await chain.mine(1);
      const paid = await api.until(c.id, (x) => x.status === 'paid' && x.sweeps.length === 1, 'paid, sweep recorded', 20_000);
      const sweep = paid.sweeps[0] as Sweep;
      await waitFor(() => chain.rpc('eth_getTransactionByHash', [sweep.tx_hash]), { timeoutMs: 10_000, message: 'sweep in the pool' });
      // From here the node behind the proxy lags: it has no receipt and does not know the
      // sweep, and refuses its re-send with "nonce too low" (another node mined it).
      proxy.rule('eth_getTransactionReceipt', { action: 'null' });
      proxy.rule('eth_getTransactionByHash', { action: 'null' });
      proxy.rule('eth_sendRawTransaction', { action: 'error', code: -32000, message: 'nonce too low' });
      await chain.mine(1);
      expect(await balanceOf(chain, c.address)).toBe(0n);
      await waitFor(
        () => t.logs.some((l) => l.includes('charge sweep re-send refused') || l.includes('charge sweep refused by the node')),
        { timeoutMs: 15_000, message: 'a re-send refused' },
      );
      expect((await api.show(c.id)).sweeps).toEqual([sweep]);

      for (const m of ['eth_getTransactionReceipt', 'eth_getTransactionByHash', 'eth_sendRawTransaction']) proxy.allow(m);
      const done = await api.until(c.id, (x) => x.sweeps[0]?.status === 'confirmed', 'sweep confirmed', 20_000);
      expect(done.sweeps).toEqual([{ ...sweep, status: 'confirmed' }]);
      expect(await balanceOf(chain, wallet.address)).toBeGreaterThan(0n);
    } finally {
      for (const m of ['eth_getTransactionReceipt', 'eth_getTransactionByHash', 'eth_sendRawTransaction']) proxy.allow(m);
      await chain.rpc('evm_setAutomine', [true]);
    }
  });

  it('a dropped sweep whose re-send the node refuses for its funds: followed, replaced at the same nonce, failed once the replacement uses it', async () => {
    await clockToChain(clock, chain);
    const c = await api.create({ amount: '0.6', token: 'ETH', expires: 600 });
    await chain.rpc('evm_setAutomine', [false]);
    try {
      await pay(chain.rpcUrl, c.address, parseEther('0.6'));
      await chain.mine(1);
      const paid = await api.until(c.id, (x) => x.status === 'paid' && x.sweeps.length === 1, 'paid, sweep recorded', 20_000);
      const first = paid.sweeps[0] as Sweep;
      await waitFor(() => chain.rpc('eth_getTransactionByHash', [first.tx_hash]), { timeoutMs: 10_000, message: 'sweep in the pool' });
      // The node forgets it and refuses it from now on (as an OP node does when the L1 fee rose).
      proxy.rule('eth_sendRawTransaction', {
        action: 'error',
        code: -32000,
        message: 'insufficient funds for gas * price + value',
        match: (p) => keccak256(p[0] as Hex) === first.tx_hash,
      });
      await chain.rpc('anvil_dropTransaction', [first.tx_hash]);
      await chain.mine(1); // an empty block: the fees move, so the next sweep is a different transaction
      const again = await retryingUntil(async () => {
        const x = await api.show(c.id);
        return x.sweeps.length === 2 ? x : null;
      }, 'swept again');
      // The refused one is still followed (its first send may yet mine elsewhere) until the
      // chain shows its nonce used by the replacement.
      expect(again.sweeps[0]).toEqual({ ...first, status: 'pending', reason: null });
      expect(again.sweeps[1].tx_hash).not.toBe(first.tx_hash);
      const nonces = await t.store.db
        .selectFrom('charge_sweeps')
        .select('nonce')
        .where('charge_id', '=', c.id)
        .where('kind', '=', 'sweep')
        .orderBy('id', 'asc')
        .execute();
      expect(nonces.map((n) => Number(n.nonce))).toEqual([0, 0]);
      await waitFor(() => chain.rpc('eth_getTransactionByHash', [again.sweeps[1].tx_hash]), {
        timeoutMs: 10_000,
        message: 'second sweep in the pool',
      });
      await chain.mine(1);
      const done = await api.until(
        c.id,
        (x) => x.sweeps[1]?.status === 'confirmed' && x.sweeps[0].status === 'failed',
        'second sweep confirmed, the first dropped',
        20_000,
      );
      expect(done.sweeps.map((w: Sweep) => w.status)).toEqual(['failed', 'confirmed']);
      const rows = await t.store.db
        .selectFrom('charge_sweeps')
        .select('error')
        .where('charge_id', '=', c.id)
        .where('kind', '=', 'sweep')
        .orderBy('id', 'asc')
        .execute();
      expect(rows[0]!.error).toBe('dropped');
      expect(await balanceOf(chain, c.address)).toBe(0n);
    } finally {
      proxy.allow('eth_sendRawTransaction');
      await chain.rpc('evm_setAutomine', [true]);
    }
  });

  it('a sweep whose first send is refused, signed again to the same bytes: one row, back in flight, confirmed', async () => {
    await clockToChain(clock, chain);
    const c = await api.create({ amount: '0.7', token: 'ETH', expires: 600 });
    // The first send of the sweep is refused (a lagging node that has not seen the payment).
    proxy.rule('eth_sendRawTransaction', {
      action: 'error',
      code: -32000,
      message: 'insufficient funds for gas * price + value',
      times: 1,
    });
    try {
      await pay(chain.rpcUrl, c.address, parseEther('0.7'));
      const refused = await api.until(c.id, (x) => x.status === 'paid' && x.sweeps[0]?.status === 'failed', 'first sweep refused', 20_000);
      const first = refused.sweeps[0] as Sweep;
      expect((first as Sweep & { reason: string }).reason).toBe('insufficient funds for gas * price + value');
      // No block since: the next sweep has the same nonce, amount and fees, so the same hash.
      const done = await retryingUntil(async () => {
        const x = await api.show(c.id);
        return x.sweeps.some((w: Sweep) => w.status === 'confirmed') ? x : null;
      }, 'swept again and confirmed');
      expect(done.sweeps).toEqual([{ ...first, status: 'confirmed', reason: null }]);
      const rows = await t.store.db
        .selectFrom('charge_sweeps')
        .select(['status', 'tx_hash', 'error'])
        .where('charge_id', '=', c.id)
        .where('kind', '=', 'sweep')
        .execute();
      expect(rows).toEqual([{ status: 'confirmed', tx_hash: first.tx_hash, error: null }]);
      const mined = await chain.rpc<{ status: string } | null>('eth_getTransactionReceipt', [first.tx_hash]);
      expect(mined?.status).toBe('0x1');
      expect(await balanceOf(chain, c.address)).toBe(0n);
    } finally {
      proxy.allow('eth_sendRawTransaction');
    }
  });
});
