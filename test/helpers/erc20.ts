// Test contracts for integration tests: a mintable ERC-20 and a contract that
// is not a token. Compiled with the solc npm package and cached in memory and
// on disk so test files do not each pay for compilation.
import { createHash } from 'node:crypto';
import { mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  createPublicClient,
  createWalletClient,
  erc20Abi,
  http,
  parseAbi,
  type Abi,
  type Address,
  type Hex,
  type PublicClient,
} from 'viem';
import { privateKeyToAccount } from 'viem/accounts';
import { foundry } from 'viem/chains';

/** anvil's first default dev account (well-known test key, holds 10000 ETH). */
const DEPLOYER_PRIVATE_KEY = '0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80' as const;
/** Short polling so receipts on an automining devnet are picked up quickly. */
const POLLING_INTERVAL_MS = 50;
const RECEIPT_TIMEOUT_MS = 30_000;

const SOURCE_NAME = 'TestContracts.sol';

export const TEST_CONTRACTS_SOURCE = `// SPDX-License-Identifier: MIT
pragma solidity ^0.8.20;

/// Minimal ERC-20 for tests. Anyone can mint.
contract TestToken {
    string public name;
    string public symbol;
    uint8 public decimals;
    uint256 public totalSupply;

    mapping(address => uint256) public balanceOf;
    mapping(address => mapping(address => uint256)) public allowance;

    event Transfer(address indexed from, address indexed to, uint256 value);
    event Approval(address indexed owner, address indexed spender, uint256 value);

    constructor(string memory name_, string memory symbol_, uint8 decimals_) {
        name = name_;
        symbol = symbol_;
        decimals = decimals_;
    }

    function transfer(address to, uint256 amount) external returns (bool) {
        _move(msg.sender, to, amount);
        return true;
    }

    function transferFrom(address from, address to, uint256 amount) external returns (bool) {
        uint256 allowed = allowance[from][msg.sender];
        require(allowed >= amount, "ERC20: insufficient allowance");
        // An allowance of type(uint256).max means "unlimited" and is never decreased.
        if (allowed != type(uint256).max) {
            allowance[from][msg.sender] = allowed - amount;
        }
        _move(from, to, amount);
        return true;
    }

    function approve(address spender, uint256 amount) external returns (bool) {
        require(spender != address(0), "ERC20: approve to zero address");
        allowance[msg.sender][spender] = amount;
        emit Approval(msg.sender, spender, amount);
        return true;
    }

    function mint(address to, uint256 amount) external {
        require(to != address(0), "ERC20: mint to zero address");
        totalSupply += amount;
        balanceOf[to] += amount;
        emit Transfer(address(0), to, amount);
    }

    function _move(address from, address to, uint256 amount) private {
        require(to != address(0), "ERC20: transfer to zero address");
        uint256 fromBalance = balanceOf[from];
        require(fromBalance >= amount, "ERC20: transfer amount exceeds balance");
        balanceOf[from] = fromBalance - amount;
        balanceOf[to] += amount;
        emit Transfer(from, to, amount);
    }
}

/// Sends on what it receives through an internal call (no transaction addressed to the recipient).
contract Forwarder {
    function forward(address payable to) external payable {
        (bool ok, ) = to.call{value: msg.value}("");
        require(ok, "forward failed");
    }

    /// Sends half on, then reverts an inner call that would send the rest: only the half moves.
    function forwardHalf(address payable to) external payable {
        (bool ok, ) = to.call{value: msg.value / 2}("");
        require(ok, "forward failed");
        try this.sendAndRevert(to) {} catch {}
    }

    function sendAndRevert(address payable to) external {
        (bool ok, ) = to.call{value: address(this).balance}("");
        require(ok, "send failed");
        revert("undone");
    }
}

/// A contract that is deliberately not a token.
contract NotAToken {
    function ping() external pure returns (uint256) {
        return 1;
    }
}
`;

export interface CompiledContract {
  abi: Abi;
  bytecode: Hex;
}

export interface CompiledTestContracts {
  erc20: CompiledContract;
  notAToken: CompiledContract;
  forwarder: CompiledContract;
}

