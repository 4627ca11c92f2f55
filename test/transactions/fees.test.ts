/**
 * EIP-1559 fees on anvil (whose blocks carry a base fee): a transfer goes out as type 2 with
 * the level's or the caller's fees, the response's gas_price is the max fee, the fee preview
 * has three ordered levels and sends nothing, the balance check reserves gas × max fee, and
 * the new fields are validated in the contract's wording.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Hex } from 'viem';
import { startTestApp, type TestApp, type TestUser } from '../helpers/app.js';
import { startTestChain, type TestChain } from '../helpers/chain.js';
import { expectValidationError } from '../helpers/expect.js';
import { dec18, ETH, fundedWallet, highMaxFeePerGas, publicClient, RECIPIENT, waitForCursor, waitForStatus } from '../helpers/transfers.js';

let t: TestApp;
let chain: TestChain;
let networkId: number;
let alice: TestUser;

beforeAll(async () => {
  t = await startTestApp({ workers: true });
  chain = await startTestChain();
  networkId = await chain.register(t);
  await waitForCursor(t, networkId);
  alice = await t.createUser();
});

afterAll(async () => {
  await t?.close();
  await chain?.stop();
});

const create = (walletId: number, body: unknown) =>
  t.request('POST', `/api/wallet/${walletId}/transaction/create`, { token: alice.token, body });

async function feeColumns(id: number) {
  return t.store.db
    .selectFrom('transactions')
    .select(['tx_kind', 'max_fee_per_gas', 'max_priority_fee_per_gas', 'fee_reserved', 'gas', 'gas_price', 'l1_fee'])
    .where('id', '=', id)
    .executeTakeFirstOrThrow();
}

describe('EIP-1559 transfers', () => {
  it('sends a type 2 transaction at the medium level by default, gas_price being its max fee', async () => {
    const w = await fundedWallet(t, chain, alice, networkId, 10n * ETH);
    const res = await create(w.id, { amount: '1', token: 'ETH', address: RECIPIENT });
    expect(res.status).toBe(200);
    const onChain = await publicClient(chain.rpcUrl).getTransaction({ hash: res.body.data.tx_hash as Hex });
    expect(onChain.type).toBe('eip1559');
    expect(onChain.value).toBe(ETH);
    const row = await feeColumns(res.body.data.id);
    expect(row.tx_kind).toBe('eip1559');
    expect(BigInt(row.max_fee_per_gas!)).toBe(onChain.maxFeePerGas);
    expect(BigInt(row.max_priority_fee_per_gas!)).toBe(onChain.maxPriorityFeePerGas);
    expect(BigInt(row.gas_price!)).toBe(onChain.maxFeePerGas);
    // The creation response's gas_price (a JSON number, ETH per gas unit) is the max fee.
    expect(res.body.data.gas_price).toBe(Number(onChain.maxFeePerGas!) / 1e18);
    // Reserved: every unit of gas at the max fee.
    expect(BigInt(row.fee_reserved)).toBe(BigInt(row.gas!) * onChain.maxFeePerGas!);
    await waitForStatus(t, alice, w.id, res.body.data.id, 'confirmed');
  });

  it('uses explicit max_fee_per_gas and max_priority_fee_per_gas exactly as given', async () => {
    const w = await fundedWallet(t, chain, alice, networkId, 10n * ETH);
    // Within the cap (3× the high level): twice the high level, a tip of half that.
    const maxFee = 2n * (await highMaxFeePerGas(t, alice, w.id)) + 7n;
    const tip = maxFee / 2n;
    const res = await create(w.id, {
      amount: '0.25',
      token: 'ETH',
      address: RECIPIENT,
      max_fee_per_gas: dec18(maxFee),
      max_priority_fee_per_gas: dec18(tip),
    });
    expect(res.status, res.text).toBe(200);
    expect(res.body.data.gas_price).toBe(Number(dec18(maxFee)));
    const onChain = await publicClient(chain.rpcUrl).getTransaction({ hash: res.body.data.tx_hash as Hex });
    expect(onChain.type).toBe('eip1559');
    expect(onChain.maxFeePerGas).toBe(maxFee);
    expect(onChain.maxPriorityFeePerGas).toBe(tip);
    const confirmed = await waitForStatus(t, alice, w.id, res.body.data.id, 'confirmed');
    // Once mined, gas_price is what was paid per gas (base fee + tip, at most the max fee).
    const receipt = await publicClient(chain.rpcUrl).getTransactionReceipt({ hash: res.body.data.tx_hash as Hex });
    expect(receipt.effectiveGasPrice <= maxFee).toBe(true);
    expect(confirmed.gas_price).toBe(`0.${receipt.effectiveGasPrice.toString().padStart(18, '0')}`);
  });

  it('sends at the high level a tip at least the medium one', async () => {
    const w = await fundedWallet(t, chain, alice, networkId, 10n * ETH);
    const medium = await create(w.id, { amount: '0.1', token: 'ETH', address: RECIPIENT, fee_level: 'medium' });
    const high = await create(w.id, { amount: '0.1', token: 'ETH', address: RECIPIENT, fee_level: 'high' });
    expect([medium.status, high.status]).toEqual([200, 200]);
    const client = publicClient(chain.rpcUrl);
    const [m, h] = await Promise.all([medium, high].map((r) => client.getTransaction({ hash: r.body.data.tx_hash as Hex })));
    expect(h!.maxPriorityFeePerGas! >= m!.maxPriorityFeePerGas!).toBe(true);
    expect(h!.maxPriorityFeePerGas! > 0n).toBe(true);
  });

  it('reserves gas × max fee: one wei short of it is 400, exactly it is accepted', async () => {
    const w = await fundedWallet(t, chain, alice, networkId, ETH);
    // Twice the high level: above what it will pay, within the cap.
    const perGas = 2n * (await highMaxFeePerGas(t, alice, w.id));
    const body = {
      amount: '1',
      token: 'ETH',
      address: RECIPIENT,
      max_fee_per_gas: dec18(perGas),
      max_priority_fee_per_gas: dec18(perGas / 2n),
    };
    const maxFee = 21_000n * perGas;
    await chain.setBalance(w.address, ETH + maxFee - 1n);
    const short = await create(w.id, body);
    expect(short.status).toBe(400);
    expect(short.body.message).toBe('Insufficient balance for transaction');
    await chain.setBalance(w.address, ETH + maxFee);
    const enough = await create(w.id, body);
    expect(enough.status).toBe(200);
    expect(BigInt((await feeColumns(enough.body.data.id)).fee_reserved)).toBe(maxFee);
  });
});

describe('fee preview', () => {
  it('returns the base fee, the gas and three ordered levels, and sends nothing', async () => {
    const w = await fundedWallet(t, chain, alice, networkId, 5n * ETH);
    const client = publicClient(chain.rpcUrl);
    const nonceBefore = await client.getTransactionCount({ address: w.address, blockTag: 'pending' });
    const res = await t.request('GET', `/api/wallet/${w.id}/transaction/fees?token=ETH&address=${RECIPIENT}&amount=1.5`, {
      token: alice.token,
    });
    expect(res.status).toBe(200);
    const d = res.body.data;
    expect(d.gas).toBe('21000.000000000000000000');
    expect(d.type).toBe('eip1559');
    const block = await client.getBlock({ blockTag: 'latest' });
    const baseFee = BigInt(Math.round(Number(d.base_fee) * 1e18));
    expect(baseFee <= block.baseFeePerGas! * 2n && baseFee > 0n).toBe(true);
    const wei = (s: string) => {
      const [i, f = ''] = s.split('.');
      return BigInt(i!) * ETH + BigInt(f.padEnd(18, '0'));
    };
    const levels = ['low', 'medium', 'high'].map((l) => d.levels[l]);
    for (const l of levels) {
      expect(l.max_fee_per_gas).toMatch(/^\d+\.\d{18}$/);
      expect(wei(l.max_fee)).toBe(21_000n * wei(l.max_fee_per_gas));
      expect(wei(l.max_priority_fee_per_gas) <= wei(l.max_fee_per_gas)).toBe(true);
    }
    expect(wei(levels[0].max_fee_per_gas) <= wei(levels[1].max_fee_per_gas)).toBe(true);
    expect(wei(levels[1].max_fee_per_gas) <= wei(levels[2].max_fee_per_gas)).toBe(true);
    expect(wei(levels[0].max_fee_per_gas) < wei(levels[2].max_fee_per_gas)).toBe(true);
    // Nothing was sent or recorded.
    expect(await client.getTransactionCount({ address: w.address, blockTag: 'pending' })).toBe(nonceBefore);
    const rows = await t.store.db.selectFrom('transactions').select('id').where('wallet_id', '=', w.id).execute();
    expect(rows).toEqual([]);
  });

  it('validates its query like create', async () => {
    const w = await fundedWallet(t, chain, alice, networkId, ETH);
    const res = await t.request(
      'GET',
      `/api/wallet/${w.id}/transaction/fees?token=NOPE&address=0x0000000000000000000000000000000000000000`,
      { token: alice.token },
    );
    expectValidationError(res, {
      amount: ['The amount field is required.'],
      token: ['The selected token is invalid.'],
      address: ['The address field must be a valid address.'],
    });
  });
});

describe('validation of the fee fields and the address', () => {
  let walletId: number;
  beforeAll(async () => {
    walletId = (await fundedWallet(t, chain, alice, networkId, ETH)).id;
  });

  it('rejects an unknown fee_level', async () => {
    const res = await create(walletId, { amount: '0.1', token: 'ETH', address: RECIPIENT, fee_level: 'urgent' });
    expectValidationError(res, { fee_level: ['The selected fee_level is invalid.'] });
  });

  it('rejects a tip above the max fee, and one explicit fee without the other', async () => {
    const above = await create(walletId, {
      amount: '0.1',
      token: 'ETH',
      address: RECIPIENT,
      max_fee_per_gas: '0.000000001',
      max_priority_fee_per_gas: '0.000000002',
    });
    expectValidationError(above, {
      max_priority_fee_per_gas: ['The max_priority_fee_per_gas field must be less than or equal to max_fee_per_gas.'],
    });
    const alone = await create(walletId, { amount: '0.1', token: 'ETH', address: RECIPIENT, max_fee_per_gas: '0.000000001' });
    expectValidationError(alone, { max_priority_fee_per_gas: ['The max_priority_fee_per_gas field is required.'] });
    const places = await create(walletId, {
      amount: '0.1',
      token: 'ETH',
      address: RECIPIENT,
      max_fee_per_gas: '0.0000000010000000001',
      max_priority_fee_per_gas: 'x',
    });
    expectValidationError(places, {
      max_fee_per_gas: ['The max_fee_per_gas field must not have more than 18 decimal places.'],
      max_priority_fee_per_gas: ['The max_priority_fee_per_gas field must be a number.'],
    });
  });

  it('rejects the zero address', async () => {
    const res = await create(walletId, { amount: '0.1', token: 'ETH', address: '0x0000000000000000000000000000000000000000' });
    expectValidationError(res, { address: ['The address field must be a valid address.'] });
  });
});
