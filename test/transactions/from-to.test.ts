/**
 * Every Transaction shows `from` and `to`, checksummed (EIP-55), through HTTP on a real anvil, on
 * SQLite and (DATABASE_URL) PostgreSQL: a native send and an ERC-20 send (`to` the recipient,
 * not the token contract the chain's transaction goes to), a contract call (`to` the contract),
 * receipts of native coin, of a token and of coin a contract forwarded (`from` the sender, `to`
 * the wallet), a transfer awaiting approval; and a payout awaiting approval shows its items'
 * addresses. Addresses are given in lower case and the node answers in lower case: each shown is
 * mixed case. The create response, the show route, a short list page (the rows formatted in
 * JavaScript) and a long one (the items' JSON written by the database) agree, byte for byte.
 */
import { createWalletClient, erc20Abi, getAddress, http, type Address, type Hex } from 'viem';
import { foundry } from 'viem/chains';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp, type TestUser } from '../helpers/app.js';
import { startTestChain, type TestChain } from '../helpers/chain.js';
import { deployErc20, deployForwarder, forwardValue, mintErc20 } from '../helpers/erc20.js';
import {
  ETH,
  fundedWallet,
  OUTSIDER,
  OUTSIDER_KEY,
  publicClient,
  RECIPIENT,
  sendFromOutsider,
  waitForCursor,
  waitForStatus,
  type FundedWallet,
} from '../helpers/transfers.js';
import { waitFor } from '../helpers/wait.js';

/** anvil's dev accounts #8, #7 and #6: recipients outside the service. */
const SECOND: Address = '0x23618e81E3f5cdF7f54C3d65f7FBc0aBf5B21E8f';
const PAYEE_A: Address = '0x14dC79964da2C08b23698B3D3cc7Ca32193d9955';
const PAYEE_B: Address = '0x976EA74026E726554dB657fA54763abd0C3a0aa9';

let t: TestApp;
let chain: TestChain;
let alice: TestUser;
let usd: Address;
let w: FundedWallet;
let held: FundedWallet;
/** OUTSIDER's token transfer that funds the wallet's TUSD (a mint would come from the zero address). */
let funding: Hex;

beforeAll(async () => {
  t = await startTestApp({ workers: true });
  chain = await startTestChain();
  const networkId = await chain.register(t);
  await waitForCursor(t, networkId);
  alice = await t.createUser();
  usd = getAddress(await deployErc20(chain.rpcUrl, { name: 'Test USD', symbol: 'TUSD', decimals: 6 }));
  w = await fundedWallet(t, chain, alice, networkId, 10n * ETH);
  held = await fundedWallet(t, chain, alice, networkId, 10n * ETH);
  const added = await t.request('POST', `/api/wallet/${w.id}/token/add`, { token: alice.token, body: { contract: usd } });
  expect(added.status, added.text).toBe(200);
  await mintErc20(chain.rpcUrl, usd, OUTSIDER.address, 10_000_000n);
  const outsider = createWalletClient({ account: OUTSIDER, chain: foundry, transport: http(chain.rpcUrl) });
  funding = await outsider.writeContract({
    address: usd,
    abi: erc20Abi,
    functionName: 'transfer',
    args: [w.address as Address, 3_000_000n],
  });
  await receiptOf(w.id, funding);
  const policy = await t.request('POST', `/api/wallet/${held.id}/policy`, {
    token: alice.token,
    body: { approval_above: { ETH: '0.5' } },
  });
  expect(policy.status, policy.text).toBe(200);
});

afterAll(async () => {
  await t?.close();
  await chain?.stop();
});

const create = (walletId: number, body: Record<string, unknown>) =>
  t.request('POST', `/api/wallet/${walletId}/transaction/create`, { token: alice.token, body });
const show = (walletId: number, id: number) => t.request('GET', `/api/wallet/${walletId}/transaction/show/${id}`, { token: alice.token });

/** Mixed case, and the EIP-55 checksum of itself. */
function expectChecksummed(address: string): void {
  expect(address).toBe(getAddress(address));
  expect(address).not.toBe(address.toLowerCase());
}

