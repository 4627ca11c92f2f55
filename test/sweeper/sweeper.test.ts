/**
 * contracts/Sweeper.sol on anvil, deployed from the committed artifact (src/chain/sweeper-artifact.ts)
 * the service will deploy: deposit addresses bound to their wallet, batched sweeps of native coin
 * and tokens, batched payouts, odd tokens failing alone, re-entry, and the gas each costs.
 */
import {
  concat,
  createPublicClient,
  createWalletClient,
  encodeAbiParameters,
  getAddress,
  getContractAddress,
  http,
  keccak256,
  parseAbi,
  parseEventLogs,
  toHex,
  type Abi,
  type Address,
  type Hex,
  type PublicClient,
  type TransactionReceipt,
} from 'viem';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { foundry } from 'viem/chains';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { compileSweeper } from '../../scripts/sweeper-artifact.js';
import { findFreePort, startDevnet, type Devnet } from '../../src/chain/devnet.js';
import { SWEEPER_COMPILER, sweeperAbi, sweeperBytecode } from '../../src/chain/sweeper-artifact.js';
import { compileOddContracts, type OddContractName } from './contracts.js';

const tokenAbi = parseAbi([
  'function mint(address to, uint256 amount)',
  'function balanceOf(address) view returns (uint256)',
  'function approve(address spender, uint256 amount) returns (bool)',
  'function transfer(address to, uint256 amount) returns (bool)',
  'function setPaused(bool value)',
  'function setBlacklisted(address who, bool value)',
  'function arm(address sweeper, address thief, bytes32[] salts, address[] tokens)',
  'function rounds() view returns (uint256)',
  'function successes() view returns (uint256)',
]);
const ephemeralAbi = parseAbi([
  'function sweep(bytes32[] salts, address[] tokens)',
  'function depositAddress(address destination, bytes32 salt) view returns (address)',
]);
const forwarderAbi = parseAbi(['function pull(address token, address destination) returns (bool ok, uint256 amount)']);

const NATIVE: Address = '0x0000000000000000000000000000000000000000';
const ETH = 10n ** 18n;
const MAX = 2n ** 256n - 1n;

interface Actor {
  address: Address;
  client: ReturnType<typeof walletClient>;
}

interface Outcome {
  receipt: TransactionReceipt;
  /** `deposit:token:amount` (sweeps) or `index:token:to:amount` (payouts), sorted. */
  done: string[];
  failed: string[];
}

let devnet: Devnet;
let pub: PublicClient;
let deployer: Actor;
let sweeper: Address;
let forwarder: Address;
let saltCount = 0;

function walletClient(key: Hex) {
  const transport = http(devnet.rpcUrl);
  return createWalletClient({ account: privateKeyToAccount(key), chain: foundry, transport, pollingInterval: 50, cacheTime: 0 });
}

async function setBalance(address: Address, wei: bigint): Promise<void> {
  await pub.request({ method: 'anvil_setBalance' as never, params: [address, toHex(wei)] as never });
}

/** A fresh account holding 1000 ETH. */
async function actor(): Promise<Actor> {
  const client = walletClient(generatePrivateKey());
  await setBalance(client.account.address, 1000n * ETH);
  return { address: client.account.address, client };
}

async function mined(hash: Hex): Promise<TransactionReceipt> {
  return pub.waitForTransactionReceipt({ hash, timeout: 30_000 });
}

async function deploy(abi: Abi, bytecode: Hex): Promise<Address> {
  const receipt = await mined(await deployer.client.deployContract({ abi, bytecode }));
  if (!receipt.contractAddress) throw new Error('no contract address');
  return receipt.contractAddress;
}

async function deployOdd(name: OddContractName): Promise<Address> {
  const { abi, bytecode } = compileOddContracts()[name];
  return deploy(abi, bytecode);
}

async function tokenCall(from: Actor, token: Address, call: 'mint' | 'approve' | 'setBlacklisted', args: [Address, bigint | boolean]) {
  const request = { address: token, abi: tokenAbi, functionName: call, args } as const;
  const receipt = await mined(await from.client.writeContract(request as never));
  expect(receipt.status).toBe('success');
}

const mint = (token: Address, to: Address, amount: bigint) => tokenCall(deployer, token, 'mint', [to, amount]);

