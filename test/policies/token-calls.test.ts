/**
 * Policies that see tokens (docs/money-out.md, "Contract calls: policed by what they do"), through
 * HTTP on a real anvil, on SQLite and (DATABASE_URL) PostgreSQL. A contract call to one of the
 * wallet's token contracts is policed as that token: `transfer` and `approve` calldata obey the
 * token's per-transaction, daily, approval and allowlist rules, count toward its daily limit, and a
 * `transfer` reserves its amount against the token's balance. Any other contract call on a wallet
 * with a policy waits for approval unless its contract is allowlisted. Explicit fees above three
 * times the `high` level's are 422, on creates and speed-ups.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { encodeFunctionData, maxUint256, parseAbi, type Address } from 'viem';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { startTestApp, type TestApp, type TestUser } from '../helpers/app.js';
import { startTestChain, type TestChain } from '../helpers/chain.js';
import { deployErc20, deployNotAToken, erc20BalanceOf, mintErc20 } from '../helpers/erc20.js';
import { expectValidationError } from '../helpers/expect.js';
import { waitFor } from '../helpers/wait.js';
import { ETH, fundedWallet, publicClient, waitForCursor, waitForStatus, type FundedWallet } from '../helpers/transfers.js';
import { policyApi, refusal } from './support.js';

const TOKEN_ABI = parseAbi([
  'function transfer(address to, uint256 amount) returns (bool)',
  'function approve(address spender, uint256 amount) returns (bool)',
  'function mint(address to, uint256 amount)',
]);
/** 1 TUSD (6 places). */
const USD = 1_000_000n;

let t: TestApp;
let chain: TestChain;
let user: TestUser;
let networkId: number;
let usd: Address;
let notAToken: Address;

beforeAll(async () => {
  chain = await startTestChain();
  t = await startTestApp({ workers: true });
  networkId = await chain.register(t);
  await waitForCursor(t, networkId);
  user = await t.createUser();
  usd = await deployErc20(chain.rpcUrl, { name: 'Test USD', symbol: 'TUSD', decimals: 6 });
  notAToken = await deployNotAToken(chain.rpcUrl);
});

afterAll(async () => {
  await t?.close();
  await chain?.stop();
});

const fresh = (): Address => privateKeyToAccount(generatePrivateKey()).address;

/** A wallet holding 10 ETH and `tusd` TUSD, the token added, and its policy set to `policy`. */
async function walletWith(tusd: bigint, policy: Record<string, unknown>): Promise<{ w: FundedWallet; api: ReturnType<typeof policyApi> }> {
  const w = await fundedWallet(t, chain, user, networkId, 10n * ETH);
  const api = policyApi(t, w.id, user.token);
  const added = await t.request('POST', `/api/wallet/${w.id}/token/add`, { token: user.token, body: { contract: usd } });
  expect(added.status, added.text).toBe(200);
  if (tusd > 0n) await mintErc20(chain.rpcUrl, usd, w.address, tusd);
  if (Object.keys(policy).length > 0) {
    const set = await api.setPolicy(policy);
    expect(set.status, set.text).toBe(200);
  }
  return { w, api };
}

/** The contract-call body that makes the token's `fn` with `args`, as data. */
const tokenCall = (fn: 'transfer' | 'approve' | 'mint', args: [Address, bigint], contract: Address = usd) => ({
  amount: '0',
  token: 'ETH',
  address: contract,
  data: encodeFunctionData({ abi: TOKEN_ABI, functionName: fn, args }),
});

const nonceOf = (w: FundedWallet) => publicClient(chain.rpcUrl).getTransactionCount({ address: w.address });

