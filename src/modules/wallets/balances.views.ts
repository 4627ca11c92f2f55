/** Balances as the API and the `balance.updated` event show them (exact 18-place strings). */
import type { WalletTokenRow } from '../../db/types.js';
import { formatUnits18 } from '../../lib/money.js';
import { formatDateTime } from '../../lib/time.js';
import { tokenView } from '../tokens/tokens.views.js';

/** A token with its balance. */
export function tokenBalanceView(t: WalletTokenRow, amount: bigint) {
  return { ...tokenView(t), balance: formatUnits18(amount, t.decimals) };
}

/** The balance route's data: the native balance and every token with its balance (values by token id). */
export function walletBalanceView(tokens: readonly WalletTokenRow[], values: ReadonlyMap<number, bigint>) {
  const native = tokens.find((t) => t.is_native === 1);
  return {
    balance: formatUnits18(native ? values.get(native.id)! : 0n, native?.decimals ?? 18),
    tokens: tokens.map((t) => tokenBalanceView(t, values.get(t.id)!)),
  };
}

/** `block`: the block `amount` was read at. */
export function balanceEventPayload(walletId: number, token: WalletTokenRow, old: bigint, amount: bigint, block: number, nowMs: number) {
  return {
    wallet_id: walletId,
    token: token.symbol,
    old_balance: formatUnits18(old, token.decimals),
    new_balance: formatUnits18(amount, token.decimals),
    change: formatUnits18(amount - old, token.decimals),
    block_number: block,
    updated_at: formatDateTime(nowMs),
  };
}
