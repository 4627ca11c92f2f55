/** wallet_balances: the cache of on-chain balances, in base units. */
import type { Executor } from '../../db/index.js';
import type { SqlDialect } from '../../db/dialect.js';

export interface CachedBalance {
  token_id: number;
  amount: bigint;
  last_balance: bigint;
  refreshed_at: number;
}

export async function listCachedBalances(db: Executor, walletId: number): Promise<Map<number, CachedBalance>> {
  const rows = await db
    .selectFrom('wallet_balances')
    .select(['token_id', 'amount', 'last_balance', 'refreshed_at'])
    .where('wallet_id', '=', walletId)
    .execute();
  return new Map(rows.map((r) => [r.token_id, { ...r, amount: BigInt(r.amount), last_balance: BigInt(r.last_balance) }]));
}

export async function findCachedBalanceForUpdate(db: Executor, dialect: SqlDialect, walletId: number, tokenId: number) {
  const q = db
    .selectFrom('wallet_balances')
    .select(['id', 'amount', 'last_balance'])
    .where('wallet_id', '=', walletId)
    .where('token_id', '=', tokenId);
  const row = await dialect.forUpdate(q).executeTakeFirst();
  return row ? { id: row.id, amount: BigInt(row.amount), last_balance: BigInt(row.last_balance) } : undefined;
}

export async function insertBalance(db: Executor, walletId: number, tokenId: number, amount: bigint, nowMs: number): Promise<void> {
  await db
    .insertInto('wallet_balances')
    .values({
      wallet_id: walletId,
      token_id: tokenId,
      amount: amount.toString(),
      last_balance: amount.toString(),
      refreshed_at: nowMs,
      created_at: nowMs,
      updated_at: nowMs,
    })
    .onConflict((oc) => oc.columns(['wallet_id', 'token_id']).doNothing())
    .execute();
}

export async function updateBalance(db: Executor, id: number, amount: bigint, lastBalance: bigint, nowMs: number): Promise<void> {
  await db
    .updateTable('wallet_balances')
    .set({ amount: amount.toString(), last_balance: lastBalance.toString(), refreshed_at: nowMs, updated_at: nowMs })
    .where('id', '=', id)
    .execute();
}

export async function touchBalance(db: Executor, id: number, nowMs: number): Promise<void> {
  await db.updateTable('wallet_balances').set({ refreshed_at: nowMs }).where('id', '=', id).execute();
}
