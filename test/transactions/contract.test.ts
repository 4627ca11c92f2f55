/**
 * Contract calls (type `contract`) on anvil: `approve` on a test ERC-20 by function signature
 * and by raw calldata, confirmed, with the allowance read back from the chain; a call that
 * would revert is 400 with the node's reason; calldata to an address without code is 422;
 * and the contract fields' validation.
 */
import { encodeFunctionData, erc20Abi, type Address, type Hex } from 'viem';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp, type TestUser } from '../helpers/app.js';
import { startTestChain, type TestChain } from '../helpers/chain.js';
import { deployErc20 } from '../helpers/erc20.js';
import { expectValidationError } from '../helpers/expect.js';
import { ETH, fundedWallet, publicClient, RECIPIENT, waitForCursor, waitForStatus, type FundedWallet } from '../helpers/transfers.js';

let t: TestApp;
let chain: TestChain;
let networkId: number;
let alice: TestUser;
let usd: Address;
let w: FundedWallet;

beforeAll(async () => {
  t = await startTestApp({ workers: true });
  chain = await startTestChain();
  networkId = await chain.register(t);
  await waitForCursor(t, networkId);
  alice = await t.createUser();
  usd = await deployErc20(chain.rpcUrl, { name: 'Test USD', symbol: 'TUSD', decimals: 6 });
  w = await fundedWallet(t, chain, alice, networkId, 10n * ETH);
});

afterAll(async () => {
  await t?.close();
  await chain?.stop();
});

const create = (body: unknown) => t.request('POST', `/api/wallet/${w.id}/transaction/create`, { token: alice.token, body });
const allowance = (spender: Address) =>
  publicClient(chain.rpcUrl).readContract({ address: usd, abi: erc20Abi, functionName: 'allowance', args: [w.address, spender] });

describe('contract calls', () => {
  it('calls approve(address,uint256) by signature: type contract, confirmed, allowance on chain', async () => {
    const res = await create({
      amount: 0,
      token: 'ETH',
      address: usd,
      function: 'approve(address,uint256)',
      args: [RECIPIENT, '123456789012345678901234567890'],
    });
    expect(res.status, res.text).toBe(200);
    const expected = encodeFunctionData({ abi: erc20Abi, functionName: 'approve', args: [RECIPIENT, 123456789012345678901234567890n] });
    expect(res.body.data).toMatchObject({ type: 'contract', status: 'pending', amount: '0.000000000000000000', data: expected });
    const onChain = await publicClient(chain.rpcUrl).getTransaction({ hash: res.body.data.tx_hash as Hex });
    expect(onChain.to?.toLowerCase()).toBe(usd.toLowerCase());
    expect(onChain.input).toBe(expected);
    expect(onChain.value).toBe(0n);
    const confirmed = await waitForStatus(t, alice, w.id, res.body.data.id, 'confirmed');
    expect(confirmed).toMatchObject({ type: 'contract', receipt_status: true, data: expected });
    expect(await allowance(RECIPIENT)).toBe(123456789012345678901234567890n);
  });

  it('sends raw calldata, reserved like a transfer', async () => {
    const spender: Address = '0x70997970C51812dc3A010C7d01b50e0d17dc79C8';
    const data = encodeFunctionData({ abi: erc20Abi, functionName: 'approve', args: [spender, 42n] });
    const res = await create({ amount: '0', token: 'eth', address: usd, data });
    expect(res.status, res.text).toBe(200);
    expect(res.body.data.type).toBe('contract');
    const row = await t.store.db
      .selectFrom('transactions')
      .select(['data', 'fee_reserved', 'gas', 'max_fee_per_gas'])
      .where('id', '=', res.body.data.id)
      .executeTakeFirstOrThrow();
    expect(row.data).toBe(data);
    expect(BigInt(row.fee_reserved)).toBe(BigInt(row.gas!) * BigInt(row.max_fee_per_gas!));
    await waitForStatus(t, alice, w.id, res.body.data.id, 'confirmed');
    expect(await allowance(spender)).toBe(42n);
    const list = await t.request('GET', `/api/wallet/${w.id}/transaction`, { token: alice.token });
    expect(list.body.data.find((x: { id: number }) => x.id === res.body.data.id)).toMatchObject({
      type: 'contract',
      data,
      status: 'confirmed',
    });
  });

  it('answers 400 Transaction would revert, with the reason, for a call that reverts', async () => {
    const before = await t.store.db.selectFrom('transactions').select('id').where('wallet_id', '=', w.id).execute();
    const res = await create({
      amount: '0',
      token: 'ETH',
      address: usd,
      function: 'approve(address,uint256)',
      args: ['0x0000000000000000000000000000000000000000', '1'],
    });
    expect(res.status).toBe(400);
    expect(res.body).toEqual({ status: 'error', message: 'Transaction would revert', data: { reason: 'ERC20: approve to zero address' } });
    const after = await t.store.db.selectFrom('transactions').select('id').where('wallet_id', '=', w.id).execute();
    expect(after.length).toBe(before.length);
  });

  it('answers 422 for calldata to an address without code', async () => {
    const res = await create({ amount: '0', token: 'ETH', address: RECIPIENT, data: '0x095ea7b3' });
    expectValidationError(res, { address: ['The address field must be a contract.'] });
  });
});

describe('validation of the contract fields', () => {
  const base = { amount: '0', token: 'ETH', address: '0x5FbDB2315678afecb367f032d93F642f64180aa3' };

  it('checks data, function and args', async () => {
    expectValidationError(await create({ ...base, data: '0x123' }), { data: ['The data field must be a 0x-prefixed hex string.'] });
    expectValidationError(await create({ ...base, data: `0x${'ab'.repeat(64 * 1024 + 1)}` }), {
      data: ['The data field must not be greater than 64 kilobytes.'],
    });
    expectValidationError(await create({ ...base, function: 'approve(address,uint256', args: [] }), {
      function: ['The function field must be a valid function signature.'],
    });
    expectValidationError(await create({ ...base, function: 'approve(address,uint256)', args: [RECIPIENT] }), {
      args: ["The args field must match the function's parameters."],
    });
    expectValidationError(await create({ ...base, function: 'approve(address,uint256)', args: [RECIPIENT, '1.5'] }), {
      args: ["The args field must match the function's parameters."],
    });
    expectValidationError(await create({ ...base, function: 'approve(address,uint256)', args: 'x' }), {
      args: ['The args field must be an array.'],
    });
    expectValidationError(await create({ ...base, args: [] }), { function: ['The function field is required when args is present.'] });
    expectValidationError(await create({ ...base, data: '0x', function: 'ping()' }), {
      data: ['The data field is prohibited when function is present.'],
    });
  });

  it('needs the native token and an amount, which may be 0 but not negative', async () => {
    const tokenRes = await t.request('POST', `/api/wallet/${w.id}/token/add`, { token: alice.token, body: { contract: usd } });
    expect(tokenRes.status, tokenRes.text).toBe(200);
    expectValidationError(await create({ ...base, token: 'TUSD', data: '0x' }), {
      token: ['The token field must be the native token for a contract call.'],
    });
    expectValidationError(await create({ token: 'ETH', address: base.address, data: '0x' }), { amount: ['The amount field is required.'] });
    expectValidationError(await create({ ...base, amount: '-1', data: '0x' }), { amount: ['The amount field must be at least 0.'] });
  });
});
