/**
 * The checksummed (EIP-55) form of a stored address, for every output that shows one. Here, not in
 * src/chain, because the repositories that build list pages as JSON use it and no repository
 * imports src/chain.
 */
import { checksumAddress, type Address } from 'viem';

/** 0x and 40 hex digits, any case. */
export const ADDRESS = /^0x[0-9a-fA-F]{40}$/;

/**
 * Checksummed forms by stored text, for the outputs that show many rows (a 1000-row list page, a
 * CSV export): those rows repeat few addresses (the wallet's own on each), and a checksum is a
 * keccak hash. Cleared when full, so its memory is bounded whatever the addresses.
 */
const checksummedByStored = new Map<string, string>();
const CHECKSUMMED_MAX = 4096;

/**
 * The EIP-55 form of a stored address, whatever its case (a node answers in lower case; an
 * address the service parsed is stored checksummed). A stored text that is not an address is
 * returned as it is: a view shows what is stored rather than fail.
 */
export function checksummedAddress(stored: string): string {
  let a = checksummedByStored.get(stored);
  if (a === undefined) {
    a = ADDRESS.test(stored) ? checksumAddress(stored as Address) : stored;
    if (checksummedByStored.size >= CHECKSUMMED_MAX) checksummedByStored.clear();
    checksummedByStored.set(stored, a);
  }
  return a;
}
