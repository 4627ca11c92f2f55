/**
 * Reconciliation through HTTP against a real anvil (docs/reconciliation.md): a wallet funded by a
 * real transfer, a token already held when it was added, native and ERC-20 transfers out, a
 * native charge paid and swept, an ERC-20 charge paid and swept after its gas top-up, a contract
 * call that reverted and a cancelled transfer (fee only): ok, every difference zero, the token's
 * figures exact. Then anvil_setBalance on the main address shows exactly that difference (again
 * on the next answer, and in /metrics) until accepted: an API key gets 403, a login token's
 * accept lists the adjustment and the answer is ok again. The checks' order (401, 404 for another
 * user's wallet, 422, 400), the CLI's lines and exit codes, the daily run.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { encodeAbiParameters, keccak256, parseEther, type Address } from 'viem';
import { ManualClock, startTestApp, type TestApp, type TestUser } from '../helpers/app.js';
import { startTestChain, type TestChain } from '../helpers/chain.js';
import { deployErc20, erc20BalanceOf, mintErc20 } from '../helpers/erc20.js';
import { runCli } from '../helpers/process.js';
import { waitFor } from '../helpers/wait.js';
import { TEST_APP_KEY } from '../helpers/app.js';
import { chargeApi, clockToChain, pay } from '../charges/support.js';
import { RECIPIENT, waitForCursor, waitForStatus } from '../helpers/transfers.js';
import { reconcileDaily } from '../../src/workers/housekeeping.js';

const ZERO = '0.000000000000000000';
const TOK = 10n ** 6n; // the test token has 6 decimals
const DAY_MS = 24 * 60 * 60 * 1000;

describe('reconciliation', () => {
  const clock = new ManualClock();
  let chain: TestChain;
  let t: TestApp;
  let alice: TestUser;
  let bob: TestUser;
  let wallet: { id: number; address: Address };
  let tok: Address;
  let networkId: number;

  const get = (token = alice.token, id = wallet.id) => t.request('GET', `/api/wallet/${id}/reconciliation`, { token });
  const accept = (body: unknown, token: string | null = alice.token, id = wallet.id) =>
    t.request('POST', `/api/wallet/${id}/reconciliation/accept`, { token, body });
  const create = (body: unknown) => t.request('POST', `/api/wallet/${wallet.id}/transaction/create`, { token: alice.token, body });
  const gauge = async () =>
    Number(/^reconciliation_unreconciled_addresses (\d+)$/m.exec(await (await fetch(`${t.url}/metrics`)).text())?.[1]);

  /** Mines a block and waits until the service's confirmed head includes everything before it. */
  async function settleHead(): Promise<number> {
    await chain.mine(1);
    return waitForCursor(t, networkId, await chain.blockNumber());
  }

  beforeAll(async () => {
    chain = await startTestChain();
    t = await startTestApp({ clock, env: { CHARGES_POLL_MS: '50', WATCHER_POLL_MS: '50' } });
    networkId = await chain.register(t);
    alice = await t.createUser();
    bob = await t.createUser();
    wallet = (await t.request('POST', '/api/wallet/create', { token: alice.token, body: { name: 'Shop', network_id: networkId } })).body
      .data;
    t.startWorkers();
    await waitForCursor(t, networkId);
  });
  afterAll(async () => {
    await t?.close();
    await chain?.stop();
  });

  it('accounts for every wei of a busy wallet: ok, every difference zero', async () => {
    // Funded by a real transfer (a recorded receipt); a token held before it is added.
    await pay(chain.rpcUrl, wallet.address, parseEther('10'));
    tok = await deployErc20(chain.rpcUrl, { name: 'Test Token', symbol: 'TOK', decimals: 6 });
    await mintErc20(chain.rpcUrl, tok, wallet.address, 100n * TOK);
    expect((await t.request('POST', `/api/wallet/${wallet.id}/token/add`, { token: alice.token, body: { contract: tok } })).status).toBe(
      200,
    );
    await mintErc20(chain.rpcUrl, tok, wallet.address, 50n * TOK);

    // Transfers out: native and ERC-20.
    const eth = await create({ amount: '1', token: 'ETH', address: RECIPIENT });
    expect(eth.status, eth.text).toBe(200);
    await waitForStatus(t, alice, wallet.id, eth.body.data.id, 'confirmed');
    const tokOut = await create({ amount: '10', token: 'TOK', address: RECIPIENT });
    expect(tokOut.status, tokOut.text).toBe(200);
    await waitForStatus(t, alice, wallet.id, tokOut.body.data.id, 'confirmed');
    // And a token call: the token's transfer() through the contract-call route moves 5 TOK out.
    const tokCall = await create({
      amount: '0',
      token: 'ETH',
      address: tok,
      function: 'transfer(address,uint256)',
      args: [RECIPIENT, (5n * TOK).toString()],
    });
    expect(tokCall.status, tokCall.text).toBe(200);
    await waitForStatus(t, alice, wallet.id, tokCall.body.data.id, 'confirmed');

    await revertedContractCall();
    await cancelledTransfer();
    await chargesPaidAndSwept();
    await settleHead();

    const res = await get();
    expect(res.status, res.text).toBe(200);
    const r = res.body.data;
    expect(r.unswept).toEqual([]);
    expect(r.adjustments).toEqual([]);
    const lines = r.addresses.flatMap((a: any) => a.tokens.map((x: any) => ({ ...x, address: a.address, kind: a.kind })));
    expect(lines.filter((x: any) => x.difference !== ZERO)).toEqual([]);
    expect(r.ok).toBe(true);
    expect(r.addresses.map((a: any) => a.kind)).toEqual(['main', 'deposit', 'deposit']);

    const main = r.addresses[0];
    expect(main).toMatchObject({ address: wallet.address, charge_id: null });
    // TOK: 100 held when added (the checkpoint), +50 minted −10 sent −5 by a token call +20 swept in = +55.
    expect(main.tokens.find((x: any) => x.token === 'TOK')).toEqual({
      token: 'TOK',
      checkpoint_block: expect.any(Number),
      checkpoint_balance: '100.000000000000000000',
      recorded_change: '55.000000000000000000',
      chain_balance: '155.000000000000000000',
      difference: ZERO,
    });
    // ETH: from 0 at block 0; the chain's balance at the answer's block, to the wei.
    const ethAtHead = BigInt(await chain.rpc<string>('eth_getBalance', [wallet.address, `0x${r.block_number.toString(16)}`]));
    expect(main.tokens.find((x: any) => x.token === 'ETH')).toEqual({
      token: 'ETH',
      checkpoint_block: 0,
      checkpoint_balance: ZERO,
      recorded_change: dec(ethAtHead),
      chain_balance: dec(ethAtHead),
      difference: ZERO,
    });
    expect(await erc20BalanceOf(chain.rpcUrl, tok, wallet.address)).toBe(155n * TOK);
    // Every fee paid is stored, to the wei: gas used × effective price (no L1 fee on anvil).
    const rows = await t.store.db
      .selectFrom('transactions')
      .select(['fee_paid', 'gas_used', 'gas_price'])
      .where('wallet_id', '=', wallet.id)
      .where('type', '<>', 'receipt')
      .execute();
    expect(rows.length).toBe(6); // ETH, TOK, the token call, the reverted call, the cancelled transfer, the top-up
    for (const row of rows) expect(BigInt(row.fee_paid!)).toBe(BigInt(row.gas_used!) * BigInt(row.gas_price!));
    expect(await gauge()).toBe(0);
  });

  /** A contract call that passed its estimate, then reverted when mined (its contract's code swapped for a REVERT while it waited): fee only. */
  async function revertedContractCall(): Promise<void> {
    const other = await deployErc20(chain.rpcUrl, { name: 'Other', symbol: 'OTH', decimals: 18 });
    await mintErc20(chain.rpcUrl, other, wallet.address, 5n);
    await chain.rpc('evm_setAutomine', [false]);
    try {
      const call = await create({
        amount: '0',
        token: 'ETH',
        address: other,
        function: 'transfer(address,uint256)',
        args: [RECIPIENT, '5'],
      });
      expect(call.status, call.text).toBe(200);
      await waitFor(() => chain.rpc('eth_getTransactionByHash', [call.body.data.tx_hash]), { message: 'call in the pool' });
      await chain.rpc('anvil_setCode', [other, '0x60006000fd']); // PUSH1 0 PUSH1 0 REVERT
      await chain.mine(1);
      const failed = await waitForStatus(t, alice, wallet.id, call.body.data.id, 'failed');
      expect(failed.receipt_status).toBe(false);
    } finally {
      await chain.rpc('evm_setAutomine', [true]);
    }
  }

  /** A transfer replaced by its cancel, which mined (a 0-value self-transfer): fee only. */
  async function cancelledTransfer(): Promise<void> {
    await chain.rpc('evm_setAutomine', [false]);
    try {
      const sent = await create({ amount: '0.3', token: 'ETH', address: RECIPIENT });
      expect(sent.status, sent.text).toBe(200);
      const cancel = await t.request('POST', `/api/wallet/${wallet.id}/transaction/${sent.body.data.id}/cancel`, {
        token: alice.token,
        body: {},
      });
      expect(cancel.status, cancel.text).toBe(200);
      await waitFor(() => chain.rpc('eth_getTransactionByHash', [cancel.body.data.tx_hash]), { message: 'cancel in the pool' });
      await chain.mine(1);
      const failed = await waitForStatus(t, alice, wallet.id, sent.body.data.id, 'failed');
      expect(failed.failure_reason).toBe('cancelled');
    } finally {
      await chain.rpc('evm_setAutomine', [true]);
    }
  }

  /** A native charge paid and swept; an ERC-20 charge paid, its gas topped up, swept (token, then the ether left). */
  async function chargesPaidAndSwept(): Promise<void> {
    const api = chargeApi(t, wallet.id, alice.token);
    await clockToChain(clock, chain);
    const native = await api.create({ amount: '0.5', token: 'ETH', expires: 600 });
    await pay(chain.rpcUrl, native.address, parseEther('0.5'));
    const token = await api.create({ amount: '20', token: 'TOK', expires: 600 });
    await mintErc20(chain.rpcUrl, tok, token.address, 20n * TOK);
    const swept = (c: any) =>
      c.status === 'paid' && c.sweeps.length > 0 && c.sweeps.every((s: { status: string }) => s.status === 'confirmed');
    await api.until(native.id, swept, 'native charge swept', 30_000);
    await api.until(token.id, (c) => swept(c) && c.sweeps.some((s: { token: string }) => s.token === 'TOK'), 'token charge swept', 30_000);
    await waitFor(
      async () =>
        (await chain.rpc<string>('eth_getBalance', [token.address, 'latest'])) === '0x0' &&
        (await api.show(token.id)).sweeps.every((s: { status: string }) => s.status === 'confirmed'),
      {
        timeoutMs: 30_000,
        message: 'the ether left after the token sweep swept too',
      },
    );
  }

  it('shows a balance the records do not explain, exactly, until it is accepted', async () => {
    const before = BigInt(await chain.rpc<string>('eth_getBalance', [wallet.address, 'latest']));
    await chain.setBalance(wallet.address, before + parseEther('0.5'));
    const head = await settleHead();

    for (let i = 0; i < 2; i++) {
      const r = (await get()).body.data;
      expect(r.ok).toBe(false);
      expect(r.block_number).toBeGreaterThanOrEqual(head);
      const eth = r.addresses[0].tokens.find((x: any) => x.token === 'ETH');
      expect(eth.difference).toBe('0.500000000000000000');
      expect(r.addresses.flatMap((a: any) => a.tokens).filter((x: any) => x.difference !== ZERO)).toHaveLength(1);
    }
    expect(await gauge()).toBe(1);

    // An API key, even with every scope, may not accept.
    const key = (await t.request('POST', '/api/auth/key/create', { token: alice.token, body: { name: 'ops', scopes: ['*'] } })).body.data
      .key;
    const refused = await accept({ note: 'found on chain' }, key);
    expect(refused.status).toBe(403);
    expect(refused.body.message).toBe('Insufficient scope');
    expect((await get(key)).status).toBe(200); // reading is fine with a key

    const accepted = await accept({ note: 'anvil_setBalance in the test' });
    expect(accepted.status, accepted.text).toBe(200);
    const block = accepted.body.data.block_number;
    expect(accepted.body.data.ok).toBe(true);
    const adjustment = {
      address: wallet.address,
      token: 'ETH',
      amount: '0.500000000000000000',
      block_number: block,
      note: 'anvil_setBalance in the test',
      created_at: expect.stringMatching(/^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d$/),
    };
    expect(accepted.body.data.adjustments).toEqual([adjustment]);
    const next = (await get()).body.data;
    expect(next.ok).toBe(true);
    expect(next.adjustments).toEqual([adjustment]);
    expect(next.addresses[0].tokens.find((x: any) => x.token === 'ETH')).toMatchObject({ checkpoint_block: block, difference: ZERO });
    expect(await gauge()).toBe(0);
  });

  it('answers in the usual order: 401, 404 (another user’s wallet), 422, 400', async () => {
    expect((await t.request('GET', `/api/wallet/${wallet.id}/reconciliation`)).status).toBe(401);
    expect((await accept({ note: 'x' }, null)).status).toBe(401);
    const other = await get(bob.token);
    expect([other.status, other.body.message]).toEqual([404, 'Wallet not found']);
    expect((await accept({ note: 'x' }, bob.token)).status).toBe(404);
    expect((await accept({}, bob.token)).status).toBe(404);
    const missing = await accept({});
    expect(missing.status).toBe(422);
    expect(Object.keys(missing.body.data)).toEqual(['note']);
    const nothing = await accept({ note: 'nothing to see' });
    expect([nothing.status, nothing.body.message]).toEqual([400, 'Nothing to accept: every difference is zero']);
  });

  it('a token balance changed outside the records is a difference of that token; removing the token stops counting it', async () => {
    const dai = await deployErc20(chain.rpcUrl, { name: 'Dai', symbol: 'DAI', decimals: 18 });
    const added = await t.request('POST', `/api/wallet/${wallet.id}/token/add`, { token: alice.token, body: { contract: dai } });
    expect(added.status, added.text).toBe(200);
    // balanceOf(main) is storage slot keccak256(main, 4) of the test token: 7 DAI appear, no Transfer.
    const slot = keccak256(encodeAbiParameters([{ type: 'address' }, { type: 'uint256' }], [wallet.address, 4n]));
    await chain.rpc('anvil_setStorageAt', [dai, slot, `0x${(7n * 10n ** 18n).toString(16).padStart(64, '0')}`]);
    await settleHead();
    const r = (await get()).body.data;
    expect(r.addresses[0].tokens.find((x: any) => x.token === 'DAI')).toMatchObject({
      checkpoint_balance: ZERO,
      recorded_change: ZERO,
      chain_balance: '7.000000000000000000',
      difference: '7.000000000000000000',
    });
    const flag = () =>
      t.store.db
        .selectFrom('reconciliation_checkpoints')
        .select('unreconciled')
        .where('token_id', '=', added.body.data.id)
        .where('address', '=', r.addresses[0].address) // the main address's line (each deposit address has its own)
        .executeTakeFirstOrThrow();
    expect(Number((await flag()).unreconciled)).toBe(1);

    expect((await t.request('GET', `/api/wallet/${wallet.id}/token/remove/${added.body.data.id}`, { token: alice.token })).status).toBe(
      200,
    );
    const after = (await get()).body.data;
    expect(after.addresses[0].tokens.map((x: any) => x.token)).not.toContain('DAI');
    expect(Number((await flag()).unreconciled)).toBe(0);
  });

  it('is in the OpenAPI document, with its schemas', async () => {
    const doc = await (await fetch(`${t.url}/api/openapi.json`)).json();
    const get = doc.paths['/api/wallet/{wallet}/reconciliation'].get;
    const post = doc.paths['/api/wallet/{wallet}/reconciliation/accept'].post;
    expect(Object.keys(get.responses['200'].content['application/json'].schema.properties.data.properties).sort()).toEqual([
      'addresses',
      'adjustments',
      'block_number',
      'ok',
      'unswept',
    ]);
    expect(post.requestBody.content['application/json'].schema.required).toEqual(['note']);
    expect(Object.keys(post.responses)).toContain('403');
  });

  it('cli reconcile: one JSON line per wallet, exit 0 when all are ok, 1 otherwise; the daily run warns per difference', async () => {
    const env = {
      NODE_ENV: 'test',
      DATA_DIR: t.database.dataDir,
      APP_KEY: TEST_APP_KEY,
      ...(t.database.databaseUrl ? { DATABASE_URL: t.database.databaseUrl } : {}),
    };
    const good = await runCli(['reconcile'], env);
    expect(good.code, good.stdout).toBe(0);
    expect(good.json).toMatchObject({ wallet_id: wallet.id, ok: true, unswept: [] });

    const before = BigInt(await chain.rpc<string>('eth_getBalance', [wallet.address, 'latest']));
    await chain.setBalance(wallet.address, before - parseEther('0.25'));
    await settleHead();
    const bad = await runCli(['reconcile', '--wallet', String(wallet.id)], env);
    expect(bad.code, bad.stdout).toBe(1);
    expect(
      bad.stdout
        .trim()
        .split('\n')
        .filter((l) => l.startsWith('{')),
    ).toHaveLength(1);
    expect(bad.json.ok).toBe(false);
    expect(bad.json.addresses[0].tokens.find((x: any) => x.token === 'ETH').difference).toBe('-0.250000000000000000');
    const unknown = await runCli(['reconcile', '--wallet', '999999'], env);
    expect([unknown.code, unknown.json]).toEqual([1, { wallet_id: 999999, error: 'Wallet not found' }]);

    // The daily run: the first a day after the service first started, then once per day across
    // processes; a warning line per difference.
    expect(await reconcileDaily(t.ctx, t.ctx.log)).toBe(false);
    clock.advance(DAY_MS);
    expect(await reconcileDaily(t.ctx, t.ctx.log)).toBe(true);
    expect(await reconcileDaily(t.ctx, t.ctx.log)).toBe(false);
    const warned = t.logs.filter((l) => l.includes('"reconciliation difference"')).map((l) => JSON.parse(l));
    expect(warned).toHaveLength(1);
    expect(warned[0]).toMatchObject({ wallet_id: wallet.id, address: wallet.address, symbol: 'ETH', difference: '-0.250000000000000000' });
  });
});

function dec(wei: bigint): string {
  const m = wei < 0n ? -wei : wei;
  return `${wei < 0n ? '-' : ''}${m / 10n ** 18n}.${(m % 10n ** 18n).toString().padStart(18, '0')}`;
}
