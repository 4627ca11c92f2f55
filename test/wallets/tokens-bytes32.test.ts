/**
 * Tokens written before ERC-20 settled on `string` metadata (MKR, SAI): name() and symbol()
 * answer `bytes32`, decimals() a uint256. They are added with their text decoded as wallets
 * read it (UTF-8, trailing zero bytes removed), hold balances and send transfers. A token of 0
 * decimals is added and sent as well.
 */
import { createRequire } from 'node:module';
import { createWalletClient, getAddress, http, stringToHex, type Abi, type Address, type Hex } from 'viem';
import { privateKeyToAccount } from 'viem/accounts';
import { foundry } from 'viem/chains';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bytes32Text } from '../../src/chain/erc20.js';
import { startTestApp, type TestApp, type TestUser } from '../helpers/app.js';
import { expectValidationError } from '../helpers/expect.js';
import { startTestChain, type TestChain } from '../helpers/chain.js';
import { deployErc20, erc20BalanceOf, mintErc20 } from '../helpers/erc20.js';
import { waitFor } from '../helpers/wait.js';
import { ETH, fundedWallet, publicClient, RECIPIENT, waitForCursor, waitForStatus } from '../helpers/transfers.js';

/** anvil's first default dev account (well-known test key). */
const DEPLOYER_KEY: Hex = '0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80';

const SOURCE = `// SPDX-License-Identifier: MIT
pragma solidity ^0.8.20;

/// Metadata as MKR and SAI have it: bytes32 name and symbol, uint256 decimals. Anyone can mint.
contract Bytes32Token {
    bytes32 public name;
    bytes32 public symbol;
    uint256 public decimals = 18;
    mapping(address => uint256) public balanceOf;

    event Transfer(address indexed from, address indexed to, uint256 value);

    constructor(bytes32 name_, bytes32 symbol_) {
        name = name_;
        symbol = symbol_;
    }

    function transfer(address to, uint256 amount) external returns (bool) {
        require(balanceOf[msg.sender] >= amount, "insufficient balance");
        balanceOf[msg.sender] -= amount;
        balanceOf[to] += amount;
        emit Transfer(msg.sender, to, amount);
        return true;
    }

    function mint(address to, uint256 amount) external {
        balanceOf[to] += amount;
        emit Transfer(address(0), to, amount);
    }
}
`;

function compile(): { abi: Abi; bytecode: Hex } {
  const solc = createRequire(import.meta.url)('solc') as { compile(input: string): string };
  const input = {
    language: 'Solidity',
    sources: { 'Bytes32Token.sol': { content: SOURCE } },
    settings: {
      evmVersion: 'paris',
      optimizer: { enabled: true, runs: 200 },
      outputSelection: { '*': { '*': ['abi', 'evm.bytecode.object'] } },
    },
  };
  const output = JSON.parse(solc.compile(JSON.stringify(input))) as {
    errors?: Array<{ severity: string; message: string }>;
    contracts: Record<string, Record<string, { abi: Abi; evm: { bytecode: { object: string } } }>>;
  };
  const errors = (output.errors ?? []).filter((e) => e.severity === 'error');
  if (errors.length > 0) throw new Error(errors.map((e) => e.message).join('\n'));
  const c = output.contracts['Bytes32Token.sol']!['Bytes32Token']!;
  return { abi: c.abi, bytecode: `0x${c.evm.bytecode.object}` };
}

async function deployBytes32Token(rpcUrl: string, name: Hex, symbol: Hex): Promise<Address> {
  const { abi, bytecode } = compile();
  const wallet = createWalletClient({ account: privateKeyToAccount(DEPLOYER_KEY), chain: foundry, transport: http(rpcUrl) });
  const hash = await wallet.deployContract({ abi, bytecode, args: [name, symbol] });
  const receipt = await publicClient(rpcUrl).waitForTransactionReceipt({ hash });
  if (receipt.status !== 'success' || !receipt.contractAddress) throw new Error('deploy Bytes32Token failed');
  return receipt.contractAddress;
}

let t: TestApp;
let chain: TestChain;
let networkId: number;
let alice: TestUser;
let mkr: Address;
let unnamed: Address;
let whole: Address;

beforeAll(async () => {
  t = await startTestApp({ workers: true, env: { BALANCE_MAX_AGE_S: '0' } });
  chain = await startTestChain();
  networkId = await chain.register(t);
  await waitForCursor(t, networkId);
  alice = await t.createUser();
  mkr = await deployBytes32Token(chain.rpcUrl, stringToHex('Maker', { size: 32 }), stringToHex('MKR', { size: 32 }));
  unnamed = await deployBytes32Token(chain.rpcUrl, stringToHex('', { size: 32 }), stringToHex('SAI', { size: 32 }));
  whole = await deployErc20(chain.rpcUrl, { name: 'Whole Units', symbol: 'WHL', decimals: 0 });
});

