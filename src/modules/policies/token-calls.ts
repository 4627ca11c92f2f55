/**
 * What a contract call does with one of the wallet's tokens (docs/money-out.md, "Contract calls:
 * policed by what they do"). A call is policed by what it makes the money do, not by its native
 * value: a call to a token contract of the wallet whose calldata is one of the calls below moves or
 * approves that token, and the spending policy treats it as a transfer of that token.
 *
 * - `transfer(to, amount)`: `amount` of the token to `to`, out of the wallet's balance.
 * - `transferFrom(from, to, amount)`: `amount` to `to`; out of the wallet's balance when `from`
 *   is the wallet (otherwise another's allowance is spent, still counted as the wallet's act).
 * - `approve(spender, amount)`, `increaseAllowance(spender, amount)`,
 *   `permit(owner, spender, value, deadline, v, r, s)`: `amount` to `spender`, who may take it
 *   later without asking the service; nothing leaves the balance now. An unlimited approval
 *   (2^256−1) is over every limit set for the token.
 *
 * Any other call, to a token contract or not, is not a token call (null): its policy is the
 * contract-call rule (held for approval on a wallet with a policy). Calldata that names one of
 * these functions but does not decode is not a token call either, so it is never let through
 * as a smaller transfer than the contract would read.
 */
import { decodeFunctionData, getAddress, isAddressEqual, parseAbi, type Address, type Hex } from 'viem';

const TOKEN_CALLS_ABI = parseAbi([
  'function transfer(address to, uint256 amount) returns (bool)',
  'function transferFrom(address from, address to, uint256 amount) returns (bool)',
  'function approve(address spender, uint256 amount) returns (bool)',
  'function increaseAllowance(address spender, uint256 addedValue) returns (bool)',
  'function permit(address owner, address spender, uint256 value, uint256 deadline, uint8 v, bytes32 r, bytes32 s)',
]);

export type TokenCallKind = 'transfer' | 'transferFrom' | 'approve' | 'increaseAllowance' | 'permit';

/** A token the wallet holds, as the decoder needs it. */
export interface CallableToken {
  id: number;
  contract: string;
  is_native: number;
}

export interface TokenCall {
  kind: TokenCallKind;
  /** The wallet token whose contract is called, and that contract. */
  tokenId: number;
  contract: Address;
  /** Who receives the amount: the recipient of a transfer, the spender of an approval. */
  to: Address;
  /** What the policy counts: the amount moved or approved. */
  amount: bigint;
  /** What the call takes from the wallet's own balance of the token (reserved until mined). */
  spend: bigint;
}

/** The token call `data` makes on `contract`, from the wallet at `from`; null when it is none. */
export function decodeTokenCall(tokens: readonly CallableToken[], from: Address, contract: Address, data: Hex): TokenCall | null {
  const token = tokens.find((t) => t.is_native !== 1 && isAddressEqual(getAddress(t.contract), contract));
  if (!token) return null;
  let decoded;
  try {
    decoded = decodeFunctionData({ abi: TOKEN_CALLS_ABI, data });
  } catch {
    return null;
  }
  const call = (to: Address, amount: bigint, spend: bigint): TokenCall => ({
    kind: decoded.functionName,
    tokenId: token.id,
    contract: getAddress(token.contract),
    to: getAddress(to),
    amount,
    spend,
  });
  switch (decoded.functionName) {
    case 'transfer':
      return call(decoded.args[0], decoded.args[1], decoded.args[1]);
    case 'transferFrom':
      return call(decoded.args[1], decoded.args[2], isAddressEqual(decoded.args[0], from) ? decoded.args[2] : 0n);
    case 'approve':
    case 'increaseAllowance':
      return call(decoded.args[0], decoded.args[1], 0n);
    case 'permit':
      return call(decoded.args[1], decoded.args[2], 0n);
  }
}