async function setPaused(token: Address, paused: boolean): Promise<void> {
  await mined(await deployer.client.writeContract({ address: token, abi: tokenAbi, functionName: 'setPaused', args: [paused] }));
}

async function balance(token: Address, owner: Address): Promise<bigint> {
  if (token === NATIVE) return pub.getBalance({ address: owner });
  return pub.readContract({ address: token, abi: tokenAbi, functionName: 'balanceOf', args: [owner] });
}

function freshSalt(): Hex {
  return keccak256(toHex(`charge-${++saltCount}-${process.pid}`));
}

/** The deposit address computed off-chain, as the service will compute it. */
function depositAddressOf(destination: Address, salt: Hex): Address {
  const initCode = concat(['0x3d602d80600a3d3981f3363d3d373d3d3d363d73', forwarder, '0x5af43d82803e903d91602b57fd5bf3']);
  const create2Salt = keccak256(encodeAbiParameters([{ type: 'address' }, { type: 'bytes32' }], [destination, salt]));
  return getContractAddress({ opcode: 'CREATE2', from: sweeper, salt: create2Salt, bytecode: initCode });
}

const fee = (r: TransactionReceipt) => r.gasUsed * r.effectiveGasPrice;
const key = (...parts: Array<string | bigint>) =>
  parts.map((p) => (typeof p === 'string' && p.startsWith('0x') ? getAddress(p) : String(p))).join(':');

async function sweepAs(who: Actor, salts: Hex[], tokens: Address[]): Promise<Outcome> {
  const hash = await who.client.writeContract({ address: sweeper, abi: sweeperAbi, functionName: 'sweep', args: [salts, tokens] });
  const receipt = await mined(hash);
  expect(receipt.status).toBe('success');
  const logs = parseEventLogs({ abi: sweeperAbi, logs: receipt.logs });
  const pick = (name: 'Swept' | 'SweepFailed') =>
    logs.flatMap((l) => (l.eventName === name ? [key(l.args.deposit, l.args.token, l.args.amount)] : [])).sort();
  for (const l of logs) if (l.eventName === 'Swept' || l.eventName === 'SweepFailed') expect(l.args.destination).toBe(who.address);
  return { receipt, done: pick('Swept'), failed: pick('SweepFailed') };
}

interface Item {
  token: Address;
  to: Address;
  amount: bigint;
}

async function payAs(who: Actor, items: Item[], value: bigint): Promise<Outcome> {
  const hash = await who.client.writeContract({ address: sweeper, abi: sweeperAbi, functionName: 'pay', args: [items], value });
  const receipt = await mined(hash);
  expect(receipt.status).toBe('success');
  const logs = parseEventLogs({ abi: sweeperAbi, logs: receipt.logs });
  const pick = (name: 'Paid' | 'PayoutFailed') =>
    logs.flatMap((l) => (l.eventName === name ? [key(l.args.index, l.args.token, l.args.to, l.args.amount)] : [])).sort();
  for (const l of logs) if (l.eventName === 'Paid' || l.eventName === 'PayoutFailed') expect(l.args.payer).toBe(who.address);
  return { receipt, done: pick('Paid'), failed: pick('PayoutFailed') };
}

/** Gas of one more address (or item) in a call: a call over 5 less a call over 1, divided by 4. */
async function perUnit(call: (count: number) => Promise<bigint>): Promise<bigint> {
  return ((await call(5)) - (await call(1))) / 4n;
}

/** Gas of a transaction moving 1000 units of `token`, from a fresh holder, to `to`. */
async function transferTx(token: Address, to: Address): Promise<bigint> {
  const holder = await actor();
  await mint(token, holder.address, 1000n);
  const transfer = { address: token, abi: tokenAbi, functionName: 'transfer', args: [to, 1000n] } as const;
  return (await mined(await holder.client.writeContract(transfer))).gasUsed;
}

/** Deposits of `owner`, each funded with `wei` of native coin and `units` of each token. */
async function fundedDeposits(owner: Address, count: number, wei: bigint, tokens: Address[], units: bigint) {
  const salts = Array.from({ length: count }, freshSalt);
  const addresses = salts.map((s) => depositAddressOf(owner, s));
  for (const address of addresses) {
    if (wei > 0n) await setBalance(address, wei);
    for (const token of tokens) await mint(token, address, units);
  }
  return { salts, addresses };
}