// Standard JSON input. evmVersion "paris" avoids PUSH0 etc. so the bytecode
// runs on any hardfork anvil might be configured with.
const COMPILER_INPUT = JSON.stringify({
  language: 'Solidity',
  sources: { [SOURCE_NAME]: { content: TEST_CONTRACTS_SOURCE } },
  settings: {
    evmVersion: 'paris',
    optimizer: { enabled: true, runs: 200 },
    outputSelection: { '*': { '*': ['abi', 'evm.bytecode.object'] } },
  },
});

let memoryCache: CompiledTestContracts | undefined;

/** Compile the test contracts (cached per process and on disk). */
export function compileTestContracts(): CompiledTestContracts {
  memoryCache ??= readDiskCache() ?? compileAndStore();
  return memoryCache;
}

/**
 * Cache file named after the sha256 of the full compiler input (which embeds
 * the source), so changing the source or the settings invalidates it.
 */
function diskCachePath(): string {
  const digest = createHash('sha256').update(COMPILER_INPUT).digest('hex');
  const url = new URL(`../../node_modules/.cache/wallet-service-contracts/${digest}.json`, import.meta.url);
  return fileURLToPath(url);
}

function readDiskCache(): CompiledTestContracts | undefined {
  try {
    const parsed = JSON.parse(readFileSync(diskCachePath(), 'utf8')) as unknown;
    return isCompiledTestContracts(parsed) ? parsed : undefined;
  } catch {
    return undefined; // missing or unreadable: recompile
  }
}

function compileAndStore(): CompiledTestContracts {
  const compiled = compileWithSolc();
  const path = diskCachePath();
  try {
    mkdirSync(dirname(path), { recursive: true });
    // Write-then-rename so parallel test workers never read a half-written file.
    const tmp = `${path}.${process.pid}.${Date.now()}.tmp`;
    writeFileSync(tmp, JSON.stringify(compiled));
    renameSync(tmp, path);
  } catch {
    // The disk cache is only an optimisation.
  }
  return compiled;
}

/** Contracts of one source file in solc's standard JSON output, by contract name. */
type SolcFileContracts = Record<string, { abi: Abi; evm: { bytecode: { object: string } } }>;

interface SolcOutput {
  errors?: Array<{ severity: string; formattedMessage?: string; message: string }>;
  contracts?: Record<string, SolcFileContracts>;
}

function compileWithSolc(): CompiledTestContracts {
  // Loaded lazily: solc's emscripten module is large and slow to initialise,
  // and is not needed at all when the disk cache hits.
  const solc = createRequire(import.meta.url)('solc') as { compile(input: string): string };
  const output = JSON.parse(solc.compile(COMPILER_INPUT)) as SolcOutput;
  const errors = (output.errors ?? []).filter((e) => e.severity === 'error');
  if (errors.length > 0) {
    throw new Error(`solc compilation failed:\n${errors.map((e) => e.formattedMessage ?? e.message).join('\n')}`);
  }
  const contracts = output.contracts?.[SOURCE_NAME];
  return {
    erc20: pickContract(contracts, 'TestToken'),
    notAToken: pickContract(contracts, 'NotAToken'),
    forwarder: pickContract(contracts, 'Forwarder'),
  };
}

function pickContract(contracts: SolcFileContracts | undefined, name: string): CompiledContract {
  const contract = contracts?.[name];
  const object = contract?.evm.bytecode.object;
  if (!contract || !object) throw new Error(`solc output has no bytecode for ${name}`);
  return { abi: contract.abi, bytecode: `0x${object}` };
}

function isCompiledContract(value: unknown): value is CompiledContract {
  const v = value as Partial<CompiledContract> | null;
  return typeof v === 'object' && v !== null && Array.isArray(v.abi) && typeof v.bytecode === 'string' && /^0x[0-9a-f]+$/i.test(v.bytecode);
}

function isCompiledTestContracts(value: unknown): value is CompiledTestContracts {
  const v = value as Partial<CompiledTestContracts> | null;
  return (
    typeof v === 'object' && v !== null && isCompiledContract(v.erc20) && isCompiledContract(v.notAToken) && isCompiledContract(v.forwarder)
  );
}

// ---------------------------------------------------------------------------
// Chain interaction.
// ---------------------------------------------------------------------------

const mintAbi = parseAbi(['function mint(address to, uint256 amount)']);

