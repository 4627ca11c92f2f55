/**
 * Wallet rows. Read paths select explicit columns: the encrypted private key and mnemonic are
 * selected only by `findWalletSecrets`, which the signing code alone calls.
 */
import { sql, type RawBuilder } from 'kysely';
import { dialectOf } from '../../db/dialect.js';
import type { Executor } from '../../db/index.js';
import type { SecretPlace } from '../../lib/crypto.js';
import { prepare, prepareRow } from '../../db/prepared.js';

export interface WalletView {
  id: number;
  user_id: number;
  network_id: number;
  name: string;
  description: string;
  address: string;
  /** From the wallet's network. */
  is_mainnet: number;
  created_at: number;
  updated_at: number;
}

const VIEW_COLUMNS = [
  'w.id',
  'w.user_id',
  'w.network_id',
  'w.name',
  'w.description',
  'w.address',
  'n.is_mainnet',
  'w.created_at',
  'w.updated_at',
] as const;

function views(db: Executor) {
  return db.selectFrom('wallets as w').innerJoin('networks as n', 'n.id', 'w.network_id').select(VIEW_COLUMNS);
}

/**
 * The wallet guard of every `{wallet}` route runs it: compiled once (src/db/prepared.ts) and, on
 * SQLite, kept until the wallets or networks table is written (src/db/read-cache.ts).
 */
const walletForUser = prepare(
  (db: Executor, userId: number, walletId: number) => views(db).where('w.id', '=', walletId).where('w.user_id', '=', userId),
  {
    cache: { tables: ['wallets', 'networks'] },
  },
);

export function findWalletForUser(db: Executor, userId: number, walletId: number): Promise<WalletView | undefined> {
  return walletForUser.executeTakeFirst(db, userId, walletId);
}

export function findWalletView(db: Executor, walletId: number): Promise<WalletView | undefined> {
  return walletById.executeTakeFirst(db, walletId);
}

const walletById = prepare((db: Executor, walletId: number) => views(db).where('w.id', '=', walletId));

export function listWalletsForUser(db: Executor, userId: number): Promise<WalletView[]> {
  return views(db).where('w.user_id', '=', userId).orderBy('w.id', 'asc').execute();
}

/**
 * Every transfer's signature reads it: compiled once and kept by the read cache until the
 * wallets table is written (a key rotation re-encrypts in place and is seen at once). What is
 * kept is the ciphertext only, as stored; the key is decrypted for each signature and not kept.
 */
const walletSecrets = prepare(
  (db: Executor, walletId: number) =>
    db.selectFrom('wallets').select(['id', 'address', 'private_key_enc', 'mnemonic_enc']).where('id', '=', walletId),
  { cache: { tables: ['wallets'] } },
);

export async function findWalletSecrets(db: Executor, walletId: number) {
  const row = await walletSecrets.executeTakeFirst(db, walletId);
  if (!row) throw new Error(`wallet ${walletId} not found`);
  return row;
}

/** Where a wallet's encrypted value lives (its AES-GCM associated data, src/lib/crypto.ts). */
export function walletPlace(id: number, column: 'private_key_enc' | 'mnemonic_enc'): SecretPlace {
  return { table: 'wallets', column, id };
}

/**
 * Inserts a wallet; its secrets are encrypted by `seal` once the row has its id (each value is
 * bound to its row) and written in the same transaction as the insert (`db` must be one).
 */
export async function insertWallet(
  db: Executor,
  w: { user_id: number; network_id: number; name: string; description: string; address: string },
  seal: (id: number) => { private_key_enc: string; mnemonic_enc: string },
  nowMs: number,
): Promise<number> {
  const row = await db
    .insertInto('wallets')
    .values({ ...w, private_key_enc: '', mnemonic_enc: '', next_sub_index: 1, created_at: nowMs, updated_at: nowMs })
    .returning('id')
    .executeTakeFirstOrThrow();
  await db.updateTable('wallets').set(seal(row.id)).where('id', '=', row.id).execute();
  return row.id;
}

/** Applies the patch and returns the wallet's row as it left it (one statement: a caller holds the row's lock only while it runs and commits). */
export function updateWallet(
  db: Executor,
  walletId: number,
  patch: { name?: string; description?: string },
  nowMs: number,
): Promise<Omit<WalletView, 'is_mainnet'> | undefined> {
  return walletUpdate.executeTakeFirst(db, { id: walletId, ...patch, updated_at: nowMs });
}

const walletUpdate = prepareRow((db: Executor, { id, ...set }: { id: number; name?: string; description?: string; updated_at: number }) =>
  db
    .updateTable('wallets')
    .set(set)
    .where('id', '=', id)
    .returning(['id', 'user_id', 'network_id', 'name', 'description', 'address', 'created_at', 'updated_at']),
);

/**
 * The update of `updateWallet` as a statement for `recordEventWithWrite`, which writes only if
 * every field the patch leaves alone still holds the value the caller read (`seen`): then the
 * row it writes is `seen` with the patch and `updated_at`, known before the write, and so is the
 * event's payload. Returns no row when the wallet changed meanwhile (the caller falls back to
 * `updateWallet` in a transaction, building the event from the row it returns).
 */
export function guardedWalletUpdate(
  walletId: number,
  patch: { name?: string; description?: string },
  seen: { name: string; description: string },
  nowMs: number,
): RawBuilder<Omit<WalletView, 'is_mainnet'>> {
  const set = [sql`updated_at = ${nowMs}`];
  const where = [sql`id = ${walletId}`];
  for (const field of ['name', 'description'] as const) {
    const value = patch[field];
    if (value !== undefined) set.push(sql`${sql.ref(field)} = ${value}`);
    else where.push(sql`${sql.ref(field)} = ${seen[field]}`);
  }
  return sql`update wallets set ${sql.join(set)} where ${sql.join(where, sql` and `)}
    returning id, user_id, network_id, name, description, address, created_at, updated_at`;
}

/**
 * Run for the wallets of every block the watcher records (and most writes to a wallet): compiled
 * once, one statement for both `lockWallet` and `lockWalletOfUser`.
 */
const lockWalletQuery = prepare((db, walletId: number) =>
  dialectOf(db).forUpdate(db.selectFrom('wallets').select('user_id').where('id', '=', walletId)),
);

/**
 * The wallet lock: serialises read-modify-writes on one wallet (its nonce, its token list, its
 * webhook count, its sub-wallet index) inside `trx`. A row lock on PostgreSQL; on SQLite the
 * IMMEDIATE transaction already holds the database's write lock, so this is a no-op read.
 * Returns false when the wallet does not exist.
 */
export async function lockWallet(trx: Executor, walletId: number): Promise<boolean> {
  return (await lockWalletOfUser(trx, walletId)) !== undefined;
}

/** `lockWallet` that returns the wallet's user (undefined when the wallet does not exist). */
export async function lockWalletOfUser(trx: Executor, walletId: number): Promise<number | undefined> {
  return (await lockWalletQuery.executeTakeFirst(trx, walletId))?.user_id;
}
