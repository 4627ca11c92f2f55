/** wallet_tokens rows. */
import { sql } from 'kysely';
import type { Executor } from '../../db/index.js';
import { prepare } from '../../db/prepared.js';
import type { WalletTokenRow } from '../../db/types.js';

export const TOKEN_COLUMNS = [
  'id',
  'wallet_id',
  'name',
  'symbol',
  'decimals',
  'contract',
  'is_native',
  'is_active',
  'is_testnet',
  'created_at',
  'updated_at',
] as const;

/**
 * A wallet's tokens: every transfer, balance and watcher pass reads them. Compiled once and kept
 * until wallet_tokens is written (src/db/read-cache.ts; on PostgreSQL by migration 009's NOTIFY).
 * The rows are frozen.
 */
const tokensOf = prepare(
  (db: Executor, walletId: number) =>
    db.selectFrom('wallet_tokens').select(TOKEN_COLUMNS).where('wallet_id', '=', walletId).orderBy('id', 'asc'),
  {
    cache: { tables: ['wallet_tokens'] },
  },
);
const activeTokensOf = prepare(
  (db: Executor, walletId: number) =>
    db.selectFrom('wallet_tokens').select(TOKEN_COLUMNS).where('wallet_id', '=', walletId).where('is_active', '=', 1).orderBy('id', 'asc'),
  { cache: { tables: ['wallet_tokens'] } },
);

export function listTokens(db: Executor, walletId: number, opts: { activeOnly?: boolean } = {}): Promise<WalletTokenRow[]> {
  return (opts.activeOnly ? activeTokensOf : tokensOf).execute(db, walletId);
}

/** The wallet's native token (every wallet has one; `activeOnly`: only while it is active). */
export async function findNativeToken(
  db: Executor,
  walletId: number,
  opts: { activeOnly?: boolean } = {},
): Promise<WalletTokenRow | undefined> {
  return (await listTokens(db, walletId, opts)).find((t) => t.is_native === 1);
}

export function findToken(db: Executor, walletId: number, tokenId: number): Promise<WalletTokenRow | undefined> {
  return db
    .selectFrom('wallet_tokens')
    .select(TOKEN_COLUMNS)
    .where('wallet_id', '=', walletId)
    .where('id', '=', tokenId)
    .executeTakeFirst();
}

/** The active token of a wallet with this symbol (case-insensitive), if any. */
export async function findActiveTokenBySymbol(db: Executor, walletId: number, symbol: string): Promise<WalletTokenRow | undefined> {
  const rows = await listTokens(db, walletId, { activeOnly: true });
  const s = symbol.toUpperCase();
  return rows.find((r) => r.symbol.toUpperCase() === s);
}

export interface NewToken {
  wallet_id: number;
  name: string;
  symbol: string;
  decimals: number;
  contract: string;
  is_native: boolean;
  is_testnet: boolean;
}

export async function insertToken(db: Executor, t: NewToken, nowMs: number): Promise<WalletTokenRow> {
  return db
    .insertInto('wallet_tokens')
    .values({
      wallet_id: t.wallet_id,
      name: t.name,
      symbol: t.symbol,
      decimals: t.decimals,
      contract: t.contract,
      is_native: t.is_native ? 1 : 0,
      is_active: 1,
      is_testnet: t.is_testnet ? 1 : 0,
      created_at: nowMs,
      updated_at: nowMs,
    })
    .returning(TOKEN_COLUMNS)
    .executeTakeFirstOrThrow();
}

export async function setTokenActive(db: Executor, tokenId: number, active: boolean, nowMs: number): Promise<void> {
  await db
    .updateTable('wallet_tokens')
    .set({ is_active: active ? 1 : 0, updated_at: nowMs })
    .where('id', '=', tokenId)
    .execute();
}

/** The token of a wallet with this contract, whatever the case of its hex letters. */
export function findTokenByContractAnyCase(db: Executor, walletId: number, contract: string): Promise<WalletTokenRow | undefined> {
  return db
    .selectFrom('wallet_tokens')
    .select(TOKEN_COLUMNS)
    .where('wallet_id', '=', walletId)
    .where(sql<string>`lower(contract)`, '=', contract.toLowerCase())
    .executeTakeFirst();
}

/** Marks a removed token active again with its metadata as the chain reports it now. */
export async function reactivateToken(
  db: Executor,
  tokenId: number,
  meta: { name: string; symbol: string; decimals: number },
  nowMs: number,
): Promise<WalletTokenRow> {
  return db
    .updateTable('wallet_tokens')
    .set({ name: meta.name, symbol: meta.symbol, decimals: meta.decimals, is_active: 1, updated_at: nowMs })
    .where('id', '=', tokenId)
    .returning(TOKEN_COLUMNS)
    .executeTakeFirstOrThrow();
}
