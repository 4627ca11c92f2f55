/**
 * The spending policy's decision for a new outgoing transfer, taken by the create inside its
 * database transaction, after the wallet's lock (transactions.service.ts, `recordBatchOnce`): every
 * earlier create of the wallet, in this process or another, has committed its row by then, so
 * the daily sum includes it and concurrent creates cannot pass a limit together.
 *
 * Order: per-transaction limit, daily limit, allowlist, then approval. Only the limits of the
 * transfer's token apply. A contract call is policed by what it does (`enforceCallPolicy`):
 * its native value as a native transfer, and a token call as a transfer of that token. A transfer that
 * passes every limit but is over `approval_above` is held for a person's approval (a `HoldReason`:
 * recorded `awaiting_approval` with that reason, nothing signed; transactions.record.ts).
 */
import type { Executor } from '../../db/index.js';
import { Errors } from '../../errors.js';
import { hasAnyPolicy, isAllowlisted, outgoingAmountsSince, policyForToken } from './policies.repository.js';
import type { TokenCall } from './token-calls.js';

/** The daily limit's window: the rolling last 24 hours. */
export const DAILY_WINDOW_MS = 24 * 60 * 60 * 1000;

export interface PolicedTransfer {
  walletId: number;
  tokenId: number;
  amount: bigint;
  to: string;
}

/**
 * Why the policy holds a transfer for a person's approval: its amount over `limit`, the
 * `approval_above` of the token `tokenId` (a contract call's may be the token its calldata
 * moves); or a contract call whose effect cannot be read from its calldata, to a contract not on
 * the allowlist of a wallet with a policy (`enforceCallPolicy`).
 */
export type HoldReason = { rule: 'approval_above'; limit: bigint; tokenId: number } | { rule: 'contract_call' };

/** What the policy lets the create do: sign and send now, or hold the transfer for approval, and why. */
export type PolicyDecision = 'send' | HoldReason;

/** Throws the policy's 400 when the transfer is refused, else decides; the caller holds the wallet's lock. */
export function enforcePolicy(trx: Executor, t: PolicedTransfer, nowMs: number): Promise<PolicyDecision> {
  return enforceBatchPolicy(trx, { walletId: t.walletId, tokenId: t.tokenId, items: [{ amount: t.amount, to: t.to }] }, nowMs);
}

/**
 * Whether the wallet's policy sets nothing for this token (no limit, no allowlist): a transfer of
 * it passes whatever its amount and recipient, and is never held. The caller holds the wallet's
 * lock (a hot wallet's creates recorded together, transactions.service.ts).
 */
export async function isUnpoliced(trx: Executor, walletId: number, tokenId: number): Promise<boolean> {
  const { limits, allowlistOnly } = await policyForToken(trx, walletId, tokenId);
  return !allowlistOnly && Object.keys(limits).length === 0;
}

/**
 * The decision for one transfer or a payout's items as a whole (payouts.service.ts), before
 * any is sent: each item under
 * `per_transaction` and on the allowlist when it is required, the total within `daily`, and the
 * total over `approval_above` holds the whole payout for a person. Each item is policed again
 * when its turn comes (its own create), so payouts and transfers together still never pass a
 * limit. The caller holds the wallet's lock.
 */
export async function enforceBatchPolicy(
  trx: Executor,
  b: { walletId: number; tokenId: number; items: { amount: bigint; to: string }[] },
  nowMs: number,
): Promise<PolicyDecision> {
  const { limits, allowlistOnly } = await policyForToken(trx, b.walletId, b.tokenId);
  const total = b.items.reduce((s, i) => s + i.amount, 0n);
  if (limits.per_transaction !== undefined && b.items.some((i) => i.amount > limits.per_transaction!))
    throw Errors.overPerTransactionLimit();
  if (limits.daily !== undefined) {
    const sent = (await outgoingAmountsSince(trx, b.walletId, b.tokenId, nowMs - DAILY_WINDOW_MS)).reduce((s, a) => s + a, 0n);
    if (sent + total > limits.daily) throw Errors.overDailyLimit();
  }
  if (allowlistOnly) {
    for (const i of b.items) if (!(await isAllowlisted(trx, b.walletId, i.to))) throw Errors.notAllowlisted();
  }
  const threshold = limits.approval_above;
  return threshold !== undefined && total > threshold ? { rule: 'approval_above', limit: threshold, tokenId: b.tokenId } : 'send';
}

/** A contract call as the policy sees it: its native value, the contract, and the token call its calldata makes, if any (token-calls.ts). */
export interface PolicedCall {
  walletId: number;
  nativeTokenId: number;
  value: bigint;
  contract: string;
  tokenCall: TokenCall | null;
}

/**
 * The decision for a contract call. Its native value is policed as a native transfer to the
 * contract, as before. A token call is policed as a transfer of its token to its recipient or
 * spender (limits, daily count, allowlist on that address), and the value of a token call that
 * sends none is not checked against the allowlist: the address it pays is the recipient. Any
 * other call on a wallet whose policy sets anything (a limit of any token, or
 * `allowlist_only`) is held for a person's approval unless the contract is on the allowlist:
 * what it does with the money cannot be read from its calldata.
 */
export async function enforceCallPolicy(trx: Executor, c: PolicedCall, nowMs: number): Promise<PolicyDecision> {
  const valueTo = c.tokenCall !== null && c.value === 0n ? c.tokenCall.to : c.contract;
  const native = await enforcePolicy(trx, { walletId: c.walletId, tokenId: c.nativeTokenId, amount: c.value, to: valueTo }, nowMs);
  if (c.tokenCall !== null) {
    const token = await enforcePolicy(
      trx,
      { walletId: c.walletId, tokenId: c.tokenCall.tokenId, amount: c.tokenCall.amount, to: c.tokenCall.to },
      nowMs,
    );
    // Both over their thresholds: the native value's is named (the first checked).
    return native !== 'send' ? native : token;
  }
  if (native !== 'send') return native;
  if (!(await hasAnyPolicy(trx, c.walletId))) return 'send';
  return (await isAllowlisted(trx, c.walletId, c.contract)) ? 'send' : { rule: 'contract_call' };
}