/** The wallet's receipt of `txHash`, once the watcher has recorded and confirmed it. */
async function receiptOf(walletId: number, txHash: Hex) {
  return waitFor(
    async () => {
      const list = await t.request('GET', `/api/wallet/${walletId}/transaction?limit=50`, { token: alice.token });
      const r = list.body.data.find((x: any) => x.type === 'receipt' && x.tx_hash === txHash);
      return r?.status === 'confirmed' ? r : null;
    },
    { timeoutMs: 20_000, message: `receipt ${txHash}` },
  );
}

describe('from and to of each kind of transaction', () => {
  it('a native send: from the wallet, to the recipient given in lower case, checksummed', async () => {
    expectChecksummed(w.address);
    const res = await create(w.id, { amount: '0.1', token: 'ETH', address: RECIPIENT.toLowerCase() });
    expect(res.status, res.text).toBe(200);
    expect(res.body.data).toMatchObject({ type: 'transfer', from: w.address, to: '0xa0Ee7A142d267C1f36714E4a8F75612F20a79720' });
    const confirmed = await waitForStatus(t, alice, w.id, res.body.data.id, 'confirmed');
    expect([confirmed.from, confirmed.to]).toEqual([w.address, '0xa0Ee7A142d267C1f36714E4a8F75612F20a79720']);
  });

  it('an ERC-20 send: to the recipient, not the token contract the chain transaction calls', async () => {
    const res = await create(w.id, { amount: '2.5', token: 'TUSD', address: SECOND.toLowerCase() });
    expect(res.status, res.text).toBe(200);
    expect(res.body.data).toMatchObject({ symbol: 'TUSD', amount: '2.500000000000000000', from: w.address, to: SECOND });
    const onChain = await publicClient(chain.rpcUrl).getTransaction({ hash: res.body.data.tx_hash as Hex });
    expect(getAddress(onChain.to!)).toBe(usd);
    const confirmed = await waitForStatus(t, alice, w.id, res.body.data.id, 'confirmed');
    expect([confirmed.from, confirmed.to]).toEqual([w.address, '0x23618e81E3f5cdF7f54C3d65f7FBc0aBf5B21E8f']);
  });

  it('a contract call: to the contract, given in lower case', async () => {
    const res = await create(w.id, {
      amount: '0',
      token: 'ETH',
      address: usd.toLowerCase(),
      function: 'approve(address,uint256)',
      args: [SECOND, '1000'],
    });
    expect(res.status, res.text).toBe(200);
    expectChecksummed(usd);
    expect(res.body.data).toMatchObject({ type: 'contract', from: w.address, to: usd });
    const confirmed = await waitForStatus(t, alice, w.id, res.body.data.id, 'confirmed');
    expect([confirmed.from, confirmed.to]).toEqual([w.address, usd]);
  });

  it('receipts: from the sender (native, a token transfer, coin a contract forwarded), to the wallet', async () => {
    const native = await receiptOf(w.id, await sendFromOutsider(chain.rpcUrl, w.address as Address, ETH / 4n));
    expect(native).toMatchObject({ amount: '0.250000000000000000', symbol: 'ETH', internal: false });
    expect([native.from, native.to]).toEqual(['0x70997970C51812dc3A010C7d01b50e0d17dc79C8', w.address]);
    expect(OUTSIDER.address).toBe('0x70997970C51812dc3A010C7d01b50e0d17dc79C8');

    const token = await receiptOf(w.id, funding);
    expect(token).toMatchObject({ amount: '3.000000000000000000', symbol: 'TUSD' });
    expect([token.from, token.to]).toEqual([OUTSIDER.address, w.address]);

    // Coin a contract sent on inside OUTSIDER's transaction: stored with that transaction's sender
    // (docs/charges.md, "Internal transfers"), so `from` is OUTSIDER, not the forwarder.
    const forwarder = await deployForwarder(chain.rpcUrl);
    const carried = await forwardValue(chain.rpcUrl, forwarder, w.address as Address, ETH / 8n, { account: OUTSIDER_KEY });
    const internal = await receiptOf(w.id, carried);
    expect(internal).toMatchObject({ amount: '0.125000000000000000', internal: true });
    expect([internal.from, internal.to]).toEqual([OUTSIDER.address, w.address]);
  });

  it('a transfer awaiting approval: from and to in the create response, the show route and the list', async () => {
    expectChecksummed(held.address);
    const res = await create(held.id, { amount: '0.7', token: 'ETH', address: SECOND.toLowerCase() });
    expect(res.status, res.text).toBe(200);
    expect(res.body.data).toMatchObject({ status: 'awaiting_approval', tx_hash: null, from: held.address, to: SECOND });
    const shown = await show(held.id, res.body.data.id);
    expect(shown.body.data).toMatchObject({ status: 'awaiting_approval', from: held.address, to: SECOND });
  });

  it("a payout awaiting approval shows each item's address, checksummed, to the approver", async () => {
    const res = await t.request('POST', `/api/wallet/${held.id}/payout/create`, {
      token: alice.token,
      body: {
        token: 'ETH',
        items: [
          { address: PAYEE_A.toLowerCase(), amount: '0.3', reference: 'inv-a' },
          { address: PAYEE_B.toLowerCase(), amount: '0.4', reference: 'inv-b' },
        ],
      },
    });
    expect([res.status, res.body.data?.status], res.text).toEqual([200, 'awaiting_approval']);
    const expected = [
      { address: '0x14dC79964da2C08b23698B3D3cc7Ca32193d9955', amount: '0.300000000000000000', reference: 'inv-a' },
      { address: '0x976EA74026E726554dB657fA54763abd0C3a0aa9', amount: '0.400000000000000000', reference: 'inv-b' },
    ];
    expect(res.body.data.items).toMatchObject(expected);
    const shown = await t.request('GET', `/api/wallet/${held.id}/payout/${res.body.data.id}`, { token: alice.token });
    expect(shown.body.data).toMatchObject({ status: 'awaiting_approval', total: '0.700000000000000000', items: expected });
    const listed = await t.request('GET', `/api/wallet/${held.id}/payout`, { token: alice.token });
    expect(listed.body.data.find((p: any) => p.id === res.body.data.id).items).toMatchObject(expected);
  });
});

