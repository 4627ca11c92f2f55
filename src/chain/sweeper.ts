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
import {
  concat,
  encodeAbiParameters,
  encodeFunctionData,
  getContractAddress,
  keccak256,
  maxUint256,
  parseAbi,
  parseEventLogs,
  toHex,
  type Log,
  type Address,
  type Hex,
  type PublicClient,
} from 'viem';
import { sweeperAbi, sweeperBytecode } from './sweeper-artifact.js';

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

/**
 * The deposit address of `salt` bound to `destination` on the Sweeper at `sweeper`, as the
 * contract's `depositAddress` answers it: the CREATE2 address of the 45-byte init code that runs
 * the Sweeper's `DepositLogic` (deployed by the Sweeper's constructor, its first CREATE: nonce 1),
 * with salt keccak256(abi.encode(destination, salt)). Known before anything is deployed or paid.
 */
export function depositAddress(sweeper: Address, destination: Address, salt: Hex): Address {
  const logic = getContractAddress({ opcode: 'CREATE', from: sweeper, nonce: 1n });
  const initCode = concat(['0x60203d3d3d73', logic, '0x5af46028573d6000803e3d6000fd5b600051ff']);
  const create2Salt = keccak256(encodeAbiParameters([{ type: 'address' }, { type: 'bytes32' }], [destination, salt]));
  return getContractAddress({ opcode: 'CREATE2', from: sweeper, salt: create2Salt, bytecode: initCode });
}

/**
 * The salt of the probe a Sweeper must pass before a network uses it: swept once, its deposit
 * address must be left with no code and nonce 0 (SELFDESTRUCT still deletes an account created in
 * the same transaction, EIP-6780). A network that disabled the opcode reverts the probe; one that
 * turned it into a send without deletion leaves the account with nonce 1, where no later sweep
 * could create the deposit again (docs/charges.md, "Keyless deposit addresses").
 */
export const PROBE_SALT: Hex = keccak256(toHex('evm-wallet-service/probe'));

/** The Sweeper call that sweeps the probe address of the caller (no tokens: only the creation and deletion are tested). */
export function probeSweepData(): Hex {
  return encodeFunctionData({ abi: sweeperAbi, functionName: 'sweep', args: [[PROBE_SALT], []] });
}

/** Whether the probe address of `destination` was left deleted (no code, nonce 0) at `block`. */
export async function probeLeftDeleted(client: PublicClient, sweeper: Address, destination: Address, block: bigint): Promise<boolean> {
  const address = depositAddress(sweeper, destination, PROBE_SALT);
  const [code, nonce] = await Promise.all([
    client.getCode({ address, blockNumber: block }),
    client.getTransactionCount({ address, blockNumber: block }),
  ]);
  return (code === undefined || code === '0x') && nonce === 0;
}

/** Whether the address holds code at the latest block. */
export async function hasCode(client: PublicClient, address: Address): Promise<boolean> {
  const code = await client.getCode({ address });
  return code !== undefined && code !== '0x';
}

/** What a sweep did to one token (`NATIVE_CONTRACT` for the native coin) of one deposit address: moved, and how much left (or stayed). */
export interface SweepOutcome {
  moved: boolean;
  amount: bigint;
}

/** The key of an outcome: the deposit address and the token, lower case. */
export const outcomeKey = (deposit: string, token: string) => `${deposit.toLowerCase()}:${token.toLowerCase()}`;

/**
 * A mined sweep's outcomes for `destination`, from its receipt's logs: the Sweeper's own
 * `Swept` (moved, `amount` what left the address) and `SweepFailed` (refused, `amount` what
 * stayed), by `outcomeKey`. Logs of any other address, or for another destination, are ignored:
 * only the Sweeper emits them, and only for the caller's own deposits. A token with nothing on
 * the address has no outcome.
 */
export function sweepOutcomes(logs: readonly Log[], sweeper: Address, destination: Address): Map<string, SweepOutcome> {
  const out = new Map<string, SweepOutcome>();
  const own = logs.filter((l) => l.address.toLowerCase() === sweeper.toLowerCase());
  for (const e of parseEventLogs({ abi: sweeperAbi, logs: own, eventName: ['Swept', 'SweepFailed'] })) {
    if (e.args.destination.toLowerCase() !== destination.toLowerCase()) continue;
    out.set(outcomeKey(e.args.deposit, e.args.token), { moved: e.eventName === 'Swept', amount: e.args.amount });
  }
  return out;
}

/** The Sweeper call that empties the caller's deposit addresses of `salts` (each once) of `tokens` and the native coin. */
export function sweepData(salts: readonly Hex[], tokens: readonly Address[]): Hex {
  return encodeFunctionData({ abi: sweeperAbi, functionName: 'sweep', args: [salts, tokens] });
}

/** One item of a `pay` call: `token` the ERC-20 contract (`NATIVE_CONTRACT` for the native coin). */
export interface PayItem {
  token: Address;
  to: Address;
  amount: bigint;
}

/** The Sweeper call that pays `items` from the caller, in order (each item's index is its place here). */
export function payData(items: readonly PayItem[]): Hex {
  return encodeFunctionData({
    abi: sweeperAbi,
    functionName: 'pay',
    args: [items.map((i) => ({ token: i.token, to: i.to, amount: i.amount }))],
  });
}

/**
 * A mined `pay` call's outcome per item index, from its receipt's logs: `Paid` (true) or
 * `PayoutFailed` (false), only the Sweeper's own logs for this payer. An index without either
 * is missing: the call did not run as recorded.
 */
export function payOutcomes(logs: readonly Log[], sweeper: Address, payer: Address): Map<number, boolean> {
  const out = new Map<number, boolean>();
  const own = logs.filter((l) => l.address.toLowerCase() === sweeper.toLowerCase());
  for (const e of parseEventLogs({ abi: sweeperAbi, logs: own, eventName: ['Paid', 'PayoutFailed'] })) {
    if (e.args.payer.toLowerCase() !== payer.toLowerCase()) continue;
    out.set(Number(e.args.index), e.eventName === 'Paid');
  }
  return out;
}

const ALLOWANCE_ABI = parseAbi([
  'function allowance(address owner, address spender) view returns (uint256)',
  'function approve(address spender, uint256 amount) returns (bool)',
]);

/** What `owner` allows `spender` to take of `token`. */
export async function readAllowance(client: PublicClient, token: Address, owner: Address, spender: Address): Promise<bigint> {
  return client.readContract({ address: token, abi: ALLOWANCE_ABI, functionName: 'allowance', args: [owner, spender] });
}

/** approve(spender, 2^256 - 1): the one approval a wallet gives the Sweeper per token. */
export function approveAllData(spender: Address): Hex {
  return encodeFunctionData({ abi: ALLOWANCE_ABI, functionName: 'approve', args: [spender, maxUint256] });
}
