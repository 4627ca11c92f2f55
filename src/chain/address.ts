/** EVM address checks shared by every input that names an address (the checksummed form outputs show: lib/address.ts). */
import { getAddress, type Address } from 'viem';
import { ADDRESS } from '../lib/address.js';

/** 0x and 40 hex digits; all lower or all upper case, or mixed case with a valid EIP-55 checksum. */
export function isValidAddress(value: string): value is Address {
  if (!ADDRESS.test(value)) return false;
  const hex = value.slice(2);
  if (hex === hex.toLowerCase() || hex === hex.toUpperCase()) return true;
  return getAddress(value) === value;
}
