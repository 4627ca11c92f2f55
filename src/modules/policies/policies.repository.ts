/**
 * The `spending_policies`, `spending_limits` and `allowlist_entries` tables, and the one read of
 * `transactions` the daily limit needs. Amounts leave as bigint; nothing is summed in SQL.
 */
import { sql } from 'kysely';
import type { Executor } from '../../db/index.js';
import { prepare } from '../../db/prepared.js';

export const LIMIT_KINDS = ['per_transaction', 'daily', 'approval_above'] as const;
export type LimitKind = (typeof LIMIT_KINDS)[number];

export interface LimitRow {
  token_id: number;
  kind: LimitKind;
  amount: bigint;
}

export interface PolicyHead {
  allowlist_only: boolean;
  updated_at: number | null;
}

export interface AllowlistEntry {
  id: number;
  wallet_id: number;
  address: string;
  label: string;
  created_at: number;
}

const ENTRY_COLUMNS = ['id', 'wallet_id', 'address', 'label', 'created_at'] as const;

function toEntry(r: {
  id: number | string;
  wallet_id: number | string;
  address: string;
  label: string;
  created_at: number | string;
}): AllowlistEntry {
  return { id: Number(r.id), wallet_id: Number(r.wallet_id), address: r.address, label: r.label, created_at: Number(r.created_at) };
}

// Every create reads both under the wallet lock: compiled once (src/db/prepared.ts).
const policyHead = prepare((db: Executor, walletId: number) =>
  db.selectFrom('spending_policies').select(['allowlist_only', 'updated_at']).where('wallet_id', '=', walletId),
);

/** The kind under which `tokenPolicy` returns the wallet's `allowlist_only` beside its limits. */
const ALLOWLIST_ONLY = 'allowlist_only';

// One statement for what a create reads under the wallet's lock: the token's limits and the
// wallet's allowlist switch (a row of kind ALLOWLIST_ONLY, amount '1' or '0'; none: no policy).
const tokenPolicy = prepare((db: Executor, walletId: number, tokenId: number) =>
  db
    .selectFrom('spending_limits')
    .select(['kind', sql<string>`cast(amount as text)`.as('amount')])
    .where('wallet_id', '=', walletId)
    .where('token_id', '=', tokenId)
    .unionAll(
      db
        .selectFrom('spending_policies')
        .select([sql<string>`${sql.lit(ALLOWLIST_ONLY)}`.as('kind'), sql<string>`cast(allowlist_only as text)`.as('amount')])
        .where('wallet_id', '=', walletId),
    ),
);

/** The wallet's limits of one token, by kind, and whether only its allowlist may be paid. */
export async function policyForToken(
  db: Executor,
  walletId: number,
  tokenId: number,
): Promise<{ limits: Partial<Record<LimitKind, bigint>>; allowlistOnly: boolean }> {
  const limits: Partial<Record<LimitKind, bigint>> = {};
  let allowlistOnly = false;
  for (const r of await tokenPolicy.execute(db, walletId, tokenId)) {
    if (r.kind === ALLOWLIST_ONLY) allowlistOnly = r.amount === '1';
    else limits[r.kind as LimitKind] = BigInt(r.amount);
  }
  return { limits, allowlistOnly };
}

export async function findPolicyHead(db: Executor, walletId: number): Promise<PolicyHead> {
  const row = await policyHead.executeTakeFirst(db, walletId);
  return { allowlist_only: Number(row?.allowlist_only ?? 0) === 1, updated_at: row ? Number(row.updated_at) : null };
}

export async function listLimits(db: Executor, walletId: number): Promise<LimitRow[]> {
  const rows = await db
    .selectFrom('spending_limits')
    .select(['token_id', 'kind', 'amount'])
    .where('wallet_id', '=', walletId)
    .orderBy('id')
    .execute();
  return rows.map((r) => ({ token_id: Number(r.token_id), kind: r.kind as LimitKind, amount: BigInt(r.amount) }));
}

/** Creates the wallet's policy row, or moves its `updated_at` (and `allowlist_only` when given). */
export async function upsertPolicyHead(db: Executor, walletId: number, allowlistOnly: boolean | undefined, nowMs: number): Promise<void> {
  const values = { wallet_id: walletId, allowlist_only: allowlistOnly ? 1 : 0, updated_at: nowMs };
  const set = allowlistOnly === undefined ? { updated_at: nowMs } : { updated_at: nowMs, allowlist_only: allowlistOnly ? 1 : 0 };
  await db
    .insertInto('spending_policies')
    .values(values)
    .onConflict((oc) => oc.column('wallet_id').doUpdateSet(set))
    .execute();
}