describe('the list and the show route agree', () => {
  it.each([
    ['the wallet', () => w],
    ['the wallet with a transfer held', () => held],
  ])('%s: a short page, a long page and each show, byte for byte, addresses checksummed', async (_, wallet) => {
    const { id } = wallet();
    const short = await t.request('GET', `/api/wallet/${id}/transaction?limit=10`, { token: alice.token });
    // From 100 items a page the database writes each item's JSON (transactions.item-json.repository.ts).
    const long = await t.request('GET', `/api/wallet/${id}/transaction?limit=1000`, { token: alice.token });
    expect(long.headers.get('transfer-encoding')).toBe('chunked');
    expect(JSON.stringify(long.body.data)).toBe(JSON.stringify(short.body.data));
    for (const item of long.body.data) {
      expectChecksummed(item.from);
      expectChecksummed(item.to);
      const { wallet_token, ...rest } = (await show(id, item.id)).body.data;
      expect(wallet_token.symbol).toBe(item.symbol);
      expect(JSON.stringify(rest)).toBe(JSON.stringify(item));
    }
  });

  it('lists what each row shows, newest first', async () => {
    const rows = async (walletId: number) =>
      (await t.request('GET', `/api/wallet/${walletId}/transaction?limit=1000`, { token: alice.token })).body.data.map((x: any) => [
        x.type,
        x.symbol,
        x.from,
        x.to,
      ]);
    expect(await rows(w.id)).toEqual([
      ['receipt', 'ETH', OUTSIDER.address, w.address],
      ['receipt', 'ETH', OUTSIDER.address, w.address],
      ['contract', 'ETH', w.address, usd],
      ['transfer', 'TUSD', w.address, SECOND],
      ['transfer', 'ETH', w.address, RECIPIENT],
      ['receipt', 'TUSD', OUTSIDER.address, w.address],
    ]);
    expect(await rows(held.id)).toEqual([['transfer', 'ETH', held.address, SECOND]]);
  });
});
