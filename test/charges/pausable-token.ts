/**
 * A test ERC-20 whose transfers its owner can stop for a while, as USDC and USDT can: `pause()` /
 * `unpause()` (every transfer reverts "Pausable: paused") and `blacklist(account, on)` (transfers
 * from or to it revert "Blacklistable: account is blacklisted"). Minting works throughout, so a
 * charge can be paid while its token is paused. Compiled with the solc npm package, once per
 * process.
 */
import { createRequire } from 'node:module';
import { createPublicClient, createWalletClient, http, parseAbi, type Abi, type Address, type Hex } from 'viem';
import { privateKeyToAccount } from 'viem/accounts';
import { foundry } from 'viem/chains';

/** anvil's first default dev account (the token's deployer and owner). */
const DEPLOYER = privateKeyToAccount('0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80');

const SOURCE = `// SPDX-License-Identifier: MIT
pragma solidity ^0.8.20;

contract PausableToken {
    string public name;
    string public symbol;
    uint8 public decimals;
    uint256 public totalSupply;
    bool public paused;
    mapping(address => bool) public blacklisted;
    mapping(address => uint256) public balanceOf;
    mapping(address => mapping(address => uint256)) public allowance;

    event Transfer(address indexed from, address indexed to, uint256 value);
    event Approval(address indexed owner, address indexed spender, uint256 value);

    constructor(string memory name_, string memory symbol_, uint8 decimals_) {
        name = name_;
        symbol = symbol_;
        decimals = decimals_;
    }

    function pause() external { paused = true; }
    function unpause() external { paused = false; }
    function blacklist(address account, bool on) external { blacklisted[account] = on; }

    function transfer(address to, uint256 amount) external returns (bool) {
        _move(msg.sender, to, amount);
        return true;
    }

    function transferFrom(address from, address to, uint256 amount) external returns (bool) {
        require(allowance[from][msg.sender] >= amount, "ERC20: insufficient allowance");
        allowance[from][msg.sender] -= amount;
        _move(from, to, amount);
        return true;
    }

    function approve(address spender, uint256 amount) external returns (bool) {
        allowance[msg.sender][spender] = amount;
        emit Approval(msg.sender, spender, amount);
        return true;
    }

    function mint(address to, uint256 amount) external {
        totalSupply += amount;
        balanceOf[to] += amount;
        emit Transfer(address(0), to, amount);
    }

    function _move(address from, address to, uint256 amount) internal {
        require(!paused, "Pausable: paused");
        require(!blacklisted[from] && !blacklisted[to], "Blacklistable: account is blacklisted");
        require(balanceOf[from] >= amount, "ERC20: transfer amount exceeds balance");
        balanceOf[from] -= amount;
        balanceOf[to] += amount;
        emit Transfer(from, to, amount);
    }
}
`;

let compiled: { abi: Abi; bytecode: Hex } | undefined;

function compile(): { abi: Abi; bytecode: Hex } {
  if (compiled) return compiled;
  const solc = createRequire(import.meta.url)('solc') as { compile(input: string): string };
  const input = {
    language: 'Solidity',
    sources: { 'Pausable.sol': { content: SOURCE } },
    settings: {
      evmVersion: 'paris',
      optimizer: { enabled: true, runs: 200 },
      outputSelection: { '*': { '*': ['abi', 'evm.bytecode.object'] } },
    },
  };
  const out = JSON.parse(solc.compile(JSON.stringify(input))) as {
    errors?: { severity: string; message: string }[];
    contracts: Record<string, Record<string, { abi: Abi; evm: { bytecode: { object: string } } }>>;
  };
  const errors = (out.errors ?? []).filter((e) => e.severity === 'error');
  if (errors.length > 0) throw new Error(`solc: ${errors.map((e) => e.message).join('\n')}`);
  const c = out.contracts['Pausable.sol']!.PausableToken!;
  compiled = { abi: c.abi, bytecode: `0x${c.evm.bytecode.object}` };
  return compiled;
}

const ABI = parseAbi([
  'function pause()',
  'function unpause()',
  'function blacklist(address account, bool on)',
  'function mint(address to, uint256 amount)',
]);

async function write(rpcUrl: string, send: (w: ReturnType<typeof createWalletClient>) => Promise<Hex>): Promise<void> {
  const wallet = createWalletClient({ account: DEPLOYER, chain: foundry, transport: http(rpcUrl) });
  const hash = await send(wallet);
  const receipt = await createPublicClient({ chain: foundry, transport: http(rpcUrl), pollingInterval: 50 }).waitForTransactionReceipt({
    hash,
    timeout: 30_000,
  });
  if (receipt.status !== 'success') throw new Error(`pausable token call reverted (${hash})`);
}

export async function deployPausable(rpcUrl: string, opts: { name: string; symbol: string; decimals: number }): Promise<Address> {
  const { abi, bytecode } = compile();
  const wallet = createWalletClient({ account: DEPLOYER, chain: foundry, transport: http(rpcUrl) });
  const hash = await wallet.deployContract({ abi, bytecode, args: [opts.name, opts.symbol, opts.decimals] });
  const receipt = await createPublicClient({ chain: foundry, transport: http(rpcUrl), pollingInterval: 50 }).waitForTransactionReceipt({
    hash,
    timeout: 30_000,
  });
  if (!receipt.contractAddress) throw new Error('PausableToken: not deployed');
  return receipt.contractAddress;
}

export const pausableToken = (rpcUrl: string, token: Address) => ({
  pause: () =>
    write(rpcUrl, (w) => w.writeContract({ account: DEPLOYER, chain: foundry, address: token, abi: ABI, functionName: 'pause' })),
  unpause: () =>
    write(rpcUrl, (w) => w.writeContract({ account: DEPLOYER, chain: foundry, address: token, abi: ABI, functionName: 'unpause' })),
  blacklist: (account: Address, on: boolean) =>
    write(rpcUrl, (w) =>
      w.writeContract({ account: DEPLOYER, chain: foundry, address: token, abi: ABI, functionName: 'blacklist', args: [account, on] }),
    ),
  mint: (to: Address, amount: bigint) =>
    write(rpcUrl, (w) =>
      w.writeContract({ account: DEPLOYER, chain: foundry, address: token, abi: ABI, functionName: 'mint', args: [to, amount] }),
    ),
});
