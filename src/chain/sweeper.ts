/**
 * Where the Sweeper contract (contracts/Sweeper.sol, docs/charges.md "Keyless deposit addresses")
 * lives on a network, and the call that puts it there. Pure but for `hasCode`.
 *
 * It is deployed through the deterministic-deployment proxy (`CREATE2_FACTORY`, present on most
 * EVM networks and on every anvil node), so the same artifact lands at the same address on every
 * network, and deploying it is an ordinary contract call of a wallet: recorded, nonce-managed,
 * policed and reconciled like any other. Calling it again where the code is already there would
 * revert, so a deploy first looks whether the code is there.
 */
import { concat, getContractAddress, keccak256, toHex, type Address, type Hex, type PublicClient } from 'viem';
import { sweeperBytecode } from './sweeper-artifact.js';

/** The deterministic-deployment proxy: calldata is a 32-byte salt followed by the init code; it CREATE2s that code. */
export const CREATE2_FACTORY: Address = '0x4e59b44847b379578588920cA78FbF26c0B4956C';

/** The salt of the service's Sweeper deployment: one per artifact, so a new build of the contract lands at a new address. */
export const SWEEPER_SALT: Hex = keccak256(toHex('evm-wallet-service/Sweeper'));

/** The address the current artifact deploys to through the factory, on any network. */
export function sweeperAddress(bytecode: Hex = sweeperBytecode): Address {
  return getContractAddress({ opcode: 'CREATE2', from: CREATE2_FACTORY, salt: SWEEPER_SALT, bytecode });
}

/** The factory call's calldata that deploys the artifact at `sweeperAddress()`. */
export function sweeperDeployData(bytecode: Hex = sweeperBytecode): Hex {
  return concat([SWEEPER_SALT, bytecode]);
}

/** Whether the address holds code at the latest block. */
export async function hasCode(client: PublicClient, address: Address): Promise<boolean> {
  const code = await client.getCode({ address });
  return code !== undefined && code !== '0x';
}
