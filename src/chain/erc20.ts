/** ERC-20 reads and the transfer call data, through viem. */
import { encodeFunctionData, getAddress, parseAbi, type Address, type PublicClient } from 'viem';

export const ERC20_ABI = parseAbi([
  'function name() view returns (string)',
  'function symbol() view returns (string)',
  'function decimals() view returns (uint8)',
  'function balanceOf(address owner) view returns (uint256)',
  'function transfer(address to, uint256 amount) returns (bool)',
  'event Transfer(address indexed from, address indexed to, uint256 value)',
]);

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

/** Balance in base units of `owner` for a token (the native currency when contract is the zero address). */
export async function readBalance(client: PublicClient, contract: string, owner: Address): Promise<bigint> {
  if (contract.toLowerCase() === NATIVE_CONTRACT) return client.getBalance({ address: owner });
  return client.readContract({ address: getAddress(contract), abi: ERC20_ABI, functionName: 'balanceOf', args: [owner] });
}

export function erc20TransferData(to: Address, amount: bigint): `0x${string}` {
  return encodeFunctionData({ abi: ERC20_ABI, functionName: 'transfer', args: [to, amount] });
}
