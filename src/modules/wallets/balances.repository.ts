/** wallet_balances: the cache of on-chain balances, in base units. */
import type { Executor } from '../../db/index.js';
import { prepare } from '../../db/prepared.js';
import type { SqlDialect } from '../../db/dialect.js';
import type { WalletTokenRow } from '../../db/types.js';

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
    .select(['id', 'amount', 'last_balance', 'block_number'])
    .where('wallet_id', '=', walletId)
    .where('token_id', '=', tokenId);
  const row = await dialect.forUpdate(q).executeTakeFirst();
  return row
    ? {
        id: row.id,
        amount: BigInt(row.amount),
        last_balance: BigInt(row.last_balance),
        block_number: row.block_number === null ? null : Number(row.block_number),
      }
    : undefined;
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

/** Stores a reading of block `block` (the caller checked that no later one is stored). */
export async function updateBalance(
  db: Executor,
  id: number,
  amount: bigint,
  lastBalance: bigint,
  block: number,
  nowMs: number,
): Promise<void> {
  await db
    .updateTable('wallet_balances')
    .set({ amount: amount.toString(), last_balance: lastBalance.toString(), block_number: block, refreshed_at: nowMs, updated_at: nowMs })
    .where('id', '=', id)
    .execute();
}

/** The same amount read again, at block `block` (not older than the stored one). */
export async function touchBalance(db: Executor, id: number, block: number, nowMs: number): Promise<void> {
  await db.updateTable('wallet_balances').set({ refreshed_at: nowMs, block_number: block }).where('id', '=', id).execute();
}

/**
 * The wallet's active tokens with their cached balances, in one query (the balance route's hot
 * path: one round trip instead of two), compiled once (src/db/prepared.ts).
 */
const activeTokensWithCache = prepare(
  (db: Executor, walletId: number) =>
    db
      .selectFrom('wallet_tokens as t')
      .leftJoin('wallet_balances as b', (j) => j.onRef('b.token_id', '=', 't.id').onRef('b.wallet_id', '=', 't.wallet_id'))
      .select([
        't.id',
        't.wallet_id',
        't.name',
        't.symbol',
        't.decimals',
        't.contract',
        't.is_native',
        't.is_active',
        't.is_testnet',
        't.created_at',
        't.updated_at',
        'b.amount',
        'b.last_balance',
        'b.refreshed_at',
      ])
      .where('t.wallet_id', '=', walletId)
      .where('t.is_active', '=', 1)
      .orderBy('t.id', 'asc'),
  // Kept until a token or a cached balance is written (src/db/read-cache.ts); each request still
  // decides by `refreshed_at` whether the cached balance is young enough to serve.
  { cache: { tables: ['wallet_tokens', 'wallet_balances'] } },
);

export async function listActiveTokensWithCache(db: Executor, walletId: number): Promise<TokensWithCache> {
  const rows = await activeTokensWithCache.execute(db, walletId);
  // Rows served from the read cache are the same frozen array each time: so is their mapping.
  const known = mapped.get(rows);
  if (known) return known;
  const result = mapTokensWithCache(rows);
  if (Object.isFrozen(rows)) {
    result.tokens.forEach((t) => Object.freeze(t));
    Object.freeze(result.tokens);
    mapped.set(rows, Object.freeze(result));
  }
  return result;
}

type TokenWithCacheRow = Awaited<ReturnType<typeof activeTokensWithCache.execute>>[number];
export type TokensWithCache = { tokens: WalletTokenRow[]; cached: Map<number, CachedBalance> };
const mapped = new WeakMap<readonly TokenWithCacheRow[], TokensWithCache>();

function mapTokensWithCache(rows: readonly TokenWithCacheRow[]): TokensWithCache {
  const tokens: WalletTokenRow[] = [];
  const cached = new Map<number, CachedBalance>();
  for (const { amount, last_balance, refreshed_at, ...token } of rows) {
    tokens.push(token);
    if (amount !== null && last_balance !== null && refreshed_at !== null) {
      cached.set(token.id, { token_id: token.id, amount: BigInt(amount), last_balance: BigInt(last_balance), refreshed_at });
    }
  }
  return { tokens, cached };
}