describe('a call to a token contract is policed as that token', () => {
  it('transfer() of the whole balance through the contract-call route is over the per-transaction limit: 400, nothing sent', async () => {
    const { w, api } = await walletWith(500n * USD, { per_transaction: { TUSD: '100' } });
    const thief = fresh();
    const res = await api.create(tokenCall('transfer', [thief, 500n * USD]));
    expect([res.status, res.body]).toEqual([400, refusal('Policy: over the per-transaction limit')]);
    expect(await nonceOf(w)).toBe(0);
    expect(await erc20BalanceOf(chain.rpcUrl, usd, thief)).toBe(0n);
    // Within the limit: sent, and the token arrives exactly.
    const ok = await api.create(tokenCall('transfer', [thief, 100n * USD]));
    expect([ok.status, ok.body.data?.type], ok.text).toEqual([200, 'contract']);
    await waitForStatus(t, user, w.id, ok.body.data.id, 'confirmed');
    expect(await erc20BalanceOf(chain.rpcUrl, usd, thief)).toBe(100n * USD);
  });

  it('an unlimited approve() is over every limit set for the token; with only approval_above it waits for approval', async () => {
    const limited = await walletWith(500n * USD, { per_transaction: { TUSD: '100' } });
    const spender = fresh();
    const res = await limited.api.create(tokenCall('approve', [spender, maxUint256]));
    expect([res.status, res.body]).toEqual([400, refusal('Policy: over the per-transaction limit')]);
    expect(await nonceOf(limited.w)).toBe(0);

    const held = await walletWith(500n * USD, { approval_above: { TUSD: '100' } });
    const waiting = await held.api.create(tokenCall('approve', [spender, maxUint256]));
    expect([waiting.status, waiting.body.data?.status, waiting.body.data?.tx_hash], waiting.text).toEqual([200, 'awaiting_approval', null]);
    expect(await nonceOf(held.w)).toBe(0);
    // A small allowance passes.
    const small = await held.api.create(tokenCall('approve', [spender, 50n * USD]));
    expect([small.status, small.body.data?.status], small.text).toEqual([200, 'pending']);
  });

  it('counts toward the token daily limit, with plain transfers of the token, both ways', async () => {
    const { w, api } = await walletWith(500n * USD, { daily: { TUSD: '100' } });
    const to = fresh();
    const viaCall = await api.create(tokenCall('transfer', [to, 60n * USD]));
    expect(viaCall.status, viaCall.text).toBe(200);
    const plain = await api.create({ amount: '50', token: 'TUSD', address: to });
    expect([plain.status, plain.body]).toEqual([400, refusal('Policy: over the daily limit')]);
    const plainFits = await api.create({ amount: '30', token: 'TUSD', address: to });
    expect(plainFits.status, plainFits.text).toBe(200);
    // An approval counts too: 90 of 100 used, an allowance of 20 is over.
    const approval = await api.create(tokenCall('approve', [to, 20n * USD]));
    expect([approval.status, approval.body]).toEqual([400, refusal('Policy: over the daily limit')]);
    await waitForStatus(t, user, w.id, plainFits.body.data.id, 'confirmed');
    expect(await erc20BalanceOf(chain.rpcUrl, usd, to)).toBe(90n * USD);
  });

  it('with allowlist_only, the recipient or spender must be listed, not the token contract', async () => {
    const { w, api } = await walletWith(500n * USD, { allowlist_only: true });
    const listed = fresh();
    const stranger = fresh();
    expect((await api.add({ address: listed, label: 'Supplier' })).status).toBe(200);
    const refused = await api.create(tokenCall('transfer', [stranger, 10n * USD]));
    expect([refused.status, refused.body]).toEqual([400, refusal('Policy: address not on the allowlist')]);
    const refusedApproval = await api.create(tokenCall('approve', [stranger, 10n * USD]));
    expect([refusedApproval.status, refusedApproval.body]).toEqual([400, refusal('Policy: address not on the allowlist')]);
    const sent = await api.create(tokenCall('transfer', [listed, 10n * USD]));
    expect([sent.status, sent.body.data?.status], sent.text).toEqual([200, 'pending']);
    await waitForStatus(t, user, w.id, sent.body.data.id, 'confirmed');
    expect(await erc20BalanceOf(chain.rpcUrl, usd, listed)).toBe(10n * USD);
  });

  it('a pending transfer() reserves its tokens: a plain transfer after it cannot overcommit the balance', async () => {
    const { w, api } = await walletWith(100n * USD, {});
    const to = fresh();
    await chain.rpc('evm_setAutomine', [false]);
    try {
      const call = await api.create(tokenCall('transfer', [to, 60n * USD]));
      expect([call.status, call.body.data?.status], call.text).toEqual([200, 'pending']);
      const over = await api.create({ amount: '50', token: 'TUSD', address: to });
      expect([over.status, over.body.message]).toEqual([400, 'Insufficient balance for transaction']);
      // The call itself is checked against what is left: another transfer() of 50 is over too.
      const overCall = await api.create(tokenCall('transfer', [to, 50n * USD]));
      expect([overCall.status, overCall.body.message]).toEqual([400, 'Insufficient balance for transaction']);
      const fits = await api.create({ amount: '40', token: 'TUSD', address: to });
      expect(fits.status, fits.text).toBe(200);
    } finally {
      await chain.rpc('evm_setAutomine', [true]);
    }
    await chain.mine(1);
    await waitFor(async () => (await erc20BalanceOf(chain.rpcUrl, usd, to)) === 100n * USD, {
      timeoutMs: 20_000,
      message: 'both transfers mined',
    });
    expect(await erc20BalanceOf(chain.rpcUrl, usd, w.address)).toBe(0n);
  });
});