beforeAll(async () => {
  devnet = await startDevnet({ port: await findFreePort() });
  pub = createPublicClient({ chain: foundry, transport: http(devnet.rpcUrl), pollingInterval: 50, cacheTime: 0 });
  deployer = await actor();
  sweeper = await deploy(sweeperAbi, sweeperBytecode);
  forwarder = await pub.readContract({ address: sweeper, abi: sweeperAbi, functionName: 'FORWARDER' });
}, 60_000);

afterAll(async () => {
  await devnet?.stop();
}, 15_000);

describe('Sweeper contract', () => {
  it('the committed artifact is contracts/Sweeper.sol compiled as it stands', () => {
    const fresh = compileSweeper();
    expect(SWEEPER_COMPILER).toBe(fresh.compiler);
    expect(sweeperAbi).toEqual(fresh.abi);
    expect(sweeperBytecode).toBe(fresh.bytecode);
  });

  it('a deposit is bound to its wallet: another account moves nothing and cannot send it elsewhere', async () => {
    const [wallet, attacker] = [await actor(), await actor()];
    const token = await deployOdd('PlainToken');
    const salt = freshSalt();
    const deposit = depositAddressOf(wallet.address, salt);
    expect(
      await pub.readContract({ address: sweeper, abi: sweeperAbi, functionName: 'depositAddress', args: [wallet.address, salt] }),
    ).toBe(deposit);
    expect(depositAddressOf(attacker.address, salt)).not.toBe(deposit);
    await setBalance(deposit, ETH);
    await mint(token, deposit, 1000n);

    // The attacker sweeping "the same charge" reaches only its own (empty) deposit.
    expect(await sweepAs(attacker, [salt], [token])).toMatchObject({ done: [], failed: [] });
    expect(await pub.getCode({ address: deposit })).toBeUndefined();
    expect([await balance(NATIVE, deposit), await balance(token, deposit)]).toEqual([ETH, 1000n]);

    const walletBefore = await balance(NATIVE, wallet.address);
    const first = await sweepAs(wallet, [salt], [token]);
    expect(first.done).toEqual([key(deposit, token, 1000n), key(deposit, NATIVE, ETH)].sort());
    expect(await balance(NATIVE, wallet.address)).toBe(walletBefore + ETH - fee(first.receipt));
    expect(await balance(token, wallet.address)).toBe(1000n);
    expect(await pub.getCode({ address: deposit })).toMatch(/^0x363d3d373d3d3d363d73/);

    // A late payment; now the clone is there, and calling it directly is refused.
    await setBalance(deposit, ETH);
    await mint(token, deposit, 500n);
    for (const target of [deposit, forwarder]) {
      for (const what of [token, NATIVE]) {
        const hash = await attacker.client.writeContract({
          address: target,
          abi: forwarderAbi,
          functionName: 'pull',
          args: [what, attacker.address],
          gas: 200_000n,
        });
        expect((await mined(hash)).status).toBe('reverted');
      }
    }
    expect(await sweepAs(attacker, [salt], [token])).toMatchObject({ done: [], failed: [] });
    expect([await balance(NATIVE, deposit), await balance(token, deposit), await balance(token, attacker.address)]).toEqual([
      ETH,
      500n,
      0n,
    ]);

    const second = await sweepAs(wallet, [salt], [token]);
    expect(second.done).toEqual([key(deposit, token, 500n), key(deposit, NATIVE, ETH)].sort());
    expect(await balance(token, wallet.address)).toBe(1500n);
  });

  it('re-entry from a token callback moves nothing twice', async () => {
    const [wallet, thief] = [await actor(), await actor()];
    const plain = await deployOdd('PlainToken');
    const reentrant = await deployOdd('ReentrantToken');
    const { salts, addresses } = await fundedDeposits(wallet.address, 2, ETH, [plain, reentrant], 1000n);
    const arm = {
      address: reentrant,
      abi: tokenAbi,
      functionName: 'arm',
      args: [sweeper, thief.address, salts, [plain, reentrant]],
    } as const;
    await mined(await deployer.client.writeContract(arm));
    const thiefEth = await balance(NATIVE, thief.address);

    // The re-entrant token first, so its callback runs while everything else is still on the deposits.
    const outcome = await sweepAs(wallet, salts, [reentrant, plain]);
    const read = (functionName: 'rounds' | 'successes') => pub.readContract({ address: reentrant, abi: tokenAbi, functionName });
    expect(await read('rounds')).toBe(2n); // one transfer out per deposit
    expect(await read('successes')).toBe(0n); // sweep, pay and the clone's pull all refused
    expect(outcome.failed).toEqual([]);
    expect(outcome.done).toEqual(addresses.flatMap((d) => [key(d, reentrant, 1000n), key(d, plain, 1000n), key(d, NATIVE, ETH)]).sort());
    expect([await balance(plain, wallet.address), await balance(reentrant, wallet.address)]).toEqual([2000n, 2000n]);
    expect([await balance(plain, thief.address), await balance(reentrant, thief.address)]).toEqual([0n, 0n]);
    expect(await balance(NATIVE, thief.address)).toBe(thiefEth);
    for (const d of addresses) {
      expect([await balance(NATIVE, d), await balance(plain, d), await balance(reentrant, d)]).toEqual([0n, 0n, 0n]);
    }
  });

  it('odd tokens: refused ones fail alone and are reported, the rest of the call is swept', async () => {
    const wallet = await actor();
    const [paused, blacklisting, noReturn, falseToken, lying, feeToken, plain] = [
      await deployOdd('RefusingToken'),
      await deployOdd('RefusingToken'),
      await deployOdd('NoReturnToken'),
      await deployOdd('FalseToken'),
      await deployOdd('LyingToken'),
      await deployOdd('FeeToken'),
      await deployOdd('PlainToken'),
    ];
    const notAToken = (await actor()).address;
    const tokens = [paused, blacklisting, noReturn, falseToken, lying, feeToken, plain];
    const { salts, addresses } = await fundedDeposits(wallet.address, 3, ETH, tokens, 1000n);
    const [d1, d2, d3] = addresses as [Address, Address, Address];
    await setPaused(paused, true);
    await tokenCall(deployer, blacklisting, 'setBlacklisted', [d2, true]);

    const outcome = await sweepAs(wallet, salts, [...tokens, notAToken]);
    const each = (token: Address, amount: bigint, of = addresses) => of.map((d) => key(d, token, amount));
    expect(outcome.failed).toEqual(
      [
        ...each(paused, 1000n),
        key(d2, blacklisting, 1000n),
        ...each(falseToken, 1000n),
        ...each(lying, 1000n),
        ...each(notAToken, 0n),
      ].sort(),
    );
    // The fee token's amount is what left the deposit; the wallet receives it less the token's fee.
    expect(outcome.done).toEqual(
      [
        ...each(blacklisting, 1000n, [d1, d3]),
        ...each(noReturn, 1000n),
        ...each(feeToken, 1000n),
        ...each(plain, 1000n),
        ...each(NATIVE, ETH),
      ].sort(),
    );
    const held = async (owner: Address) => Promise.all(tokens.map((t) => balance(t, owner)));
    expect(await held(wallet.address)).toEqual([0n, 2000n, 3000n, 0n, 0n, 2970n, 3000n]);
    expect(await held(d1)).toEqual([1000n, 0n, 0n, 1000n, 1000n, 0n, 0n]);
    expect(await held(d2)).toEqual([1000n, 1000n, 0n, 1000n, 1000n, 0n, 0n]);
    for (const d of addresses) expect(await balance(NATIVE, d)).toBe(0n);

    // Once the token lets go, the same call moves what was left (the clones are reused).
    await setPaused(paused, false);
    await tokenCall(deployer, blacklisting, 'setBlacklisted', [d2, false]);
    const again = await sweepAs(wallet, salts, [paused, blacklisting]);
    expect(again.done).toEqual([...each(paused, 1000n), key(d2, blacklisting, 1000n)].sort());
    expect(await held(wallet.address)).toEqual([3000n, 3000n, 3000n, 0n, 0n, 2970n, 3000n]);
  });

  it('sweeps native coin and tokens off several addresses in one call, leaving nothing behind', async () => {
    const [wallet, payer] = [await actor(), await actor()];
    const [tokenA, tokenB] = [await deployOdd('PlainToken'), await deployOdd('PlainToken')];
    const salts = Array.from({ length: 5 }, freshSalt);
    const addresses = salts.map((s) => depositAddressOf(wallet.address, s));
    for (const [i, d] of addresses.entries()) {
      await setBalance(d, BigInt(i + 1) * (ETH / 10n));
      await mint(tokenA, d, BigInt(i + 1) * 100n);
      if (i % 2 === 0) await mint(tokenB, d, 7n);
    }
    const before = await balance(NATIVE, wallet.address);
    const outcome = await sweepAs(wallet, salts, [tokenA, tokenB]);
    expect(outcome.failed).toEqual([]);
    expect(outcome.done).toHaveLength(5 + 5 + 3);
    expect(await balance(NATIVE, wallet.address)).toBe(before + (15n * ETH) / 10n - fee(outcome.receipt));
    expect([await balance(tokenA, wallet.address), await balance(tokenB, wallet.address)]).toEqual([1500n, 21n]);
    for (const d of addresses) {
      expect([await balance(NATIVE, d), await balance(tokenA, d), await balance(tokenB, d)]).toEqual([0n, 0n, 0n]);
    }

    // A payment after the first sweep reaches a contract: it needs more than 21,000 gas, which a
    // wallet's estimate gives it; a sender that fixes 21,000 sees its transfer revert, and the money stays with it.
    const d0 = addresses[0]!;
    const estimated = await mined(await payer.client.sendTransaction({ to: d0, value: ETH }));
    expect(estimated.status).toBe('success');
    const fixed = await mined(await payer.client.sendTransaction({ to: d0, value: ETH, gas: 21_000n }));
    expect(fixed.status).toBe('reverted');
    expect(await balance(NATIVE, d0)).toBe(ETH);
    console.log(`native payment to a deposit after its first sweep: ${estimated.gasUsed} gas`);
    expect(estimated.gasUsed).toBeLessThan(30_000n);
    expect((await sweepAs(wallet, [salts[0]!], [tokenA])).done).toEqual([key(d0, NATIVE, ETH)]);

    const tooMany = Array.from({ length: 101 }, freshSalt);
    await expect(
      pub.simulateContract({ account: wallet.address, address: sweeper, abi: sweeperAbi, functionName: 'sweep', args: [tooMany, []] }),
    ).rejects.toThrow(/BatchTooLarge/);
  });

  it('pays a batch from the caller: a refused item fails alone and is reported, its native amount refunded', async () => {
    const [wallet, attacker] = [await actor(), await actor()];
    const [plain, refusing, noReturn, falseToken] = [
      await deployOdd('PlainToken'),
      await deployOdd('RefusingToken'),
      await deployOdd('NoReturnToken'),
      await deployOdd('FalseToken'),
    ];
    const rejecting = await deployOdd('RejectingReceiver');
    const [r1, r2, r3, r4, r5] = (await Promise.all(Array.from({ length: 5 }, async () => (await actor()).address))) as [
      Address,
      Address,
      Address,
      Address,
      Address,
    ];
    for (const t of [plain, refusing, noReturn]) await mint(t, wallet.address, 1000n);
    for (const t of [plain, refusing, noReturn, falseToken]) await tokenCall(wallet, t, 'approve', [sweeper, MAX]);
    await tokenCall(deployer, refusing, 'setBlacklisted', [r3, true]);
    const r1Eth = await balance(NATIVE, r1);
    const r5Eth = await balance(NATIVE, r5);
    const items: Item[] = [
      { token: NATIVE, to: r1, amount: ETH },
      { token: NATIVE, to: rejecting, amount: 2n * ETH },
      { token: plain, to: r2, amount: 100n },
      { token: refusing, to: r3, amount: 50n },
      { token: noReturn, to: r4, amount: 70n },
      { token: falseToken, to: r5, amount: 10n },
      { token: NATIVE, to: r5, amount: 3n * ETH },
      { token: plain, to: sweeper, amount: 5n },
      { token: plain, to: NATIVE, amount: 5n },
    ];
    const before = await balance(NATIVE, wallet.address);
    const outcome = await payAs(wallet, items, 6n * ETH);
    const keys = (indexes: number[]) => indexes.map((i) => key(BigInt(i), items[i]!.token, items[i]!.to, items[i]!.amount)).sort();
    expect(outcome.done).toEqual(keys([0, 2, 4, 6]));
    expect(outcome.failed).toEqual(keys([1, 3, 5, 7, 8]));
    expect(await balance(NATIVE, wallet.address)).toBe(before - 4n * ETH - fee(outcome.receipt));
    expect([await balance(NATIVE, r1), await balance(NATIVE, r5), await balance(NATIVE, rejecting)]).toEqual([
      r1Eth + ETH,
      r5Eth + 3n * ETH,
      0n,
    ]);
    expect([await balance(plain, r2), await balance(refusing, r3), await balance(noReturn, r4), await balance(falseToken, r5)]).toEqual([
      100n,
      0n,
      70n,
      0n,
    ]);
    expect([
      await balance(plain, wallet.address),
      await balance(refusing, wallet.address),
      await balance(noReturn, wallet.address),
    ]).toEqual([900n, 1000n, 930n]);
    expect([await balance(NATIVE, sweeper), await balance(plain, sweeper)]).toEqual([0n, 0n]);

    // The wallet's allowance serves only the wallet's own calls: another caller pays from its own funds.
    const stolen = await payAs(attacker, [{ token: plain, to: attacker.address, amount: 100n }], 0n);
    expect(stolen.failed).toEqual([key(0n, plain, attacker.address, 100n)]);
    expect(await balance(plain, wallet.address)).toBe(900n);

    // The value must be exactly the native items' sum: the whole call reverts otherwise.
    const one = [{ token: NATIVE, to: r1, amount: ETH }];
    for (const value of [0n, 2n * ETH]) {
      const call = { account: wallet.address, address: sweeper, abi: sweeperAbi, functionName: 'pay', args: [one], value } as const;
      await expect(pub.simulateContract(call)).rejects.toThrow(/ValueMismatch/);
    }
  });

  it('gas per address swept stays within bounds', async () => {
    const wallet = await actor();
    const token = await deployOdd('PlainToken');
    // The wallet already holds the token, as a wallet that takes it does.
    await mint(token, wallet.address, 1n);

    const gasLater: Array<{ salts: Hex[]; tokens: Address[]; wei: bigint; units: bigint }> = [];
    const sweepFresh = (tokens: Address[], wei: bigint, units: bigint) => async (count: number) => {
      const { salts } = await fundedDeposits(wallet.address, count, wei, tokens, units);
      const first = (await sweepAs(wallet, salts, tokens)).receipt.gasUsed;
      gasLater.push({ salts, tokens, wei, units });
      return first;
    };
    const nativeFirst = await perUnit(sweepFresh([], ETH, 0n));
    const tokenFirst = await perUnit(sweepFresh([token], 0n, 1000n));
    const bothFirst = await perUnit(sweepFresh([token], ETH, 1000n));
    const later = async (index: number, count: number) => {
      const batch = gasLater[index]!;
      expect(batch.salts).toHaveLength(count);
      for (const s of batch.salts) {
        const d = depositAddressOf(wallet.address, s);
        if (batch.wei > 0n) await setBalance(d, batch.wei);
        for (const t of batch.tokens) await mint(t, d, batch.units);
      }
      return (await sweepAs(wallet, batch.salts, batch.tokens)).receipt.gasUsed;
    };
    // gasLater holds, in order: native ×5, ×1; token ×5, ×1; both ×5, ×1.
    const nativeLater = ((await later(0, 5)) - (await later(1, 1))) / 4n;
    const tokenLater = ((await later(2, 5)) - (await later(3, 1))) / 4n;
    const bothLater = ((await later(4, 5)) - (await later(5, 1))) / 4n;

    // Today's token sweep for comparison: a transaction moving a key-held address's whole balance.
    const todayToken = await transferTx(token, wallet.address);

    const figures = { nativeFirst, tokenFirst, bothFirst, nativeLater, tokenLater, bothLater, todayToken };
    console.log('gas per deposit address swept (the first sweep deploys its clone; later sweeps call it):');
    console.table(Object.fromEntries(Object.entries(figures).map(([k, v]) => [k, Number(v)])));
    expect(nativeFirst).toBeLessThan(70_000n);
    expect(tokenFirst).toBeLessThan(75_000n);
    expect(bothFirst).toBeLessThan(85_000n);
    expect(nativeLater).toBeLessThan(25_000n);
    expect(tokenLater).toBeLessThan(30_000n);
    expect(bothLater).toBeLessThan(40_000n);
  });

  it('gas per payout item stays within bounds', async () => {
    const wallet = await actor();
    const token = await deployOdd('PlainToken');
    await mint(token, wallet.address, 10n ** 24n);
    await tokenCall(wallet, token, 'approve', [sweeper, MAX]);
    /** `holding`: the recipients already hold native coin, or the token. */
    const pay = (native: boolean, holding: boolean) => async (count: number) => {
      const recipients = Array.from({ length: count }, () => privateKeyToAccount(generatePrivateKey()).address);
      for (const to of holding ? recipients : []) await (native ? setBalance(to, 1n) : mint(token, to, 1n));
      const items = recipients.map((to) => ({ token: native ? NATIVE : token, to, amount: native ? ETH / 100n : 1000n }));
      return (await payAs(wallet, items, native ? (ETH / 100n) * BigInt(count) : 0n)).receipt.gasUsed;
    };
    const nativeNew = await perUnit(pay(true, false));
    const nativeHolder = await perUnit(pay(true, true));
    const tokenNew = await perUnit(pay(false, false));
    const tokenHolder = await perUnit(pay(false, true));
    // Today's payouts, one transaction each: native 21,000 whoever receives; a token transfer:
    const todayTokenNew = await transferTx(token, privateKeyToAccount(generatePrivateKey()).address);
    const todayTokenHolder = await transferTx(token, wallet.address);

    const figures = { nativeNew, nativeHolder, tokenNew, tokenHolder, todayTokenNew, todayTokenHolder };
    console.log('gas per payout item (recipients new, or already holding what they are paid):');
    console.table(Object.fromEntries(Object.entries(figures).map(([k, v]) => [k, Number(v)])));
    expect(nativeNew).toBeLessThan(45_000n);
    expect(nativeHolder).toBeLessThan(20_000n);
    expect(tokenNew).toBeLessThan(40_000n);
    expect(tokenHolder).toBeLessThan(20_000n);
  });

  it('for comparison: the create-sweep-selfdestruct design (test/sweeper/EphemeralSweeper.sol)', async () => {
    const wallet = await actor();
    const token = await deployOdd('PlainToken');
    await mint(token, wallet.address, 1n);
    const ephemeral = await deployOdd('EphemeralSweeper');
    const addressOf = (salt: Hex) =>
      pub.readContract({ address: ephemeral, abi: ephemeralAbi, functionName: 'depositAddress', args: [wallet.address, salt] });
    const sweep = async (salts: Hex[], tokens: Address[]) => {
      const args = [salts, tokens] as const;
      const receipt = await mined(
        await wallet.client.writeContract({ address: ephemeral, abi: ephemeralAbi, functionName: 'sweep', args }),
      );
      expect(receipt.status).toBe('success');
      return receipt.gasUsed;
    };
    const sweepFresh = (tokens: Address[], wei: bigint) => async (count: number) => {
      const salts = Array.from({ length: count }, freshSalt);
      for (const salt of salts) {
        const d = await addressOf(salt);
        if (wei > 0n) await setBalance(d, wei);
        for (const t of tokens) await mint(t, d, 1000n);
      }
      return sweep(salts, tokens);
    };
    const nativeEach = await perUnit(sweepFresh([], ETH));
    const tokenEach = await perUnit(sweepFresh([token], 0n));
    console.log('create-sweep-selfdestruct, gas per deposit address (every sweep):');
    console.table({ native: Number(nativeEach), token: Number(tokenEach) });

    // The account is deleted with its creation's transaction, so the address can be swept again.
    const salt = freshSalt();
    const d = await addressOf(salt);
    await setBalance(d, ETH);
    await mint(token, d, 1000n);
    await sweep([salt], [token]);
    expect(await pub.getCode({ address: d })).toBeUndefined();
    expect([await balance(NATIVE, d), await balance(token, d)]).toEqual([0n, 0n]);
    await setBalance(d, ETH);
    await sweep([salt], []);
    expect(await balance(NATIVE, d)).toBe(0n);
  });
});
