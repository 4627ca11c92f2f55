/**
 * The two ways a payer reaches a charge: the hosted checkout page (`PUBLIC_URL/pay/{uuid}`) and
 * an EIP-681 payment request URI a wallet app opens or scans:
 *
 *   native token  ethereum:{deposit address}@{chain id}?value={wei}
 *   ERC-20        ethereum:{token contract}@{chain id}/transfer?address={deposit address}&uint256={units}
 *
 * Amounts are integers in base units (wei, token units), never decimals or exponents, so
 * every wallet reads the same number.
 */
import { NATIVE_CONTRACT } from '../../chain/erc20.js';

export interface PaymentTarget {
  /** The charge's deposit address. */
  address: string;
  /** The token contract; NATIVE_CONTRACT for the network's own currency. */
  contract: string;
  chain_id: number;
  /** What to pay, in the token's base units. */
  amount: bigint;
}

export function isNativeContract(contract: string): boolean {
  return contract.toLowerCase() === NATIVE_CONTRACT;
}

export function paymentUri(t: PaymentTarget): string {
  if (isNativeContract(t.contract)) return `ethereum:${t.address}@${t.chain_id}?value=${t.amount.toString()}`;
  return `ethereum:${t.contract}@${t.chain_id}/transfer?address=${t.address}&uint256=${t.amount.toString()}`;
}

export function hostedUrl(publicUrl: string, uuid: string): string {
  return `${publicUrl}/pay/${uuid}`;
}
