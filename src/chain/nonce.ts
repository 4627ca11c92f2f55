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
 * pending transactions still hold, so the next transaction fills the gap.
 */
import type { Address, PublicClient } from 'viem';

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