/** Sets one limit (amount) or removes it (null). */
export async function setLimit(db: Executor, walletId: number, tokenId: number, kind: LimitKind, amount: bigint | null): Promise<void> {
  if (amount === null) {
    await db
      .deleteFrom('spending_limits')
      .where('wallet_id', '=', walletId)
      .where('token_id', '=', tokenId)
      .where('kind', '=', kind)
      .execute();
    return;
  }
  await db
    .insertInto('spending_limits')
    .values({ wallet_id: walletId, token_id: tokenId, kind, amount: amount.toString() })
    .onConflict((oc) => oc.columns(['wallet_id', 'token_id', 'kind']).doUpdateSet({ amount: amount.toString() }))
    .execute();
}

export async function listAllowlist(db: Executor, walletId: number): Promise<AllowlistEntry[]> {
  const rows = await db.selectFrom('allowlist_entries').select(ENTRY_COLUMNS).where('wallet_id', '=', walletId).orderBy('id').execute();
  return rows.map(toEntry);
}

export async function findAllowlistEntry(db: Executor, walletId: number, id: number): Promise<AllowlistEntry | undefined> {
  const row = await db
    .selectFrom('allowlist_entries')
    .select(ENTRY_COLUMNS)
    .where('wallet_id', '=', walletId)
    .where('id', '=', id)
    .executeTakeFirst();
  return row ? toEntry(row) : undefined;
}

export async function isAllowlisted(db: Executor, walletId: number, address: string): Promise<boolean> {
  const row = await db
    .selectFrom('allowlist_entries')
    .select('id')
    .where('wallet_id', '=', walletId)
    .where('address_key', '=', address.toLowerCase())
    .executeTakeFirst();
  return row !== undefined;
}

/** Inserts the entry; undefined when the wallet already lists the address. */
export async function insertAllowlistEntry(
  db: Executor,
  e: { wallet_id: number; address: string; label: string; nowMs: number },
): Promise<AllowlistEntry | undefined> {
  const row = await db
    .insertInto('allowlist_entries')
    .values({ wallet_id: e.wallet_id, address: e.address, address_key: e.address.toLowerCase(), label: e.label, created_at: e.nowMs })
    .onConflict((oc) => oc.columns(['wallet_id', 'address_key']).doNothing())
    .returning(ENTRY_COLUMNS)
    .executeTakeFirst();
  return row ? toEntry(row) : undefined;
}

export async function deleteAllowlistEntry(db: Executor, walletId: number, id: number): Promise<boolean> {
  const r = await db.deleteFrom('allowlist_entries').where('wallet_id', '=', walletId).where('id', '=', id).executeTakeFirst();
  return Number(r.numDeletedRows) > 0;
}

/**
 * The amounts of the wallet's own outgoing transfers and contract calls of one token created
 * since `sinceMs` that have not failed (pending, awaiting approval or confirmed): the daily
 * limit's count. A contract call counts its native value toward the native token, and, when it
 * is a call to one of the wallet's token contracts (`call_token_id`, migration 029), the amount
 * it moves or approves toward that token. Read under the wallet's lock by the create, so it sees
 * every earlier create's row.
 */
export async function outgoingAmountsSince(db: Executor, walletId: number, tokenId: number, sinceMs: number): Promise<bigint[]> {
  const rows = await db
    .selectFrom('transactions')
    .select('amount')
    .where('wallet_id', '=', walletId)
    .where('token_id', '=', tokenId)
    .where('created_at', '>=', sinceMs)
    .where('type', 'in', ['transfer', 'contract'])
    .where('status', '<>', 'failed')
    .unionAll(
      db
        .selectFrom('transactions')
        .select(sql<string>`call_amount`.as('amount'))
        .where('wallet_id', '=', walletId)
        .where('call_token_id', '=', tokenId)
        .where('created_at', '>=', sinceMs)
        .where('status', '<>', 'failed'),
    )
    .execute();
  return rows.map((r) => BigInt(r.amount));
}

/** Whether the wallet's policy sets anything: a limit of any token, or `allowlist_only`. */
export async function hasAnyPolicy(db: Executor, walletId: number): Promise<boolean> {
  const [limit, head] = await Promise.all([
    db.selectFrom('spending_limits').select('id').where('wallet_id', '=', walletId).limit(1).executeTakeFirst(),
    db.selectFrom('spending_policies').select('allowlist_only').where('wallet_id', '=', walletId).executeTakeFirst(),
  ]);
  return limit !== undefined || Number(head?.allowlist_only ?? 0) === 1;
}
