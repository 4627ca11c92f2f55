/** ERC-20 reads and the transfer call data, through viem. */
import {
  BaseError,
  CallExecutionError,
  ContractFunctionRevertedError,
  ContractFunctionZeroDataError,
  encodeFunctionData,
  getAddress,
  hexToBytes,
  parseAbi,
  parseAbiItem,
  type Address,
  type Hex,
  type PublicClient,
} from 'viem';
import { isContractCallFailure } from './errors.js';

export const ERC20_ABI = parseAbi([
  'function name() view returns (string)',
  'function symbol() view returns (string)',
  'function decimals() view returns (uint8)',
  'function balanceOf(address owner) view returns (uint256)',
  'function transfer(address to, uint256 amount) returns (bool)',
  'event Transfer(address indexed from, address indexed to, uint256 value)',
]);

/** name() and symbol() of the tokens written before ERC-20 settled on `string` (MKR, SAI). */
const BYTES32_METADATA_ABI = parseAbi(['function name() view returns (bytes32)', 'function symbol() view returns (bytes32)']);

/** The `Transfer` event, for reading a block's token transfers (chain/blocks.ts). */
export const TRANSFER_EVENT = parseAbiItem('event Transfer(address indexed from, address indexed to, uint256 value)');

export const NATIVE_CONTRACT: Address = '0x0000000000000000000000000000000000000000';

export interface TokenMetadata {
  name: string;
  symbol: string;
  decimals: number;
}

/**
 * name(), symbol() and decimals() of a token. A name or symbol that does not decode as `string`
 * is read again as `bytes32`, as wallets do, and decoded as UTF-8 without its trailing zero bytes.
 */
export async function readTokenMetadata(client: PublicClient, contract: Address): Promise<TokenMetadata> {
  const address = getAddress(contract);
  const [name, symbol, decimals] = await Promise.all([
    readText(client, address, 'name'),
    readText(client, address, 'symbol'),
    client.readContract({ address, abi: ERC20_ABI, functionName: 'decimals' }),
  ]);
  return { name, symbol, decimals };
}

async function readText(client: PublicClient, address: Address, functionName: 'name' | 'symbol'): Promise<string> {
  try {
    return await client.readContract({ address, abi: ERC20_ABI, functionName });
  } catch (e) {
    // Only data that came back and does not decode is read another way: a revert, no data or a
    // node's error answer says nothing of the type returned, and is thrown as it is.
    if (!isUndecodable(e)) throw e;
    return bytes32Text(await client.readContract({ address, abi: BYTES32_METADATA_ABI, functionName }));
  }
}

/** A contract read whose call succeeded and whose returned data did not decode as asked. */
function isUndecodable(err: unknown): boolean {
  if (!isContractCallFailure(err)) return false;
  const answered = (e: unknown) =>
    e instanceof CallExecutionError || e instanceof ContractFunctionRevertedError || e instanceof ContractFunctionZeroDataError;
  return !(err as BaseError).walk(answered);
}

/** A `bytes32` text: UTF-8, trailing zero bytes removed (invalid sequences become U+FFFD). */
export function bytes32Text(value: Hex): string {
  const bytes = hexToBytes(value);
  let end = bytes.length;
  while (end > 0 && bytes[end - 1] === 0) end--;
  return new TextDecoder().decode(bytes.subarray(0, end));
}

/** What an address turned out to be when asked for ERC-20 metadata and a balance. */
export type Erc20Probe =
  { kind: 'no-code' } | { kind: 'not-erc20'; reason: string } | { kind: 'token'; metadata: TokenMetadata; balance: bigint };

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
