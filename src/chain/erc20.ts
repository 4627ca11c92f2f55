/** ERC-20 reads and the transfer call data, through viem. */
import { encodeFunctionData, getAddress, parseAbi, parseAbiItem, type Address, type PublicClient } from 'viem';
import { isContractCallFailure } from './errors.js';

export const ERC20_ABI = parseAbi([
  'function name() view returns (string)',
  'function symbol() view returns (string)',
  'function decimals() view returns (uint8)',
  'function balanceOf(address owner) view returns (uint256)',
  'function transfer(address to, uint256 amount) returns (bool)',
  'event Transfer(address indexed from, address indexed to, uint256 value)',
]);

/** The `Transfer` event, for reading a block's token transfers (chain/blocks.ts). */
export const TRANSFER_EVENT = parseAbiItem('event Transfer(address indexed from, address indexed to, uint256 value)');

export const NATIVE_CONTRACT: Address = '0x0000000000000000000000000000000000000000';

export interface TokenMetadata {
  name: string;
  symbol: string;
  decimals: number;
}

export async function readTokenMetadata(client: PublicClient, contract: Address): Promise<TokenMetadata> {
  const address = getAddress(contract);
  const [name, symbol, decimals] = await Promise.all([
    client.readContract({ address, abi: ERC20_ABI, functionName: 'name' }),
    client.readContract({ address, abi: ERC20_ABI, functionName: 'symbol' }),
    client.readContract({ address, abi: ERC20_ABI, functionName: 'decimals' }),
  ]);
  return { name, symbol, decimals };
}

/** What an address turned out to be when asked for ERC-20 metadata and a balance. */
export type Erc20Probe =
  | { kind: 'no-code' }
  | { kind: 'not-erc20'; reason: string }
  | { kind: 'token'; metadata: TokenMetadata; balance: bigint };

/**
 * Checks that `contract` is a deployed ERC-20: it has code, and name(), symbol(), decimals()
 * and balanceOf(owner) all answer and decode. Contract failures are returned as a kind; a node
 * error (unreachable, rejected) is thrown for the caller to map.
 */
export async function probeErc20(client: PublicClient, contract: Address, owner: Address): Promise<Erc20Probe> {
  const address = getAddress(contract);
  const code = await client.getCode({ address });
  if (code === undefined || code === '0x') return { kind: 'no-code' };
  try {
    const [metadata, balance] = await Promise.all([readTokenMetadata(client, address), readBalance(client, address, owner)]);
    return { kind: 'token', metadata, balance };
  } catch (e) {
    if (isContractCallFailure(e)) return { kind: 'not-erc20', reason: e.shortMessage };
    throw e;
  }
}

/**
 * Balance in base units of `owner` for a token (the native currency when contract is the zero
 * address), at the latest block or at `blockNumber`.
 */
export async function readBalance(client: PublicClient, contract: string, owner: Address, blockNumber?: bigint): Promise<bigint> {
  if (contract.toLowerCase() === NATIVE_CONTRACT) return client.getBalance({ address: owner, blockNumber });
  return client.readContract({ address: getAddress(contract), abi: ERC20_ABI, functionName: 'balanceOf', args: [owner], blockNumber });
}

export function erc20TransferData(to: Address, amount: bigint): `0x${string}` {
  return encodeFunctionData({ abi: ERC20_ABI, functionName: 'transfer', args: [to, amount] });
}
