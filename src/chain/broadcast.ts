/**
 * Sending a signed transaction and reading what the node's answer means. The only outcomes
 * that change state are `rejected` (every endpoint asked refused it: on a first send it becomes
 * failed and its reservation is released, unless the refusal says a pool holds another
 * transaction at its nonce) and `sent`/`known`. Anything ambiguous (the node could not be
 * reached, timed out, or answered with an error we do not recognise) leaves the transaction
 * pending; the watcher asks the node again later and re-sends it if it is unknown.
 */
import { inProcessSignal } from '../lib/signal.js';
import {
  BaseError,
  parseTransaction,
  recoverTransactionAddress,
  TransactionNotFoundError,
  type Hex,
  type PublicClient,
  type TransactionSerialized,
} from 'viem';
import { ALREADY_KNOWN, isUnreachable, refusalKind } from './errors.js';

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
  /**
   * Refused by every endpoint asked, and unknown to them. `nonceUsed`: its nonce was taken by
   * another transaction (the chain shows it used). `nonceHeld`: a pool holds another transaction
   * of the sender at its nonce ("replacement transaction underpriced"): not final, since that one
   * may be evicted and this one then taken, and the nonce is not free while that one may mine.
   * Otherwise definitive: never minable as signed.
   */
  | { kind: 'rejected'; reason: string; nonceUsed: boolean; nonceHeld: boolean }
  | { kind: 'unreachable'; reason: string }
  | { kind: 'unknown'; reason: string };

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
    if (e instanceof TransactionNotFoundError || (e instanceof BaseError && e.walk((x) => x instanceof TransactionNotFoundError)))
      return false;
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
    if (ALREADY_KNOWN.test(reason)) return { kind: 'known' };
    // Every endpoint asked refused it definitely (EndpointSet.broadcast answers a refusal only then).
    const refusal = refusalKind(reason);
    if (refusal === null) return { kind: 'unknown', reason };
    // "nonce too low" is also what a node says when this very transaction was already mined.
    const known = await nodeKnows(client, hash);
    if (known === true) return { kind: 'known' };
    if (known === null) return { kind: 'unknown', reason };
    if (refusal !== 'nonce-too-low') return { kind: 'rejected', reason, nonceUsed: false, nonceHeld: refusal === 'nonce-held' };
    // The nonce is used only as the chain shows it: a node (or a balancer's backend) that says
    // "nonce too low" about a nonce the chain at its head has not used is wrong or not yet there,
    // and skipping that nonce would hold every later transfer of the sender behind it.
    return (await nonceUsedOnChain(client, raw))
      ? { kind: 'rejected', reason, nonceUsed: true, nonceHeld: false }
      : { kind: 'unknown', reason };
  }
}

/**
 * True when a node's chain shows the signed transaction's nonce used (its count at `latest`, asked
 * of the freshest endpoint first, above the nonce: a count is never higher than the chain it was
 * read from); false when it does not, or when no endpoint can tell now.
 */
async function nonceUsedOnChain(client: PublicClient, raw: Hex): Promise<boolean> {
  try {
    const tx = parseTransaction(raw);
    const address = await recoverTransactionAddress({ serializedTransaction: raw as TransactionSerialized });
    const count = await client.getTransactionCount({ address, blockTag: 'latest' });
    return count > (tx.nonce ?? 0);
  } catch {
    return false;
  }
}
