/**
 * Every column that holds a secret encrypted under APP_KEY, and the reads and writes key
 * rotation needs. A new encrypted column must be added to SECRET_COLUMNS (keys:rotate then
 * covers it; test/operations/keys-rotate.test.ts checks every `*_enc` column of the schema is listed).
 */
import type { Executor } from '../../db/index.js';

export const SECRET_COLUMNS = [
  { name: 'wallet_private_keys', table: 'wallets', column: 'private_key_enc' },
  { name: 'wallet_mnemonics', table: 'wallets', column: 'mnemonic_enc' },
  { name: 'sub_wallet_private_keys', table: 'sub_wallets', column: 'private_key_enc' },
  { name: 'webhook_secrets', table: 'webhooks', column: 'signature_enc' },
  { name: 'webhook_headers', table: 'webhooks', column: 'headers_enc' },
  { name: 'webhook_previous_secrets', table: 'webhooks', column: 'previous_signature_enc' },
] as const;

export type SecretColumn = (typeof SECRET_COLUMNS)[number];

/** One page of (id, encrypted value) with id > afterId, values that are set only. */
export async function pageSecrets(db: Executor, c: SecretColumn, afterId: number, limit: number): Promise<{ id: number; value: string }[]> {
  const rows = await db
    .selectFrom(c.table)
    .select(['id', `${c.column} as value`] as never)
    .where('id', '>', afterId)
    .where(c.column as never, 'is not', null)
    .orderBy('id', 'asc')
    .limit(limit)
    .execute();
  return rows as unknown as { id: number; value: string }[];
}

/** How many values of the column are still of the earlier format (`v1`, not bound to their place). */
export async function countUnbound(db: Executor, c: SecretColumn): Promise<number> {
  const row = await db
    .selectFrom(c.table)
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where(c.column as never, 'like', 'v1.%' as never)
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

/** Set by keys:rotate once no `v1` value is left: from then on one is refused (migration 031). */
export const UNBOUND_REFUSED = 'secrets_unbound_refused';

export async function isUnboundRefused(db: Executor): Promise<boolean> {
  const row = await db.selectFrom('app_flags').select('name').where('name', '=', UNBOUND_REFUSED).executeTakeFirst();
  return row !== undefined;
}

export async function markUnboundRefused(db: Executor, nowMs: number): Promise<void> {
  await db
    .insertInto('app_flags')
    .values({ name: UNBOUND_REFUSED, set_at: nowMs })
    .onConflict((oc) => oc.column('name').doNothing())
    .execute();
}

/** Replaces one value if it is still the one read (a concurrent change wins); true when replaced. */
export async function replaceSecret(db: Executor, c: SecretColumn, id: number, oldValue: string, newValue: string): Promise<boolean> {
  const r = await db
    .updateTable(c.table)
    .set({ [c.column]: newValue } as never)
    .where('id', '=', id)
    .where(c.column as never, '=', oldValue as never)
    .executeTakeFirst();
  return Number(r.numUpdatedRows) === 1;
}
