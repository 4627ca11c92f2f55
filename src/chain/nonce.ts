/**
 * Nonces of a wallet's main address. The service owns the address, so it hands nonces out
 * itself (wallet_nonces.next_nonce) under the wallet's row lock, never trusting the node's pending
 * count alone (two concurrent creates would both read the same count). The node's pending
 * count is still taken, before the lock, so a nonce used outside the service is never reused.
 *
 * Allocation: start at max(next_nonce, node's pending count) and skip every nonce still held
 * by one of the wallet's pending transactions. Healing: when a transaction that was never
 * mined fails (the node definitively rejected it), its nonce is free again and next_nonce goes
 * back down to it (if lower); the skip rule keeps the next allocation off the nonces that later
 * pending transactions still hold, so the next transaction fills the gap. Should next_nonce be
 * past a nonce the chain has not used and no transaction of ours holds (a node counted a pool
 * transaction there that it never mined), the gap filler signs at exactly that nonce.
 */
import type { Address, Hex, PublicClient } from 'viem';
import { fullBlockAt } from './blocks.js';

/** The node's count of the address's transactions, pending ones included. */
export function chainPendingNonce(client: PublicClient, address: Address): Promise<number> {
  return client.getTransactionCount({ address, blockTag: 'pending' });
}

/** The lowest nonce ≥ max(nextNonce, chainPending) that no pending transaction holds. */
export function allocateNonce(nextNonce: number | null, chainPending: number, held: ReadonlySet<number>): number {
  let n = Math.max(nextNonce ?? 0, chainPending);
  while (held.has(n)) n += 1;
  return n;
}

/** next_nonce after the nonce `freed` was given back (a never-mined transaction failed). */
export function healNextNonce(nextNonce: number | null, freed: number): number | null {
  if (nextNonce === null) return null;
  return Math.min(nextNonce, freed);
}

/**
 * Where the chain used `address`'s nonce `nonce`, read at the height `final`:
 * - `unused`: the count at `final` has not passed it;
 * - `{ block, hash }`: the block that used it (found by doubling back from `final`, then halving)
 *   and the address's transaction at that nonce in it;
 * - `unproven`: the counts say used, yet the block they point at holds no transaction of the
 *   address at that nonce. The reads disagree (a node under load answers a count at its head from
 *   the block it is mining; a balancer's backends stand at different states): nothing is decided
 *   from them. On a chain a nonce is only ever used by a transaction from its address (this
 *   service signs no EIP-7702 authorization with its keys).
 * Every read names its block, so only an endpoint at that height answers it.
 */
export type NonceUse = 'unused' | 'unproven' | { block: number; hash: Hex };

export async function nonceUse(client: PublicClient, address: Address, nonce: number, final: number): Promise<NonceUse> {
  const used = async (h: number) => h >= 0 && (await client.getTransactionCount({ address, blockNumber: BigInt(h) })) > nonce;
  if (!(await used(final))) return 'unused';
  let hi = final; // used at hi
  let lo = final - 1; // not used at lo, once the loop ends
  for (let step = 1; await used(lo); step *= 2) [hi, lo] = [lo, final - 2 * step];
  while (hi - lo > 1) {
    const mid = lo + Math.floor((hi - lo) / 2);
    if (await used(mid)) hi = mid;
    else lo = mid;
  }
  const from = address.toLowerCase();
  const tx = (await fullBlockAt(client, hi)).transactions.find((x) => x.from.toLowerCase() === from && x.nonce === nonce);
  return tx ? { block: hi, hash: tx.hash } : 'unproven';
}