afterAll(async () => {
  await t?.close();
  await chain?.stop();
});

const addToken = (walletId: number, contract: Address) =>
  t.request('POST', `/api/wallet/${walletId}/token/add`, { token: alice.token, body: { contract } });
const create = (walletId: number, body: unknown) =>
  t.request('POST', `/api/wallet/${walletId}/transaction/create`, { token: alice.token, body });

async function tokenBalance(walletId: number, symbol: string, expected: string) {
  return waitFor(async () => {
    const r = await t.request('GET', `/api/wallet/${walletId}/balance`, { token: alice.token });
    const tok = r.body.data?.tokens?.find((x: { symbol: string }) => x.symbol === symbol);
    return tok?.balance === expected ? tok : null;
  });
}

describe('bytes32 text', () => {
  it('is UTF-8 without its trailing zero bytes, a last byte ending in a zero nibble kept', () => {
    expect(bytes32Text(stringToHex('MKR', { size: 32 }))).toBe('MKR');
    expect(bytes32Text(stringToHex('DAI P', { size: 32 }))).toBe('DAI P'); // "P" is 0x50
    expect(bytes32Text(stringToHex('Dai Stablecoin v1.0', { size: 32 }))).toBe('Dai Stablecoin v1.0');
    expect(bytes32Text(stringToHex('€uro', { size: 32 }))).toBe('€uro');
    expect(bytes32Text(`0x${'41'.repeat(32)}`)).toBe('A'.repeat(32));
    expect(bytes32Text(`0x${'00'.repeat(32)}`)).toBe('');
  });
});

describe('a token with bytes32 name and symbol', () => {
  it('is added with its decoded name and symbol, shows its balance and sends a transfer', async () => {
    const w = await fundedWallet(t, chain, alice, networkId, ETH);
    const res = await addToken(w.id, mkr);
    expect(res.status, res.text).toBe(200);
    expect(res.body.data).toMatchObject({ name: 'Maker', symbol: 'MKR', decimals: 18, is_native: false, contract: getAddress(mkr) });

    await mintErc20(chain.rpcUrl, mkr, w.address, 5n * ETH);
    await tokenBalance(w.id, 'MKR', '5.000000000000000000');

    const sent = await create(w.id, { amount: '1.25', token: 'MKR', address: RECIPIENT });
    expect(sent.status, sent.text).toBe(200);
    const done = await waitForStatus(t, alice, w.id, sent.body.data.id, 'confirmed');
    expect(done.wallet_token).toMatchObject({ symbol: 'MKR', name: 'Maker' });
    expect(await erc20BalanceOf(chain.rpcUrl, mkr, RECIPIENT)).toBe(1_250_000_000_000_000_000n);
    await tokenBalance(w.id, 'MKR', '3.750000000000000000');
  });

  it('takes an empty bytes32 name as its symbol', async () => {
    const w = await fundedWallet(t, chain, alice, networkId, ETH);
    const res = await addToken(w.id, unnamed);
    expect(res.status, res.text).toBe(200);
    expect(res.body.data).toMatchObject({ name: 'SAI', symbol: 'SAI', decimals: 18 });
  });
});

describe('a token of 0 decimals', () => {
  it('is added, shows whole units and sends a whole amount', async () => {
    const w = await fundedWallet(t, chain, alice, networkId, ETH);
    const res = await addToken(w.id, whole);
    expect(res.status, res.text).toBe(200);
    expect(res.body.data).toMatchObject({ name: 'Whole Units', symbol: 'WHL', decimals: 0 });
    await mintErc20(chain.rpcUrl, whole, w.address, 10n);
    await tokenBalance(w.id, 'WHL', '10.000000000000000000');

    expectValidationError(await create(w.id, { amount: '1.5', token: 'WHL', address: RECIPIENT }), {
      amount: ['The amount field must not have more than 0 decimal places.'],
    });
    const sent = await create(w.id, { amount: '3', token: 'WHL', address: RECIPIENT });
    expect(sent.status, sent.text).toBe(200);
    await waitForStatus(t, alice, w.id, sent.body.data.id, 'confirmed');
    expect(await erc20BalanceOf(chain.rpcUrl, whole, RECIPIENT)).toBe(3n);
    await tokenBalance(w.id, 'WHL', '7.000000000000000000');
  });
});