function publicClient(rpcUrl: string): PublicClient {
  return createPublicClient({ chain: foundry, transport: http(rpcUrl), pollingInterval: POLLING_INTERVAL_MS, cacheTime: 0 });
}

function deployerClient(rpcUrl: string) {
  return createWalletClient({
    account: privateKeyToAccount(DEPLOYER_PRIVATE_KEY),
    chain: foundry,
    transport: http(rpcUrl),
    pollingInterval: POLLING_INTERVAL_MS,
    cacheTime: 0,
  });
}

/** Waits for the receipt and throws if the transaction reverted. */
async function waitForSuccess(rpcUrl: string, hash: Hex, what: string) {
  const receipt = await publicClient(rpcUrl).waitForTransactionReceipt({ hash, timeout: RECEIPT_TIMEOUT_MS });
  if (receipt.status !== 'success') throw new Error(`${what} reverted (tx ${hash})`);
  return receipt;
}

async function deploy(rpcUrl: string, contract: CompiledContract, args: readonly unknown[], what: string): Promise<Address> {
  const hash = await deployerClient(rpcUrl).deployContract({ abi: contract.abi, bytecode: contract.bytecode, args });
  const receipt = await waitForSuccess(rpcUrl, hash, what);
  if (!receipt.contractAddress) throw new Error(`${what}: receipt has no contract address (tx ${hash})`);
  return receipt.contractAddress;
}

export async function deployErc20(rpcUrl: string, opts: { name: string; symbol: string; decimals: number }): Promise<Address> {
  if (!Number.isInteger(opts.decimals) || opts.decimals < 0 || opts.decimals > 255) {
    throw new RangeError(`decimals must be an integer in 0..255, got ${opts.decimals}`);
  }
  const { erc20 } = compileTestContracts();
  return deploy(rpcUrl, erc20, [opts.name, opts.symbol, opts.decimals], `deploy ${opts.symbol}`);
}

export async function deployNotAToken(rpcUrl: string): Promise<Address> {
  const { notAToken } = compileTestContracts();
  return deploy(rpcUrl, notAToken, [], 'deploy NotAToken');
}

/** Deploys a `Forwarder` (sends what it is paid on to an address through an internal call). */
export async function deployForwarder(rpcUrl: string): Promise<Address> {
  const { forwarder } = compileTestContracts();
  return deploy(rpcUrl, forwarder, [], 'deploy Forwarder');
}

const forwarderAbi = parseAbi(['function forward(address to) payable', 'function forwardHalf(address to) payable']);

/**
 * Pays `wei` to `to` through the forwarder, from `account` (a private key; the deployer when
 * omitted); `half`: only half arrives, the inner call that sends the rest reverts. Resolves with
 * the mined transaction's hash.
 */
export async function forwardValue(
  rpcUrl: string,
  forwarder: Address,
  to: Address,
  wei: bigint,
  opts: { account?: Hex; half?: boolean } = {},
): Promise<Hex> {
  const client = createWalletClient({
    account: privateKeyToAccount(opts.account ?? DEPLOYER_PRIVATE_KEY),
    chain: foundry,
    transport: http(rpcUrl),
    pollingInterval: POLLING_INTERVAL_MS,
    cacheTime: 0,
  });
  const hash = await client.writeContract({
    address: forwarder,
    abi: forwarderAbi,
    functionName: opts.half ? 'forwardHalf' : 'forward',
    args: [to],
    value: wei,
    gas: 300_000n,
  });
  await waitForSuccess(rpcUrl, hash, 'forward');
  return hash;
}

/** Mint `amount` base units of `token` to `to`; resolves with the mined tx hash. */
export async function mintErc20(rpcUrl: string, token: Address, to: Address, amount: bigint): Promise<Hex> {
  const hash = await deployerClient(rpcUrl).writeContract({ address: token, abi: mintAbi, functionName: 'mint', args: [to, amount] });
  await waitForSuccess(rpcUrl, hash, `mint on ${token}`);
  return hash;
}

export async function erc20BalanceOf(rpcUrl: string, token: Address, owner: Address): Promise<bigint> {
  return publicClient(rpcUrl).readContract({ address: token, abi: erc20Abi, functionName: 'balanceOf', args: [owner] });
}
