/**
 * Sending a signed transaction and reading what the node's answer means. The only outcomes
 * that change state are `rejected` (the node will never take this transaction: it becomes
 * failed and its reservation is released) and `sent`/`known`. Anything ambiguous (the node
 * could not be reached, timed out, or answered with an error we do not recognise) leaves the
 * transaction pending; the watcher asks the node again later and re-sends it if it is unknown.
 */
import { inProcessSignal } from '../lib/signal.js';
import { BaseError, TransactionNotFoundError, type Hex, type PublicClient } from 'viem';
import { isUnreachable } from './errors.js';

const accepted = inProcessSignal();

/**
 * Calls `fn` each time a node accepts (or already had) a transaction this process sent: the
 * watcher looks for its block sooner where blocks come faster than it polls. Returns the unsubscribe.
 */
export const onBroadcast = (fn: () => void): (() => void) => accepted.on(fn);

export type BroadcastOutcome =
  | { kind: 'sent' }
  /** The node already had it (in its pool or mined). */
  | { kind: 'known' }
  /** Definitive: never minable as signed. `nonceUsed`: its nonce was taken by another transaction. */
  | { kind: 'rejected'; reason: string; nonceUsed: boolean }
  | { kind: 'unreachable'; reason: string }
  | { kind: 'unknown'; reason: string };

const KNOWN = /already known|known transaction|already imported|alreadyknown|already exists/i;
const NONCE_USED = /nonce too low|nonce is too low|nonce has already been used|oldnonce|replacement transaction underpriced|already used/i;
const REJECTED =
  /insufficient funds|intrinsic gas|gas too low|exceeds block gas limit|gas limit reached|invalid sender|invalid signature|transaction underpriced|max fee per gas less than block base fee|fee cap|gasprice too low|gas price too low|invalid chain|chain id|tx type not supported|oversized data|nonce too high|nonce max/i;

/** The node's own words for an error (the RPC error message), for classification and logs. */
export function nodeMessage(err: unknown): string {
  if (err instanceof BaseError) {
    const details = err.walk((e) => e instanceof BaseError && typeof e.details === 'string' && e.details !== '') as BaseError | null;
    return (details?.details || err.shortMessage || err.message).slice(0, 300);
  }
  return err instanceof Error ? err.message.slice(0, 300) : String(err).slice(0, 300);
}

/** Does the node know the transaction (pool or chain)? null when it cannot tell us. */
export async function nodeKnows(client: PublicClient, hash: Hex): Promise<boolean | null> {
  try {
    await client.getTransaction({ hash });
    return true;
  } catch (e) {
    if (e instanceof TransactionNotFoundError || (e instanceof BaseError && e.walk((x) => x instanceof TransactionNotFoundError))) return false;
    return null;
  }
}

export async function broadcastRaw(client: PublicClient, raw: Hex, hash: Hex): Promise<BroadcastOutcome> {
  const outcome = await send(client, raw, hash);
  if (outcome.kind === 'sent' || outcome.kind === 'known') accepted.emit();
  return outcome;
}

async function send(client: PublicClient, raw: Hex, hash: Hex): Promise<BroadcastOutcome> {
  try {
    await client.sendRawTransaction({ serializedTransaction: raw });
    return { kind: 'sent' };
  } catch (e) {
    const reason = nodeMessage(e);
    if (isUnreachable(e)) return { kind: 'unreachable', reason };
    if (KNOWN.test(reason)) return { kind: 'known' };
    if (NONCE_USED.test(reason) || REJECTED.test(reason)) {
      // "nonce too low" is also what a node says when this very transaction was already mined.
      const known = await nodeKnows(client, hash);
      if (known === true) return { kind: 'known' };
      if (known === null) return { kind: 'unknown', reason };
      return { kind: 'rejected', reason, nonceUsed: NONCE_USED.test(reason) };
    }
    return { kind: 'unknown', reason };
  }
}