describe('any other contract call', () => {
  it('on a wallet with a policy waits for approval unless its contract is allowlisted; without a policy it is sent', async () => {
    const ping = { amount: '0', token: 'ETH', address: notAToken, function: 'ping()', args: [] };
    const { w, api } = await walletWith(0n, { per_transaction: { ETH: '5' } });
    const held = await api.create(ping);
    expect([held.status, held.body.data?.status, held.body.data?.tx_hash], held.text).toEqual([200, 'awaiting_approval', null]);
    expect(await nonceOf(w)).toBe(0);
    expect((await api.add({ address: notAToken, label: 'Pinger' })).status).toBe(200);
    const listed = await api.create(ping);
    expect([listed.status, listed.body.data?.status], listed.text).toEqual([200, 'pending']);

    // A call to the token contract that is none of the token calls (here `mint`) is any other call.
    const mint = await api.create(tokenCall('mint', [w.address, 1n]));
    expect([mint.status, mint.body.data?.status], mint.text).toEqual([200, 'awaiting_approval']);

    const free = await walletWith(0n, {});
    const sent = await free.api.create(ping);
    expect([sent.status, sent.body.data?.status], sent.text).toEqual([200, 'pending']);
  });
});

describe('fee caps', () => {
  it('max_fee_per_gas above three times the high level is 422 on a create and on a speed-up; within it, accepted', async () => {
    const { w, api } = await walletWith(0n, {});
    const preview = await t.request('GET', `/api/wallet/${w.id}/transaction/fees?amount=0.1&token=ETH&address=${fresh()}`, {
      token: user.token,
    });
    expect(preview.status, preview.text).toBe(200);
    const high = BigInt(preview.body.data.levels.high.max_fee_per_gas.replace('.', '').replace(/^0+/, '') || '0');
    const asWei18 = (wei: bigint) => `0.${wei.toString().padStart(18, '0')}`;
    const to = fresh();
    const burn = await api.create({
      amount: '0.000000000000000001',
      token: 'ETH',
      address: to,
      max_fee_per_gas: asWei18(high * 1000n),
      max_priority_fee_per_gas: asWei18(high),
    });
    expectValidationError(burn, { max_fee_per_gas: ['The max_fee_per_gas field is above the allowed cap.'] });
    expect(await nonceOf(w)).toBe(0);

    await chain.rpc('evm_setAutomine', [false]);
    try {
      const ok = await api.create({
        amount: '0.1',
        token: 'ETH',
        address: to,
        max_fee_per_gas: asWei18(high * 2n),
        max_priority_fee_per_gas: asWei18(1n),
      });
      expect(ok.status, ok.text).toBe(200);
      const speedUp = (fee: bigint) =>
        t.request('POST', `/api/wallet/${w.id}/transaction/${ok.body.data.id}/speed-up`, {
          token: user.token,
          body: { max_fee_per_gas: asWei18(fee), max_priority_fee_per_gas: asWei18(2n) },
        });
      expectValidationError(await speedUp(high * 100n), { max_fee_per_gas: ['The max_fee_per_gas field is above the allowed cap.'] });
      const within = await speedUp(high * 3n);
      expect(within.status, within.text).toBe(200);
    } finally {
      await chain.rpc('evm_setAutomine', [true]);
    }
  });
});
