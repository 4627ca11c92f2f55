/** A reconciliation → its JSON object: amounts as 18-place strings (signed), tokens by symbol. */
import { formatUnits18 } from '../../lib/money.js';
import { formatDateTime } from '../../lib/time.js';
import type { Reconciliation } from './reconciliation.service.js';

export function reconciliationView(r: Reconciliation) {
  const symbolOf = (tokenId: number) => r.tokensById.get(tokenId)?.symbol ?? String(tokenId);
  const decimalsOf = (tokenId: number) => r.tokensById.get(tokenId)?.decimals ?? 18;
  return {
    block_number: r.blockNumber,
    ok: r.ok,
    addresses: r.addresses.map((a) => ({
      address: a.address,
      kind: a.kind,
      charge_id: a.chargeId,
      tokens: a.tokens.map((t) => ({
        token: t.token.symbol,
        checkpoint_block: t.checkpointBlock,
        checkpoint_balance: formatUnits18(t.checkpointBalance, t.token.decimals),
        recorded_change: formatUnits18(t.recorded, t.token.decimals),
        chain_balance: formatUnits18(t.chain, t.token.decimals),
        difference: formatUnits18(t.difference, t.token.decimals),
      })),
    })),
    unswept: r.unswept.map((u) => ({
      address: u.address,
      charge_id: u.chargeId,
      token: u.token.symbol,
      amount: formatUnits18(u.amount, u.token.decimals),
      reason: u.reason,
    })),
    adjustments: r.adjustments.map((a) => ({
      address: a.address,
      token: symbolOf(a.token_id),
      amount: formatUnits18(a.amount, decimalsOf(a.token_id)),
      block_number: a.block_number,
      note: a.note,
      created_at: formatDateTime(a.created_at),
    })),
  };
}

/** One line of `cli reconcile` and of the daily run's log: the answer with its wallet. */
export function reconciliationLine(r: Reconciliation) {
  return { wallet_id: r.walletId, ...reconciliationView(r) };
}
